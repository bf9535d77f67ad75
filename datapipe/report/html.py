"""``datapipe report``: one self-contained HTML file (plots embedded) about a finished build.

Sections: the mixture (planned vs. available tokens), the removal funnel per source, score distributions with
their cut-offs, length distributions, duplicate component sizes, evaluation items found in the data and PII
replaced, a sample of kept and removed documents per reason (text shortened and escaped), and the training runs on
the build with their held-out evaluation (``datapipe eval``). Nothing to serve: open the file.

A table of contents heads it, and its tables, plots and samples link to the matching views of ``datapipe browse``
(the documents a reason removed, a stage's kept documents, a sample's own page) at ``browse_url``: the address
``datapipe browse OUT`` listens on by default, so the links work while it runs.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from urllib.parse import urlencode

from datapipe import __version__
from datapipe.report import BROWSE_PORT, plots
from datapipe.report.collect import StageView, crawl_line, mixture_chains, token_plan
from datapipe.report.runs import find_runs
from datapipe.store.manifest import Manifest

BROWSE_URL = f"http://127.0.0.1:{BROWSE_PORT}"
SECTIONS = (
    "mixture",
    "funnel",
    "languages",
    "page_types",
    "scores",
    "lengths",
    "duplicates",
    "contamination",
    "samples",
    "runs",
)
TOP_ITEMS = 50  # evaluation items listed per decon stage (stage.json keeps up to 1,000)
_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0; } td, th { padding: .2em .6em; border-bottom: 1px solid #eee; }
td.n { text-align: right; font-variant-numeric: tabular-nums; } .warn { color: #b00; }
img.plot { display: block; margin: .6em 0; max-width: 100%; }
pre.doc { white-space: pre-wrap; background: #f7f7f7; padding: .5em; font-size: .85em; max-height: 12em; overflow: auto; }
"""
# After load, count the plots the browser decoded: tests (and curious readers) see it as body[data-plots-rendered].
_SCRIPT = """
window.addEventListener('load', () => {
  const imgs = [...document.querySelectorAll('img.plot')];
  document.body.dataset.plotsRendered = imgs.filter(i => i.complete && i.naturalWidth > 0).length;
  document.body.dataset.plots = imgs.length;
});
"""


def _img(b64: str, alt: str, href: str | None = None) -> str:
    img = f'<img class="plot" alt="{html.escape(alt)}" src="data:image/png;base64,{b64}">'
    return (
        f'<a class="view" href="{html.escape(href)}" title="open in datapipe browse">{img}</a>'
        if href
        else img
    )


def _view(base: str, path: str, **params: object) -> str:
    """A browser view's URL (``/docs`` filtered by ``params``, ``/doc`` of a document, ...)."""
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return f"{base.rstrip('/')}{path}" + (f"?{query}" if query else "")


def _link(href: str, text: str) -> str:
    return f'<a class="view" href="{html.escape(href)}">{html.escape(text)}</a>'


def _cutoff(record: StageView, classifier: str) -> float | None:
    select = record.doc.get("config", {}).get("select") or {}
    if select.get("classifier") != classifier:
        return None
    if "quality" in record.doc and "cutoff" in record.doc["quality"]:
        return float(record.doc["quality"]["cutoff"][0])
    return select.get("threshold")


def _mixture(manifest: Manifest, train_tokens: int | None) -> str:
    rows = token_plan(manifest, train_tokens)
    head = "<tr><th>component</th><th>weight</th><th>share</th><th>tokens</th>"
    head += "<th>planned</th><th>epochs</th></tr>" if train_tokens else "</tr>"
    body = []
    for r in rows:
        cells = f"<td>{html.escape(r['name'])}</td><td class=n>{r['weight']:g}</td><td class=n>{r['share']:.2%}</td>"
        cells += f"<td class=n>{r['tokens']:,}</td>"
        if train_tokens:
            cls = ' class="n warn"' if r["warning"] else " class=n"
            cells += f"<td class=n>{r['planned_tokens']:,}</td><td{cls}>{r['epochs']:.2f}</td>"
        body.append(f"<tr>{cells}</tr>")
    note = (
        f"<p>At {train_tokens:,} training tokens; red: a component repeated more than 4 times.</p>"
        if train_tokens
        else "<p>Give <code>--train-tokens N</code> to see planned tokens and epochs.</p>"
    )
    return f"<table>{head}{''.join(body)}</table>{note}" + _img(
        plots.planned_vs_available(rows, train_tokens), "planned vs available tokens"
    )


