"""Main-content extraction quality and speed: every extraction method on the same real pages, in one process.

Data: Trafilatura's evaluation corpus, 990 real pages with snippets that a correct extraction contains (``with``)
and must not contain (``without``), as fetched to ``../shared/data/extraction-dev/pages.jsonl.zst`` (see its
README). The pages are split once by a hash of their URL: a third (``sha256(url) % 3 == 0``, 343 pages) is the
held-out part, never looked at while the extractor was tuned; the rest (647 pages) is the tuning part. Both are
reported; the last line is for the held-out part. Then every method is scored on real article pages whose article
text extraction libraries ship in their released archives (newspaper4k, Readability's test pages, article-extractor;
75 pages once deduplicated, and any page of the dev set left out), as the article-extraction benchmarks score
article bodies (``article_pages.py``): split by site, 18 pages are ``untuned`` and 57 ``tune`` (newspaper4k's 22
among them, tuned on before the split). Sources that cannot be fetched are left out, saying why.

Metric (Trafilatura's own): whitespace normalized, per page a ``with`` snippet found is a true positive, one not
found a false negative, a ``without`` snippet found a false positive; summed over pages, then precision, recall
and F1. Speed: each page is decoded once; ``--passes`` times over all pages, every method extracts each page in
turn, in a rotating order; a method's time on a page is its fastest pass, its speed pages / summed time. Every
pass starts with the methods' caches cleared (datapipe's class-name verdicts, Trafilatura's ``lru_cache``s), so a
page never finds its own names already judged: each pass meets the pages as a crawl does, once each. Methods: ``datapipe`` (the
default), ``resiliparse`` (main content, as DCLM) and ``trafilatura`` with each of Marin's presets: the F1
comparison takes the best F1 among them; the speed headline is against Trafilatura's defaults (what it runs unless
told otherwise), its ``fineweb`` preset (slower: it also drops repeated segments) beside it. Every method is timed
the same way: the same passes, the same caches cleared before each, no warm-up beyond the passes themselves.

Run: ``.venv/bin/python benchmarks/extract_quality.py``. Last line: ``bench: extract_quality f1=X trafilatura_f1=Y
articles_f1=A articles_trafilatura_f1=B speed_vs_trafilatura=S speed_vs_trafilatura_fineweb=SF
speed_vs_resiliparse=T``; f1 and trafilatura_f1 on
the dev set's held-out part, articles_* the shingle F1 on the untuned article pages (``nan`` where none could be
fetched), each ``trafilatura_*`` the better of Marin's two presets there.
Targets (issue 22): f1 >= trafilatura_f1, speed_vs_trafilatura >= 10, speed_vs_resiliparse >= 0.6.
"""

from __future__ import annotations

import argparse
import base64
import gc
import hashlib
import io
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import zstandard  # noqa: E402
from article_pages import PARTS, article_pages, page_scores, score, summary  # noqa: E402  (beside this script)

from datapipe import (  # noqa: E402
    decode_html,
    html_to_text,
    main_content_text,  # noqa: E402
    trafilatura_text,
)
from datapipe import extract_content as content  # noqa: E402

DEV = REPO.parent / "shared" / "data" / "extraction-dev" / "pages.jsonl.zst"
EXPECTED_PAGES = 990
# each method reads a page's text and its URL (datapipe's extractor reads the URL's shape to tell the page's type)
METHODS: dict[str, Callable[[str, str], str]] = {
    "datapipe": lambda html, url: main_content_text(html, url=url),
    "datapipe/rules": lambda html, url: main_content_text(html, url=url, learned=False),
    "resiliparse": lambda html, url: html_to_text(html),
    "trafilatura/default": lambda html, url: trafilatura_text(html, "default"),
    "trafilatura/fineweb": lambda html, url: trafilatura_text(html, "fineweb"),
}
_WS = re.compile(r"\s+")


@dataclass
class Page:
    url: str
    html: str
    with_: list[str]
    without: list[str]
    part: str
    html_sha256: str = ""


@dataclass
class Score:
    tp: int = 0
    fn: int = 0
    fp: int = 0
    seconds: float = 0.0
    pages: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.tp / max(1, self.tp + self.fp)

    @property
    def recall(self) -> float:
        return self.tp / max(1, self.tp + self.fn)

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def docs_per_s(self) -> float:
        return self.pages / self.seconds if self.seconds else 0.0


def part_of(url: str) -> str:
    """The fixed split: a third of the pages, by a hash of the URL, is held out."""
    return "heldout" if int(hashlib.sha256(url.encode()).hexdigest(), 16) % 3 == 0 else "tune"


def load_pages(path: Path) -> list[Page]:
    if not path.is_file():
        raise SystemExit(f"extract_quality: the dev set is not at {path} (see ../shared/data/README.md)")
    with open(path, "rb") as f:
        data = zstandard.ZstdDecompressor().stream_reader(f).read()
    pages = []
    for line in io.StringIO(data.decode("utf-8")):
        rec = json.loads(line)
        raw = base64.b64decode(rec["html_b64"])
        html = decode_html(raw, None)  # as a crawl reader without a header would
        sha = hashlib.sha256(raw).hexdigest()
        pages.append(Page(rec["url"], html, rec["with"], rec["without"], part_of(rec["url"]), sha))
    if len(pages) < EXPECTED_PAGES:
        raise SystemExit(
            f"extract_quality: {path} has {len(pages)} pages, the benchmark needs {EXPECTED_PAGES}"
        )
    return pages


