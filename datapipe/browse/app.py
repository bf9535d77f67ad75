"""The browser's web app: Starlette routes, Jinja templates, DuckDB queries over the build's index.

Pages: ``/`` per-source funnels (each reason links to its documents); ``/docs`` documents of any stage filtered by
source, stage, outcome, reason, language, quality score, measured value, length and text; ``/doc`` one document at
every stage it entered (each decision with its value and threshold, what a later stage changed in its text, its
duplicate cluster with the kept copy and the lines that differ); ``/cache`` token cache rows decoded to text;
``/runs`` training runs and their loss curves. Server-side pages with plain links and forms: every view is a URL
that can be shared or scripted, and nothing needs JavaScript. A view the URL cannot name (a number that is none,
an unknown parameter, a source or reason the build lacks) is answered with status 400 and one line saying which,
never with another view.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from datapipe.browse.index import build_index
from datapipe.browse.queries import PAGE, Filters, Queries, changed_lines, positional
from datapipe.browse.runs import loss_curve
from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.report.collect import StageView, crawl_lines, manifest_url_of, mixture_chains
from datapipe.report.runs import find_runs
from datapipe.store.manifest import load_manifest, open_component

TEMPLATES = Path(__file__).with_name("templates")
CACHE_ROWS = 10  # cache rows per page


def _funnels(chains: dict[str, list[StageView]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, object]]] = {}
    for source, chain in chains.items():
        out[source] = [
            {
                "step": step,
                "stage": rec.stage,
                "docs_in": rec.counts.get("docs_in", 0),
                "docs_kept": rec.counts.get("docs_kept", 0),
                "removed": sorted(rec.counts.get("removed", {}).items()),
            }
            for step, rec in enumerate(chain)
            if rec.stage != "tokenize"
        ]
    return out


def _names(row: dict[str, Any]) -> list[str]:
    """What a removal's ``related`` may call a kept document: its id, its ref, or its place in the stage's input."""
    return [row["id"], row["ref"], f"shard {row['shard']} document {row['index']}"]


def _cluster(
    q: Queries, source: str, rows: list[dict[str, Any]], against: bool = False
) -> dict[str, object] | None:
    """The duplicate cluster a document is in, from the dedup stage's rows: as a removed copy (its ``related``
    names the kept copy: another document, even when a copy kept its original's id) or as the kept copy others
    were removed for. A kept copy this build does not hold (an earlier build's, ``dedup.against``) is named, not
    linked."""
    for r in rows:
        if r["stage"] != "dedup":
            continue
        if r["outcome"] == "removed" and r["related"]:
            found = q.kept_copy(source, r["step"], r["related"], r["ref"])
            if not found:
                place = positional(r["related"])
                earlier = against or (place is not None and place[0] < 0)
                removed = q.removed_for(source, r["step"], [r["related"]])
                return {
                    "kept": None,
                    "kept_name": r["related"],
                    "where": (
                        "a document of an earlier build, dedup.against: not browsable here"
                        if earlier
                        else "not among the documents this stage kept"
                    ),
                    "removed": removed,
                    "size": len(removed) + 1,
                    "lines": None,
                    "evidence": r["evidence"],
                    "self_ref": r["ref"],
                }
            kept = found[0]
            removed = q.removed_for(source, r["step"], _names(kept))
            lines = changed_lines(kept["text"], r["text"]) if kept["text"] is not None and r["text"] else None
            return {
                "kept": kept,
                "same_id": kept["id"] == r["id"],
                "also": len(found) - 1,  # other kept documents of the same id
                "removed": removed,
                "size": len(removed) + 1,
                "lines": lines,
                "evidence": r["evidence"],
                "self_ref": r["ref"],
            }
        if r["outcome"] == "kept":
            removed = q.removed_for(source, r["step"], _names(r))
            if removed:
                return {
                    "kept": {**r, "text": None},
                    "this_kept": True,
                    "removed": removed,
                    "size": len(removed) + 1,
                    "lines": None,
                    "self_ref": r["ref"],
                }
    return None


def _changes(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What each stage changed in the text of a document it kept (paragraph dedup, PII, ...)."""
    out = []
    for before, after in zip(rows, rows[1:], strict=False):
        if after["outcome"] != "kept" or before["text"] is None or after["text"] is None:
            continue
        if before["text"] != after["text"]:
            out.append(
                {
                    "stage": f"{after['step']}. {after['stage']}",
                    "lines": changed_lines(before["text"], after["text"]),
                }
            )
    return out


def _whole(raw: str, name: str) -> tuple[int, str | None]:
    """A page or row number from a URL (empty: 0), and the line that says why it is none."""
    raw = raw.strip()
    if not raw:
        return 0, None
    try:
        value = int(raw)
    except ValueError:
        return 0, f"{name}: expected a whole number, got {raw!r}"
    return (value, None) if value >= 0 else (0, f"{name}: expected 0 or more, got {raw!r}")


def _error_line(message: str) -> str:
    from html import escape

    return f'<p class="error" id="error">{escape(message)}</p>'


def create_app(
    output: str, index_dir: str, run_dirs: Sequence[str] = (), say: Callable[[str], None] = print
) -> object:
    """The app over a finished build (its index written first, when missing)."""
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Route
    from starlette.templating import Jinja2Templates

    output = output.rstrip("/")
    manifest, chains = mixture_chains(output)
    stages = build_index(chains, index_dir, say)
    q = Queries(stages)
    templates = Jinja2Templates(directory=str(TEMPLATES))
    funnels = _funnels(chains)
    reasons = sorted({r for rows in funnels.values() for s in rows for r, _ in s["removed"]})
    languages = q.languages()
    page_types = q.page_types()
    base = {"name": manifest.name, "output": output}
    # sources deduplicated against earlier builds: a kept copy they name may be one of those builds' documents
    against = {
        source: any(r.stage == "dedup" and r.doc.get("config", {}).get("against") for r in chain)
        for source, chain in chains.items()
    }

    def page(request: Any, template: str, status: int = 200, **ctx: Any) -> Any:
        return templates.TemplateResponse(request, template, {**base, **ctx}, status_code=status)

    # per source read from a Common Crawl dump: files planned, fetched, retried, resumed, missing (named)
    crawled = {line.split(":", 1)[0].removeprefix("crawl "): line for line in crawl_lines(chains)}

    def home(request: object) -> object:
        return page(request, "home.html", funnels=funnels, crawled=crawled)

    sources = sorted(chains)
    choices = {"source": sources, "reason": reasons, "language": languages, "page_type": page_types}

    def docs(request: Any) -> Any:
        params = request.query_params
        f, problems = Filters.parse(params, choices, also=("page",))
        number, problem = _whole(params.get("page", ""), "page")
        problems += [problem] if problem else []
        query = f.as_query()
        ctx: dict[str, Any] = {
            "f": f,
            "page": number,
            "sources": sources,
            "reasons": reasons,
            "languages": languages,
            "page_types": page_types,
            "error": "; ".join(problems) if problems else None,
        }
        if problems:  # a view that is not the one asked for would mislead: none, and the line that says why
            return page(
                request,
                "docs.html",
                status=400,
                rows=[],
                more=False,
                count=None,
                seconds=0.0,
                last_page=None,
                **ctx,
            )
        started = time.perf_counter()
        rows, more = q.documents(f, number)
        count = q.count(f)
        seconds = time.perf_counter() - started
        return page(
            request,
            "docs.html",
            rows=rows,
            more=more,
            count=count,
            seconds=seconds,
            first=number * PAGE + 1,
            last_page=(count + PAGE - 1) // PAGE if count else None,
            prev_url="/docs?" + urlencode({**query, "page": number - 1}),
            next_url="/docs?" + urlencode({**query, "page": number + 1}),
            **ctx,
        )

    def doc(request: Any) -> Any:
        source = request.query_params.get("source", "")
        ref = request.query_params.get("ref", "")
        rows = q.document(source, ref)
        if not rows:
            return HTMLResponse(f"no document {ref!r} in source {source!r}", status_code=404)
        last = rows[-1]
        return page(
            request,
            "doc.html",
            source=source,
            ref=ref,
            doc_id=last["id"],
            url=last["url"],
            stages=rows,
            changes=_changes(rows),
            cluster=_cluster(q, source, rows, against=bool(against.get(source))),
            text=last["text"],
            text_stage=(
                f"left {last['step']}. {last['stage']}"
                if last["outcome"] == "kept"
                else f"entered {last['step']}. {last['stage']}, which removed it"
            ),
        )

    manifest_url = manifest_url_of(output)

    def cache(request: Any) -> Any:
        from datapipe.tokenize.decode import decoder_for

        m = load_manifest(manifest_url)
        name = request.query_params.get("component")
        ctx: dict[str, Any] = {"components": m.listing(), "component": None}
        if name:
            if name not in {c.name for c in m.components}:
                return HTMLResponse(f"no component {name!r}", status_code=404)
            tc = open_component(m, name)
            decode = decoder_for(tc, output=os.path.dirname(manifest_url))
            start, problem = _whole(request.query_params.get("row", ""), "row")
            if problem:
                return HTMLResponse(_error_line(problem), status_code=400)
            shown = []
            for i in range(start, min(start + CACHE_ROWS, tc.num_rows)):
                ids = tc.row(i).tolist()
                text = decode(ids) if decode else " ".join(map(str, ids))
                shown.append({"row": i, "tokens": len(ids), "text": text})
            ctx.update(
                component=name,
                rows=shown,
                start=start,
                total=tc.num_rows,
                step=CACHE_ROWS,
                decoded=decode is not None,
            )
        return page(request, "cache.html", **ctx)

    def runs(request: object) -> object:
        found = [loss_curve(path) for path in find_runs(output, run_dirs)]
        return page(request, "runs.html", runs=found)

    app = Starlette(
        routes=[
            Route("/", home),
            Route("/docs", docs),
            Route("/doc", doc),
            Route("/cache", cache),
            Route("/runs", runs),
        ]
    )
    app.state.queries = q
    return app


def listen(host: str, port: int) -> object:
    """A socket listening on ``host:port`` (0: any free port), before any index is built: a port another program
    holds is one line naming it, not a traceback after minutes of indexing."""
    import socket

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError as e:
        sock.close()
        raise DatapipeError(
            f"browse: cannot listen on {host}:{port} ({e.strerror or e}): another program may hold the port; "
            "give another with --port N, or --port 0 for any free one"
        ) from None
    return sock


def serve(app: Any, sock: Any, say: Callable[[str], None] = print) -> None:
    """Serve on a socket from :func:`listen` until Ctrl-C. The socket listens before the address is printed, so a
    client that reads the line can connect at once."""
    import uvicorn

    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    say(f"browse: http://{shown}:{port}/  (Ctrl-C to stop)")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    server.run(sockets=[sock])


def default_index_dir(output: str) -> str:
    """Beside the build, in a folder of its own: removing the build removes its index."""
    return os.path.join(fs.local_path(output), ".browse")
