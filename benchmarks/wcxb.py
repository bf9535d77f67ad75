"""Extraction across the web's page types: datapipe's default extractor, Trafilatura's defaults and resiliparse on
WCXB's development split (1,497 real pages in seven types), in one run, side by side.

Data and folds: :mod:`wcxb_data` (beside this script): ``../shared/data/wcxb-dev/``, split by site into five folds
fixed before anything was tuned (``wcxb_folds.tsv``). Metric (WCXB's): word-level precision, recall and F1 per page
(``\\w+`` of the lower-cased text, multiset overlap with ``main_content``), averaged over pages, overall and per
page type.

Out of fold: datapipe's extractor has learned parts (the block model and the page-type model, package data made by
``classifiers/extractor.py`` from all five folds and the other extraction benchmarks' tuning pages). Here every
page is extracted with the models that script makes from the other four folds only (and the same other pages, none
of them WCXB's; trained at the start of the run, deterministic), so each page's figure is one that no learned part
saw; the shipped models' in-fold figure is printed beside it for scale.
Page-type detection is scored the same way (accuracy out of fold). Hand-written rules carry no fold: which pages
each was found on is in ``docs/web-pipeline.md``.

Speed: every page decoded once; ``--passes`` times over all pages, each method extracts each page in turn in a
rotating order; a method's time on a page is its fastest pass; pages per second is pages over summed time. Every
pass begins with the methods' caches cleared (datapipe's class-name verdicts, Trafilatura's ``lru_cache``s).

Methods: ``datapipe`` (``main_content_text``, the default method of ``extract``), ``trafilatura``
(``trafilatura.extract(html)`` with its defaults, as a user calls it; the figures WCXB publishes for Trafilatura
are printed beside, as published) and ``resiliparse`` (``extract_plain_text(main_content=True)``, as DCLM).

Run: ``.venv/bin/python benchmarks/wcxb.py`` (needs the shared data and 2 cores; LightGBM, for the fold models,
is in datapipe's ``dev`` extra; the article pages are fetched as ``extract_quality.py`` fetches them). Last line:
``bench: wcxb f1=F trafilatura_f1=T worst_type_margin=M speed_vs_trafilatura=S`` (F out of fold; M the smallest
per-type difference, ours minus Trafilatura's). Targets (issue 64): F >= 0.87, M >= 0, S >= 10.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from wcxb_data import FOLDS, TYPES, WcxbPage, load, prf, words  # noqa: E402  (beside this script)

from classifiers.extractor import extra_records, records, train  # noqa: E402
from datapipe import ExtractorModels as Models  # noqa: E402
from datapipe import (  # noqa: E402
    analyze,  # noqa: E402
    decode_html,
    html_to_text,
)
from datapipe import extract_content as content  # noqa: E402

# WCXB's published rows (its README, F1 mean over the development split), quoted as published
PUBLISHED = {
    "rs-trafilatura": (0.859, 0.863, 0.890, (0.932, 0.932, 0.844, 0.808, 0.716, 0.707, 0.641)),
    "MinerU-HTML": (0.827, 0.845, 0.840, (0.928, 0.838, 0.824, 0.794, 0.506, 0.710, 0.619)),
    "Trafilatura": (0.791, 0.852, 0.793, (0.926, 0.888, 0.763, 0.585, 0.553, 0.589, 0.567)),
    "dom-smoothie": (0.762, 0.806, 0.768, (0.908, 0.868, 0.714, 0.530, 0.504, 0.596, 0.502)),
}
PUBLISHED_TYPES = ("article", "documentation", "service", "forum", "collection", "listing", "product")


def trafilatura_defaults(html: str) -> str:
    import trafilatura

    return (trafilatura.extract(html) or "").strip()


@dataclass
class Scores:
    """Per-page (precision, recall, F1) of one method, and its time per page."""

    prf: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def mean(self, pages: list[WcxbPage], k: int = 2) -> float:
        picked = [self.prf[p.id][k] for p in pages]
        return sum(picked) / len(picked) if picked else float("nan")

    def speed(self, pages: list[WcxbPage]) -> float:
        total = sum(self.seconds[p.id] for p in pages)
        return len(pages) / total if total else 0.0


def forget() -> None:
    """Clear what the methods cached from pages already seen."""
    from trafilatura.meta import reset_caches

    content.forget_names()
    reset_caches()


def run(
    pages: list[WcxbPage], methods: dict[str, Callable[[WcxbPage, str], str]], passes: int
) -> dict[str, Scores]:
    scores = {m: Scores() for m in methods}
    names = list(methods)
    htmls = [decode_html(p.raw, None) for p in pages]
    truths = [Counter(words(p.truth)) for p in pages]
    texts: list[dict[str, str]] = [{} for _ in pages]
    best = [dict.fromkeys(names, float("inf")) for _ in pages]
    for _ in range(passes):
        forget()
        gc.collect()
        for k, page in enumerate(pages):
            for name in names[k % len(names) :] + names[: k % len(names)]:
                t0 = time.perf_counter()
                try:
                    text = methods[name](page, htmls[k])
                except Exception as e:  # a method that fails on a page extracts nothing there
                    text = ""
                    if name not in texts[k]:
                        scores[name].failures.append(f"{page.id}: {type(e).__name__}: {e}")
                best[k][name] = min(best[k][name], time.perf_counter() - t0)
                texts[k][name] = text
    for k, page in enumerate(pages):
        for name in names:
            scores[name].prf[page.id] = prf(texts[k][name], truths[k])
            scores[name].seconds[page.id] = best[k][name]
    return scores


def table(pages: list[WcxbPage], scores: dict[str, Scores]) -> None:
    by_type = {t: [p for p in pages if p.page_type == t] for t in TYPES}
    head = f"{'method':<26}{'F1':>7}{'P':>7}{'R':>7}" + "".join(f"{t[:11]:>12}" for t in PUBLISHED_TYPES)
    print(head + f"{'pages/s':>9}")
    for name, s in scores.items():
        row = f"{name:<26}{s.mean(pages):>7.3f}{s.mean(pages, 0):>7.3f}{s.mean(pages, 1):>7.3f}"
        row += "".join(f"{s.mean(by_type[t]):>12.3f}" for t in PUBLISHED_TYPES)
        print(row + f"{s.speed(pages):>9.1f}" + (f"  ({len(s.failures)} failed)" if s.failures else ""))
    for name, (f, p, r, per) in PUBLISHED.items():
        row = f"{name + ' (published)':<26}{f:>7.3f}{p:>7.3f}{r:>7.3f}" + "".join(f"{x:>12.3f}" for x in per)
        print(row)
    print(f"{'pages':<26}{len(pages):>21}" + "".join(f"{len(by_type[t]):>12}" for t in PUBLISHED_TYPES))


def fold_models(pages: list[WcxbPage]) -> dict[int, Models]:
    """For each fold, the extractor's models trained on the other four (``classifiers/extractor.py``)."""
    t0 = time.perf_counter()
    recs = records(pages, progress=False)
    extra = extra_records(progress=False)
    out = {k: train(recs, [f for f in range(FOLDS) if f != k], extra) for k in range(FOLDS)}
    print(
        f"fold models: 5 x (block model, page-type model) trained in {time.perf_counter() - t0:.0f} s "
        f"(each also on the {len(extra)} pages of the other extraction benchmarks the shipped models learn from)"
    )
    return out