def _funnel(chains: dict[str, list[StageView]], base: str) -> str:
    out = []
    for source, chain in chains.items():
        rows = []
        for step, r in enumerate(chain):
            removed = ", ".join(
                _link(_view(base, "/docs", source=source, step=step, outcome="removed", reason=k), k)
                + f" {v}"
                for k, v in sorted(r.counts["removed"].items())
            )
            rows.append(
                f"<tr><td>{r.stage}</td><td class=n>{r.counts['docs_in']:,}</td><td class=n>{r.counts['docs_kept']:,}</td>"
                f"<td>{removed or '-'}</td>"
                f"<td>{html.escape(', '.join(f'{k} {v}' for k, v in sorted(r.counts['skipped'].items())) or '-')}</td></tr>"
            )
        crawled = "".join(
            f"<p>{html.escape(crawl_line(source, r.doc['crawl']))}</p>" for r in chain if "crawl" in r.doc
        )
        out.append(
            f"<h3>{html.escape(source)}</h3>{crawled}<table><tr><th>stage</th><th>in</th><th>kept</th><th>removed by reason</th>"
            f"<th>skipped (not documents)</th></tr>{''.join(rows)}</table>"
            + _img(plots.funnel(source, chain), f"{source} funnel", _view(base, "/") + f"#source-{source}")
        )
    return "".join(out)


def _page_types(chains: dict[str, list[StageView]], base: str) -> str:
    """Per source extracted by datapipe's learned extractor: the pages of each type it told, and those removed for
    their type (``extract: {page_types: ...}``), each linked to the browser's view of them."""
    out = []
    for source, chain in chains.items():
        for r in chain:
            counters = r.counts.get("counters", {})
            told = {k.rsplit("/", 1)[1]: n for k, n in counters.items() if k.startswith("extract/page_type/")}
            if not told:
                continue
            removed = r.counts.get("removed", {}).get("extract/page_type", 0)
            rows = "".join(
                f"<tr><td>{_link(_view(base, '/docs', source=source, page_type=t), t)}</td><td class=n>{n:,}</td>"
                f"<td class=n>{n / sum(told.values()):.1%}</td></tr>"
                for t, n in sorted(told.items(), key=lambda kv: -kv[1])
            )
            note = f"; {removed:,} removed for their type" if removed else ""
            out.append(
                f"<h3>{html.escape(source)}</h3><p>{sum(told.values()):,} pages told{note}</p>"
                f"<table><tr><th>page type</th><th>pages</th><th>share</th></tr>{rows}</table>"
            )
    return "".join(out) or "<p>No source was extracted by datapipe's learned extractor.</p>"


def _languages(manifest: Manifest, chains: dict[str, list[StageView]], base: str) -> str:
    """Per source judged by language: what each language's filter kept, and its tokens and share when the source
    is split into per-language components."""
    split = manifest.by_language
    out = []
    for source, chain in chains.items():
        counted: dict[str, dict[str, int]] = {}
        for r in chain:
            for key, n in r.counts.get("counters", {}).items():
                parts = key.split("/")
                if len(parts) == 3 and parts[0] == "language":
                    counted.setdefault(parts[1], {}).setdefault(parts[2], 0)
                    counted[parts[1]][parts[2]] += n
        record = split.get(source, {})
        languages = sorted(set(counted) | set(record.get("tokens", {})))
        if not languages:
            continue
        rows = []
        for lang in languages:
            c = counted.get(lang, {})
            judged = c.get("kept", 0) + c.get("removed", 0)
            share = record.get("shares", {}).get(lang)
            rows.append(
                f"<tr><td>{_link(_view(base, '/docs', source=source, language=lang), lang)}</td>"
                f"<td class=n>{judged:,}</td><td class=n>{c.get('kept', 0):,}</td>"
                f"<td class=n>{record.get('tokens', {}).get(lang, 0):,}</td>"
                f"<td class=n>{'-' if share is None else f'{share:.2%}'}</td></tr>"
            )
        how = record.get("weights")
        note = (
            f" (weights: {html.escape(str(how))}, by {html.escape(str(record.get('by', 'tokens')))})"
            if how
            else ""
        )
        out.append(
            f"<h3>{html.escape(source)}{note}</h3><table><tr><th>language</th><th>judged by its filters</th>"
            f"<th>kept</th><th>tokens</th><th>share of the source</th></tr>{''.join(rows)}</table>"
            + _language_funnel(source, chain, base)
        )
    return "".join(out) or "<p>No source is judged or split by language in this build.</p>"


