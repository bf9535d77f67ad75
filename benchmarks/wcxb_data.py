"""WCXB's development split as the benchmark and the extractor's training script read it: the pages, their page
types and ground truth, the benchmark's word-level metric, and the fixed five folds by domain.

Why a module of its own: ``benchmarks/wcxb.py`` scores on it and ``classifiers/extract/train.py`` learns from it;
both must read the same pages, split them the same way and score them the same way, or an "out-of-fold" figure
would mean nothing.

Data: ``../shared/data/wcxb-dev/`` (WCXB 1.0, CC-BY-4.0; its README gives the metric and the published figures):
``html/NNNN.html.gz`` and ``ground-truth/NNNN.json``. The page is decoded as a crawl reader without an HTTP header
decodes it (:func:`datapipe.extract.html.decode_html`, the page's own ``<meta charset>`` or resiliparse's
detection). Two pages have no ``main_content``: the metric's rule for a truth without words applies (1 for an
empty prediction, else 0), for every method alike.

Folds (fixed 2026-12-06, before any rule or model was tuned on these pages): a page's site is the registrable
domain of its URL (``tld``'s bundled public-suffix list: ``docs.python.org`` and ``www.python.org`` are one site),
or, for the 5 pages without a URL, of the page's canonical link or ``og:url``, else its file id. Its fold is
``sha256(site) % 5``: a site's pages are all in one fold, so a template learnt in one fold is never scored in
another. ``benchmarks/wcxb_folds.tsv`` records every page's site and fold; ``tests/test_wcxb_folds.py`` holds the
function to it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "wcxb-dev"
FOLDS_FILE = Path(__file__).with_name("wcxb_folds.tsv")
FOLDS = 5
EXPECTED_PAGES = 1497
TYPES = ("article", "documentation", "service", "forum", "collection", "listing", "product")

_WORD = re.compile(r"\w+")
_CANONICAL = re.compile(
    rb"<(?:link|meta)\b[^>]*?(?:rel\s*=\s*[\"']?canonical|property\s*=\s*[\"']?og:url)[^>]*>", re.I
)
_HREF = re.compile(rb"""\b(?:href|content)\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)


@dataclass(frozen=True)
class WcxbPage:
    """One page: its file id, URL (may be empty), page type, ground-truth text and raw HTML bytes."""

    id: str
    url: str
    page_type: str
    truth: str
    raw: bytes
    site: str
    fold: int


def site_of(url: str, raw: bytes = b"", file_id: str = "") -> str:
    """The page's site: the registrable domain of its URL, or of its canonical link or ``og:url`` when it has no
    URL, else ``file:<id>``."""
    from tld import get_fld

    if not url:
        for tag in _CANONICAL.findall(raw[:200_000]):
            m = _HREF.search(tag)
            if m:
                url = (m.group(1) or m.group(2) or b"").decode("utf-8", "replace").strip()
                if url.startswith("http"):
                    break
        else:
            url = ""
    host = (urlsplit(url).hostname or "") if url else ""
    if not host:
        return f"file:{file_id}"
    fld = get_fld(host, fix_protocol=True, fail_silently=True)
    return fld if isinstance(fld, str) and fld else host.removeprefix("www.")


def fold_of(site: str) -> int:
    """The site's fold, fixed: ``sha256(site) % 5``."""
    return int(hashlib.sha256(site.encode()).hexdigest(), 16) % FOLDS


def load(data: Path = DATA) -> list[WcxbPage]:
    """Every page of the development split, in file-id order; refuses a folder with fewer than all 1,497."""
    truth_dir = data / "ground-truth"
    if not truth_dir.is_dir():
        raise SystemExit(f"wcxb: the development split is not at {data} (see its README in ../shared/data/)")
    pages = []
    for path in sorted(truth_dir.glob("*.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        fid = rec.get("file_id") or path.stem
        raw = gzip.decompress((data / "html" / f"{fid}.html.gz").read_bytes())
        gt = rec["ground_truth"]
        url = rec.get("url") or gt.get("url") or ""
        site = site_of(url, raw, fid)
        ptype = rec.get("_internal", {}).get("page_type", {}).get("primary") or gt.get("page_type")
        if ptype not in TYPES:
            raise SystemExit(f"wcxb: {path}: _internal.page_type.primary: {ptype!r} is not one of {TYPES}")
        pages.append(WcxbPage(fid, url, ptype, gt.get("main_content") or "", raw, site, fold_of(site)))
    if len(pages) < EXPECTED_PAGES:
        raise SystemExit(f"wcxb: {data} has {len(pages)} pages, the benchmark needs {EXPECTED_PAGES}")
    return pages


def words(text: str) -> list[str]:
    """The metric's words: ``\\w+`` in the lower-cased text."""
    return _WORD.findall(text.lower())


def prf(predicted: str, truth: str | Counter[str]) -> tuple[float, float, float]:
    """One page's word-level precision, recall and F1 (multiset overlap): WCXB's metric. A truth without words
    scores 1 for a prediction without words, else 0; an empty prediction scores 0."""
    want = truth if isinstance(truth, Counter) else Counter(words(truth))
    got = Counter(words(predicted))
    n_want, n_got = sum(want.values()), sum(got.values())
    if not n_want:
        return (1.0, 1.0, 1.0) if not n_got else (0.0, 0.0, 0.0)
    if not n_got:
        return 0.0, 0.0, 0.0
    overlap = sum((want & got).values())
    p, r = overlap / n_got, overlap / n_want
    return p, r, (2 * p * r / (p + r) if overlap else 0.0)


def read_folds(path: Path = FOLDS_FILE) -> dict[str, tuple[str, str, int]]:
    """The committed split: file id -> (page type, site, fold)."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        fid, ptype, site, fold = line.split("\t")
        out[fid] = (ptype, site, int(fold))
    return out


def write_folds(pages: list[WcxbPage], path: Path = FOLDS_FILE) -> None:
    rows = ["id\tpage_type\tsite\tfold"] + [f"{p.id}\t{p.page_type}\t{p.site}\t{p.fold}" for p in pages]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


if __name__ == "__main__":  # (re)write the committed split; it must not change once tuning began
    import sys

    loaded = load()
    if FOLDS_FILE.exists() and "--rewrite" not in sys.argv:
        committed = read_folds()
        same = all(committed.get(p.id) == (p.page_type, p.site, p.fold) for p in loaded)
        print(f"wcxb folds: {len(loaded)} pages, committed split {'matches' if same else 'DIFFERS'}")
        sys.exit(0 if same and len(committed) == len(loaded) else 1)
    write_folds(loaded)
    print(f"wcxb folds: wrote {FOLDS_FILE} ({len(loaded)} pages)")