def norm(s: str) -> str:
    return _WS.sub(" ", s).strip()


def judge(page: Page, text: str, score: Score) -> None:
    text = norm(text)
    for s in page.with_:
        if norm(s) in text:
            score.tp += 1
        else:
            score.fn += 1
    score.fp += sum(norm(s) in text for s in page.without)


def forget() -> None:
    """Clear what the methods cached from pages already seen (Trafilatura's own reset also runs the collector)."""
    from trafilatura.meta import reset_caches

    content.forget_names()
    reset_caches()


def run(pages: list[Page], passes: int) -> dict[tuple[str, str], Score]:
    scores = {(m, part): Score() for m in METHODS for part in ("tune", "heldout")}
    names = list(METHODS)
    best = [dict.fromkeys(names, float("inf")) for _ in pages]
    texts: list[dict[str, str]] = [{} for _ in pages]
    for _ in range(passes):
        forget()
        for k, page in enumerate(pages):
            for name in names[k % len(names) :] + names[: k % len(names)]:
                t0 = time.perf_counter()
                try:
                    text = METHODS[name](page.html, page.url)
                except Exception as e:  # a method that fails on a page finds nothing there
                    text = ""
                    if name not in texts[k]:
                        scores[name, page.part].failures.append(f"{page.url}: {type(e).__name__}")
                best[k][name] = min(best[k][name], time.perf_counter() - t0)
                texts[k][name] = text
    for k, page in enumerate(pages):
        for name in names:
            s = scores[name, page.part]
            judge(page, texts[k][name], s)
            s.seconds += best[k][name]
            s.pages += 1
    return scores


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dev", type=Path, default=DEV)
    ap.add_argument("--passes", type=int, default=2, help="passes over all pages; a page's fastest counts")
    args = ap.parse_args()
    if (os.cpu_count() or 1) < 2:
        raise SystemExit("extract_quality: needs >= 2 cores (one for this process, one for the rest)")
    pages = load_pages(args.dev)
    gc.collect()
    scores = run(pages, args.passes)
    print(f"{'method':<22}{'part':<9}{'pages':>6}{'precision':>11}{'recall':>8}{'F1':>7}{'docs/s':>9}")
    for (name, part), s in scores.items():
        print(
            f"{name:<22}{part:<9}{s.pages:>6}{s.precision:>11.3f}{s.recall:>8.3f}{s.f1:>7.3f}{s.docs_per_s:>9.1f}"
            + (f"  ({len(s.failures)} failed)" if s.failures else "")
        )
    articles = article_scores(frozenset(p.html_sha256 for p in pages))
    ours = scores["datapipe", "heldout"]
    traf = max((scores[m, "heldout"] for m in METHODS if m.startswith("trafilatura")), key=lambda s: s.f1)
    # speed against Trafilatura's defaults (what it runs unless told otherwise), its `fineweb` preset beside it
    default, fineweb = scores["trafilatura/default", "heldout"], scores["trafilatura/fineweb", "heldout"]
    resi = scores["resiliparse", "heldout"]
    art_traf = max((articles[m, "untuned"][2] for m in METHODS if m.startswith("trafilatura")), key=_nan_low)
    print(
        f"bench: extract_quality f1={ours.f1:.3f} trafilatura_f1={traf.f1:.3f} "
        f"articles_f1={articles['datapipe', 'untuned'][2]:.3f} articles_trafilatura_f1={art_traf:.3f} "
        f"speed_vs_trafilatura={ours.docs_per_s / default.docs_per_s:.1f} "
        f"speed_vs_trafilatura_fineweb={ours.docs_per_s / fineweb.docs_per_s:.1f} "
        f"speed_vs_resiliparse={ours.docs_per_s / resi.docs_per_s:.2f}"
    )


def _nan_low(x: float) -> float:
    return float("-inf") if math.isnan(x) else x


def article_scores(exclude: frozenset[str]) -> dict[tuple[str, str], tuple[float, float, float]]:
    """Print the article-body tables; return each (method, part)'s (precision, recall, F1), NaN where no page."""
    pages, notes = article_pages(REPO / "out" / "article-pages", exclude)
    print("\narticle bodies (shingle metric, see article_pages.py):")
    print("\n".join(["  " + line for line in notes + summary(pages)]))
    counts = page_scores(pages, METHODS, lambda b: decode_html(b, None))
    out = {}
    print(f"{'method':<22}{'part':<9}{'pages':>6}{'precision':>11}{'recall':>8}{'F1':>7}")
    for name in METHODS:
        for part in PARTS:
            mine = [c for c, page in zip(counts[name], pages, strict=True) if page.part == part]
            out[name, part] = p, r, f = score(mine)
            print(f"{name:<22}{part:<9}{len(mine):>6}{p:>11.3f}{r:>8.3f}{f:>7.3f}")
    print(
        f"\n{'source':<19}{'part':<9}{'pages':>6}"
        + "".join(f"{m.split('/')[-1]:>13}" for m in METHODS)
        + "  (F1)"
    )
    for source in sorted({page.source for page in pages}):
        for part in PARTS:
            picked = [k for k, page in enumerate(pages) if page.source == source and page.part == part]
            if picked:
                f1s = "".join(f"{score([counts[m][k] for k in picked])[2]:>13.3f}" for m in METHODS)
                print(f"{source:<19}{part:<9}{len(picked):>6}{f1s}")
    return out


if __name__ == "__main__":
    main()
