"""News pages with their article text, from newspaper4k's source release, scored as the article-extraction
benchmarks score article bodies.

Why: Trafilatura's dev set says per page only whether a few snippets are there; the article-extraction benchmarks
compare a method's whole text with each page's article body. newspaper4k ships, in its source distribution on PyPI,
23 real news pages (CNN, Wired, Time, Fox 13, cleveland.com, BBC Chinese, Yonhap, Prachatai, in 11 languages and
scripts) with the article text its maintainers accept for each (``tests/data/html`` and ``tests/data/txt``). That
text is newspaper4k's own output, checked by its tests: it leaves out the page's title and the odd paragraph, so
read the figures as agreement with it, and compare the methods with one another. The extractor was never tuned on
these pages; they found two rules' gaps (a page of Wired's, Prachatai's Drupal article).

Fetched with ``pip download`` of the pinned release (the hash PyPI lists is checked) into ``out/``; when that is
impossible (no network), :func:`article_pages` says why and the caller goes on without them.

Metric (as scrapinghub's article-extraction benchmark defines it): a text's tokens are its runs of word characters,
its shingles the runs of 4 tokens, counted with repeats; per page, true positives are the shingles both texts have,
false positives those only the method's text has, false negatives those only the article has, each divided by
their sum so that every page weighs the same; precision and recall are the means over pages, F1 their harmonic
mean.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import mean

RELEASE = "newspaper4k==0.9.6"
SDIST = "newspaper4k-0.9.6.tar.gz"
DATA = "newspaper4k-0.9.6/tests/data/"
EXPECTED = 23  # pages with both an html/ and a txt/ file in this release
SHINGLE = 4
_TOKEN = re.compile(r"\w+")


@dataclass(frozen=True)
class ArticlePage:
    name: str
    html: bytes
    article: str


def article_pages(into: Path) -> tuple[list[ArticlePage], str]:
    """The pages with their article text and ""; or no pages and why they could not be had."""
    sdist = into / SDIST
    if not sdist.exists():
        into.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:"]
            + ["--timeout", "20", "--retries", "1", "--dest", str(into), RELEASE],  # offline: fail in ~1 min
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0 or not sdist.exists():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no file"]
            return [], f"`pip download {RELEASE}` failed: {tail[0]}"
    html: dict[str, bytes] = {}
    text: dict[str, str] = {}
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            path = member.name
            if not member.isfile() or not path.startswith(DATA):
                continue
            folder, _, file = path[len(DATA) :].partition("/")
            stem, dot, ext = file.rpartition(".")
            f = tar.extractfile(member)
            if f is None or not dot:
                continue
            if folder == "html" and ext == "html":
                html[stem] = f.read()
            elif folder == "txt" and ext == "txt":
                text[stem] = f.read().decode("utf-8")
    pages = [ArticlePage(name, html[name], text[name]) for name in sorted(html.keys() & text.keys())]
    if len(pages) != EXPECTED:
        return [], f"{SDIST} holds {len(pages)} pages with an article text, not {EXPECTED}"
    return pages, ""


def shingles(text: str) -> Counter[tuple[str, ...]]:
    tokens = _TOKEN.findall(text)
    return Counter(tuple(tokens[i : i + SHINGLE]) for i in range(max(1, len(tokens) - SHINGLE + 1)) if tokens)


def page_counts(article: str, text: str) -> tuple[float, float, float]:
    """(tp, fp, fn) of one page as shares of their sum."""
    truth, ours = shingles(article), shingles(text)
    tp = sum((truth & ours).values())
    fp = sum((ours - truth).values())
    fn = sum((truth - ours).values())
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total else (0.0, 0.0, 0.0)


def score(counts: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    """(precision, recall, F1): per-page precision and recall averaged over pages. A page where the method gave
    nothing has precision 0; one where both texts are empty counts as perfect."""
    precision = mean(1.0 if fp == fn == 0 else tp / (tp + fp) if tp + fp else 0.0 for tp, fp, fn in counts)
    recall = mean(1.0 if fp == fn == 0 else tp / (tp + fn) if tp + fn else 0.0 for tp, fp, fn in counts)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def score_methods(
    pages: list[ArticlePage], methods: dict[str, Callable[[str], str]], decode: Callable[[bytes], str]
) -> dict[str, tuple[float, float, float]]:
    """Each method's (precision, recall, F1) over the pages; a method that fails on a page gives no text there."""
    out = {}
    for name, method in methods.items():
        counts = []
        for page in pages:
            try:
                text = method(decode(page.html))
            except Exception:  # a failure finds nothing, as in the snippet metric
                text = ""
            counts.append(page_counts(page.article, text))
        out[name] = score(counts)
    return out
