"""Browse: time to the first page of filtered views of ``datapipe browse`` over a build of 10^6 documents.

The build is the scale benchmark's (``scale_corpus.py``: real Debian documentation paragraphs recombined into
pages with planted exact and near copies; ``e2e.py``'s recipe on the DirectRunner with 2 workers: extract +
langid, refinedweb filters, exact + MinHash dedup, the bundled quality classifier, GPT-2). Then ``datapipe browse``
is started on a free port as a user starts it; its index is written first (timed: ``index_s``), and each view is
asked for once over HTTP, cold, as a person clicking would (the wall time of the request, rendering included):

1. documents removed by the most common filter rule, at the filter stage;
2. documents removed as MinHash near-duplicates;
3. kept English documents with a quality score in [0.5, 0.6], at the quality stage;
4. kept documents of 2,000-3,000 characters, any stage;
5. removed documents of any stage whose text contains a word (a full-text search);

and a removed duplicate's own page (its decisions, cluster and the lines that differ from its kept copy).

    .venv/bin/python benchmarks/browse.py [--pages 1000000] [--work DIR] [--keep]

Needs 2 cores, 8 GiB and 16 GiB of free disk in ``--work`` (the crawl, the build and the index); about 40 minutes
at 10^6 pages on 2 cores, most of it the build. Last line: ``bench: browse docs=N worst_first_page_s=X
index_s=Y doc_page_s=Z`` (target ``worst_first_page_s < 1``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode
from urllib.request import urlopen

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]

import e2e  # noqa: E402
import scale  # noqa: E402
import scale_corpus  # noqa: E402

from datapipe import stop_browser as stop  # noqa: E402

TARGET_S = 1.0


def _start(out: Path, index: Path) -> tuple[subprocess.Popen, str, float]:
    """``datapipe browse`` on a free port; its URL once it listens, and the seconds until then (the index)."""
    from datapipe import spawn_browser as spawn

    t0 = time.perf_counter()
    proc, url = spawn(str(out), str(index), cwd=str(REPO), echo=lambda line: print(f"  {line}", flush=True))
    return proc, url, time.perf_counter() - t0


def _timed(url: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    with urlopen(url, timeout=600) as r:
        body = r.read().decode()
    return time.perf_counter() - t0, body


def _steps(out: Path) -> dict[str, int]:
    """The web source's stage -> its place in the chain."""
    from datapipe import mixture_chains

    _, chains = mixture_chains(str(out))
    return {rec.stage: step for step, rec in enumerate(chains["web"])}


def _top_filter_reason(out: Path) -> str:
    from datapipe import mixture_chains

    _, chains = mixture_chains(str(out))
    (rec,) = [r for r in chains["web"] if r.stage == "filter"]
    return max(rec.counts["removed"].items(), key=lambda kv: kv[1])[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=1_000_000)
    ap.add_argument("--work", default="/tmp/datapipe-browse-bench")
    ap.add_argument("--keep", action="store_true", help="keep the crawl and the build (a rerun reuses them)")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    scale.require_machine("browse", work, 16 if args.pages >= 1_000_000 else 2)

    corpus, out = work / f"corpus-{args.pages}", work / f"out-browse-{args.pages}"
    if not (out / "mixture.json").exists():
        model = e2e.train_classifier(work)
        if not (corpus / "truth.jsonl").exists():
            t0 = time.perf_counter()
            meta = scale_corpus.build(corpus, args.pages, workers=scale.WORKERS)
            print(
                f"corpus: {meta['pages']:,} pages, {meta['shards']} shards ({time.perf_counter() - t0:.0f} s)"
            )
        run = e2e.run_datapipe(corpus, work, f"browse-{args.pages}", model, 0.5, 5.0, engine="beam")
        print(f"build: {run['wall']:.0f} s, largest process {run['maxrss'] / (1 << 20):,.0f} MiB", flush=True)
    index = work / f"index-{args.pages}"
    shutil.rmtree(index, ignore_errors=True)
    proc, url, index_s = _start(out, index)
    try:
        steps = _steps(out)
        docs = json.loads((out / "experiment.json").read_text())["components"]["web"]["stages"][0]["counts"]
        views = {
            f"removed by {_top_filter_reason(out)}": {
                "step": steps["filter"],
                "outcome": "removed",
                "reason": _top_filter_reason(out),
            },
            "removed as MinHash near-duplicates": {"outcome": "removed", "reason": "dedup/minhash"},
            "kept, English, quality 0.5-0.6": {
                "step": steps["quality"],
                "outcome": "kept",
                "language": "en",
                "quality_min": 0.5,
                "quality_max": 0.6,
            },
            "kept, 2,000-3,000 characters": {"outcome": "kept", "chars_min": 2000, "chars_max": 3000},
            "removed, text contains 'kernel'": {"outcome": "removed", "text": "kernel"},
        }
        worst = 0.0
        first_removed = None
        print(f"{'view':<44} {'first page s':>12} {'rows':>5} {'matching':>10}")
        for name, params in views.items():
            seconds, body = _timed(f"{url}docs?{urlencode(params)}")
            rows = len(re.findall(r'class="doc"', body))
            count = re.search(r'<p id="summary">([\d,]+) documents', body)
            print(
                f"{name:<44} {seconds:>12.3f} {rows:>5} {count.group(1) if count else 'search':>10}",
                flush=True,
            )
            if rows == 0:
                raise SystemExit(
                    f"browse: the view {name!r} is empty: the benchmark's build is not what it expects"
                )
            worst = max(worst, seconds)
            if params.get("reason") == "dedup/minhash":
                first_removed = re.search(r'href="(/doc\?[^"]+)"', body).group(1).replace("&amp;", "&")
        assert first_removed is not None
        doc_s, body = _timed(url.rstrip("/") + first_removed)
        assert 'id="kept-copy"' in body, "a MinHash duplicate's page shows no kept copy"
        print(f"{'a removed duplicate (cluster, differing lines)':<44} {doc_s:>12.3f}")
    finally:
        stop(proc)
    if not args.keep:
        shutil.rmtree(corpus, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    print(
        f"index: {index_s:.0f} s for the documents of {len(steps) - 1} stages; target first page < {TARGET_S:g} s"
    )
    print(
        f"bench: browse docs={docs['docs_in']} worst_first_page_s={worst:.3f} index_s={index_s:.0f} doc_page_s={doc_s:.3f}"
    )


if __name__ == "__main__":
    main()