def page_type_table(pages: list[WcxbPage], found: dict[str, str]) -> float:
    """Print the page-type confusion (out of fold); return the accuracy."""
    print("\npage types, out of fold (rows: WCXB's label, columns: datapipe's)")
    print(f"{'':<15}" + "".join(f"{t[:11]:>12}" for t in TYPES) + f"{'recall':>9}")
    right = 0
    for t in TYPES:
        mine = [p for p in pages if p.page_type == t]
        row = [sum(found[p.id] == u for p in mine) for u in TYPES]
        right += row[TYPES.index(t)]
        print(
            f"{t:<15}" + "".join(f"{n:>12}" for n in row) + f"{row[TYPES.index(t)] / max(1, len(mine)):>9.3f}"
        )
    accuracy = right / len(pages)
    print(f"accuracy {accuracy:.3f} over {len(pages)} pages")
    return accuracy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passes", type=int, default=2, help="passes over all pages; a page's fastest counts")
    ap.add_argument(
        "--limit", type=int, default=0, help="score only the first N pages (a quick look; no bench line)"
    )
    args = ap.parse_args()
    if (os.cpu_count() or 1) < 2:
        raise SystemExit("wcxb: needs >= 2 cores (one for this process, one for the rest)")
    pages = load()
    if args.limit:
        pages = pages[: args.limit]
    models = fold_models(load() if args.limit else pages)
    found: dict[str, str] = {}

    def out_of_fold(page: WcxbPage, html: str) -> str:
        a = analyze(html, page.url, models=models[page.fold])
        found[page.id] = a.page_type or ""
        return a.text()

    methods: dict[str, Callable[[WcxbPage, str], str]] = {
        "datapipe": out_of_fold,
        "trafilatura": lambda page, html: trafilatura_defaults(html),
        "resiliparse": lambda page, html: html_to_text(html),
        "datapipe, shipped models": lambda page, html: content.main_content_text(html, url=page.url),
        "datapipe, rules only": lambda page, html: content.main_content_text(html, learned=False),
    }
    scores = run(pages, methods, args.passes)
    print(
        "\ndatapipe: out of fold (each page by models trained without its fold); 'shipped models' saw every page"
    )
    table(pages, scores)
    print("\nby fold (datapipe out of fold; the rules were written looking at pages of folds 0-2 only)")
    for k in range(FOLDS):
        mine = [p for p in pages if p.fold == k]
        print(
            f"  fold {k}: {len(mine):>4} pages  datapipe {scores['datapipe'].mean(mine):.3f}  "
            f"rules only {scores['datapipe, rules only'].mean(mine):.3f}  "
            f"trafilatura {scores['trafilatura'].mean(mine):.3f}"
        )
    page_type_table(pages, found)
    if args.limit:
        return
    ours, traf = scores["datapipe"], scores["trafilatura"]
    margin = min(
        ours.mean(ps) - traf.mean(ps) for t in TYPES if (ps := [p for p in pages if p.page_type == t])
    )
    print(
        f"bench: wcxb f1={ours.mean(pages):.3f} trafilatura_f1={traf.mean(pages):.3f} "
        f"worst_type_margin={margin:+.3f} speed_vs_trafilatura={ours.speed(pages) / traf.speed(pages):.1f}"
    )


if __name__ == "__main__":
    main()