def _language_funnel(source: str, chain: list[StageView], base: str) -> str:
    """Per language, each stage's documents in, kept and removed by reason (``stage.json``'s ``by_language``;
    language ID's removals under the language it found), each reason a link to the browser's view of them."""
    rows = []
    for step, r in enumerate(chain):
        for lang, c in sorted(r.counts.get("by_language", {}).items()):
            removed = ", ".join(
                _link(
                    _view(
                        base, "/docs", source=source, step=step, outcome="removed", reason=k, language=lang
                    ),
                    k,
                )
                + f" {v:,}"
                for k, v in sorted(c["removed"].items(), key=lambda kv: -kv[1])
            )
            rows.append(
                f"<tr><td>{html.escape(lang)}</td><td>{html.escape(r.stage)}</td><td class=n>{c['in']:,}</td>"
                f"<td class=n>{c['kept']:,}</td><td>{removed or '-'}</td></tr>"
            )
    if not rows:
        return ""
    return (
        "<table><tr><th>language</th><th>stage</th><th>in</th><th>kept</th><th>removed by reason</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _scores(chains: dict[str, list[StageView]], base: str) -> str:
    out = []
    for source, chain in chains.items():
        for step, r in enumerate(chain):
            for name, hist in sorted(r.counts.get("hists", {}).items()):
                if hist["kind"] != "unit":
                    continue
                classifier = name.split("/", 1)[1] if name.startswith("quality/") else None
                cut = _cutoff(r, classifier) if classifier else None
                if name == "langid/score":
                    cut = (r.doc.get("config", {}).get("langid") or {}).get("min_score")
                title = f"{source} / {r.stage}: {name}" + (f" (cut-off {cut:.4g})" if cut is not None else "")
                view = _view(base, "/docs", source=source, step=step)
                out.append(_img(plots.histogram(title, hist, "score", cut), title, view))
    return "".join(out) or "<p>No scores in this build (no language ID or quality stage).</p>"


def _lengths(chains: dict[str, list[StageView]], base: str) -> str:
    """Per source: characters of the documents that reach tokenization, and their tokens."""
    out = []
    for source, chain in chains.items():
        step = len(chain) - 2 if len(chain) > 1 else len(chain) - 1
        text_stage = chain[step]
        hist = text_stage.counts.get("hists", {}).get("kept_chars")
        if hist:
            title = f"{source}: characters per kept document (after {text_stage.stage})"
            view = _view(base, "/docs", source=source, step=step, outcome="kept")
            out.append(_img(plots.histogram(title, hist, "characters"), title, view))
        hist = chain[-1].counts.get("hists", {}).get("tokens_per_doc")
        if hist:
            title = f"{source}: tokens per document"
            out.append(_img(plots.histogram(title, hist, "tokens"), title))
    return "".join(out) or "<p>No length statistics (a build older than this datapipe version).</p>"


def _duplicates(chains: dict[str, list[StageView]], base: str) -> str:
    out = []
    for source, chain in chains.items():
        for step, r in enumerate(chain):
            dedup = r.doc.get("dedup") or {}
            hist = dedup.get("component_size_histogram")
            if hist:
                title = f"{source} / {r.dirname}: duplicate component sizes ({dedup.get('components', 0)} components)"
                view = _view(base, "/docs", source=source, step=step, outcome="removed")
                out.append(_img(plots.counts_bar(title, hist, "component size"), title, view))
    return "".join(out) or "<p>No deduplication in this build.</p>"


def _contamination(chains: dict[str, list[StageView]]) -> str:
    out = []
    for source, chain in chains.items():
        for r in chain:
            decon = r.doc.get("decon")
            if decon is not None:
                index = decon.get("index", {})
                hits = decon.get("items_hit", {})
                rows = "".join(
                    f"<tr><td>{html.escape(item)}</td><td class=n>{n:,}</td></tr>"
                    for item, n in list(hits.items())[:TOP_ITEMS]
                )
                out.append(
                    f"<h3>{html.escape(source)} / {r.dirname}</h3><p>index: {index.get('items', 0):,} items "
                    f"({index.get('items_too_short', 0):,} too short), {index.get('distinct_ngrams', 0):,} distinct "
                    f"{index.get('ngram', '?')}-grams, {html.escape(str(index.get('mode', '?')))}; "
                    f"{decon.get('distinct_items_hit', 0):,} items hit "
                    f"{r.counts.get('counters', {}).get('decon/documents_hit', 0):,} documents</p>"
                    + (f"<table><tr><th>item</th><th>documents</th></tr>{rows}</table>" if rows else "")
                )
            pii = {k: v for k, v in r.counts.get("counters", {}).items() if k.startswith("pii/")}
            if r.stage == "pii":
                rows = "".join(
                    f"<tr><td>{html.escape(k)}</td><td class=n>{v:,}</td></tr>" for k, v in pii.items()
                )
                out.append(
                    f"<h3>{html.escape(source)} / {r.dirname}: PII replaced</h3>"
                    + (f"<table>{rows}</table>" if rows else "<p>none found</p>")
                )
    return "".join(out) or "<p>No decontamination or PII scrubbing in this build.</p>"


def _samples(chains: dict[str, list[StageView]], chars: int, base: str) -> str:
    out = []
    for source, chain in chains.items():
        for r in chain:
            for outcome, docs in sorted(r.counts.get("samples", {}).items()):
                if outcome == "kept" and r is not chain[-1]:
                    continue  # kept documents: once per source, at its last stage
                items = "".join(
                    f"<p><b>{_link(_view(base, '/doc', source=source, ref=d['ref']), d['id']) if d.get('ref') else html.escape(d['id'])}</b>"
                    f" {html.escape(d.get('url', ''))} ({d['chars']:,} chars)</p>"
                    f"<pre class=doc>{html.escape(d['text'][:chars])}</pre>"
                    for d in docs
                )
                out.append(f"<h3>{html.escape(source)} / {r.stage}: {html.escape(outcome)}</h3>{items}")
    return "".join(out)


def _runs(output: str, extra: Sequence[str], base: str) -> str:
    """Training runs on this build: last logged loss, and each one's latest ``datapipe eval`` per component."""
    from datapipe.train.metrics import read_evals, read_metrics

    runs = find_runs(output, extra)
    if not runs:
        return f"<p>No training run under {html.escape(output)}/runs (give others with --run DIR).</p>"
    out = []
    for path in runs:
        records = [r for r in read_metrics(f"{path}/metrics.jsonl") if "loss" in r]
        last = (
            f"step {records[-1]['step']}, training loss {records[-1]['loss']:.4f}" if records else "no step"
        )
        out.append(f"<h3>{html.escape(path)}</h3><p>{last}; {_link(_view(base, '/runs'), 'loss curve')}</p>")
        evals = read_evals(path)
        if not evals:
            out.append(f"<p>Not evaluated: <code>datapipe eval {html.escape(path)}</code></p>")
            continue
        e = evals[-1]
        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td class='n'>{c['sequences']:,}</td><td class='n'>{c['tokens']:,}</td>"
            f"<td class='n'>{c.get('loss', float('nan')):.4f}</td><td class='n'>{c.get('perplexity', float('nan')):.2f}</td>"
            f"<td class='n'>{c.get('bits_per_byte', float('nan')):.4f}</td></tr>"
            for name, c in e["components"].items()
        )
        out.append(
            f"<p>Held-out rows at step {e['step']} (<code>datapipe eval</code>; rows training never saw):</p>"
            "<table class='eval'><tr><th>component</th><th>sequences</th><th>target tokens</th><th>loss</th>"
            f"<th>perplexity</th><th>bits/byte</th></tr>{rows}</table>"
        )
    return "".join(out)


def render_report(
    output: str,
    train_tokens: int | None = None,
    sample_chars: int = 400,
    browse_url: str = BROWSE_URL,
    runs: Sequence[str] = (),
) -> str:
    manifest, chains = mixture_chains(output)
    train_tokens = train_tokens or manifest.train_tokens
    body = {
        "mixture": _mixture(manifest, train_tokens),
        "funnel": _funnel(chains, browse_url),
        "languages": _languages(manifest, chains, browse_url),
        "page_types": _page_types(chains, browse_url),
        "scores": _scores(chains, browse_url),
        "lengths": _lengths(chains, browse_url),
        "duplicates": _duplicates(chains, browse_url),
        "contamination": _contamination(chains),
        "samples": _samples(chains, sample_chars, browse_url),
        "runs": _runs(output, runs, browse_url),
    }
    titles = {
        "mixture": "Mixture: planned vs. available tokens",
        "funnel": "Removal funnel per source",
        "languages": "Languages: kept per language, tokens and shares",
        "page_types": "Page types (datapipe's learned extractor)",
        "scores": "Score distributions (cut-offs dashed)",
        "lengths": "Document lengths",
        "duplicates": "Duplicate component sizes",
        "contamination": "Evaluation items found, and PII replaced",
        "samples": "Sample documents: kept, and removed by reason",
        "runs": "Training runs: held-out evaluation",
    }
    parts = [f'<section id="{k}"><h2>{titles[k]}</h2>{body[k]}</section>' for k in SECTIONS]
    toc = (
        '<nav id="toc"><h2>Contents</h2><ol>'
        + "".join(f'<li><a href="#{k}">{titles[k]}</a></li>' for k in SECTIONS)
        + f"</ol><p>Tables, plots and samples open the matching view of {_link(_view(browse_url, '/'), 'datapipe browse')}"
        f" (run <code>datapipe browse {html.escape(output)}</code>).</p></nav>"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>datapipe report: {html.escape(manifest.name)}"
        f"</title><style>{_STYLE}</style><script>{_SCRIPT}</script></head><body>"
        f"<h1>datapipe report: {html.escape(manifest.name)}</h1>"
        f"<p>{html.escape(output)} &middot; datapipe {__version__} &middot; {len(manifest.components)} components</p>"
        + toc
        + "".join(parts)
        + "</body></html>"
    )
