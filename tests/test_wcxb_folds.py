"""WCXB's five folds by site (``benchmarks/wcxb_folds.tsv``) are fixed: what was split before anything was tuned
stays split so, and a site never sits in two folds (the out-of-fold figures of ``benchmarks/wcxb.py`` rest on it)."""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import wcxb_data as wd  # noqa: E402


def test_the_committed_split_is_the_fold_function() -> None:
    folds = wd.read_folds()
    assert len(folds) == wd.EXPECTED_PAGES
    for fid, (ptype, site, fold) in folds.items():
        assert ptype in wd.TYPES, fid
        assert fold == wd.fold_of(site), (fid, site)
    # the hash that fixes the split, spelled out: a change to fold_of would move pages between folds
    assert [wd.fold_of(s) for s in ("python.org", "mozilla.org", "rei.com", "file:0551")] == [
        int(__import__("hashlib").sha256(s.encode()).hexdigest(), 16) % 5
        for s in ("python.org", "mozilla.org", "rei.com", "file:0551")
    ]


def test_a_site_is_in_one_fold_and_every_fold_holds_every_type() -> None:
    folds = wd.read_folds()
    where: dict[str, set[int]] = defaultdict(set)
    for _, site, fold in folds.values():
        where[site].add(fold)
    assert all(len(f) == 1 for f in where.values())
    sizes = Counter(fold for _, _, fold in folds.values())
    assert sorted(sizes) == list(range(wd.FOLDS))
    assert all(0.15 <= n / len(folds) <= 0.25 for n in sizes.values()), sizes
    per_type = Counter((ptype, fold) for ptype, _, fold in folds.values())
    assert all(per_type[t, f] >= 10 for t in wd.TYPES for f in range(wd.FOLDS)), per_type


def test_site_is_the_registrable_domain() -> None:
    assert wd.site_of("https://docs.python.org/3/library/re.html") == "python.org"
    assert wd.site_of("https://www.python.org/") == "python.org"
    assert wd.site_of("https://www.bbc.co.uk/news") == "bbc.co.uk"
    canonical = b'<html><head><link rel="canonical" href="https://blog.example.com/a"></head></html>'
    assert wd.site_of("", canonical, "0007") == "example.com"
    og = b'<meta property="og:url" content="https://shop.example.de/p/1">'
    assert wd.site_of("", og, "0008") == "example.de"
    assert wd.site_of("", b"<html></html>", "0009") == "file:0009"


def test_the_metric_is_wcxbs() -> None:
    assert wd.prf("The cat sat", "the cat sat on the mat") == pytest.approx((1.0, 0.5, 2 / 3))
    # a multiset: a word twice in the prediction and once in the truth overlaps once
    assert wd.prf("mat mat", "the mat")[0] == pytest.approx(0.5)
    assert wd.prf("", "the mat") == (0.0, 0.0, 0.0)
    assert wd.prf("", "") == (1.0, 1.0, 1.0)
    assert wd.prf("something", "  ") == (0.0, 0.0, 0.0)


@pytest.mark.skipif(not wd.DATA.is_dir(), reason="the WCXB development split is not on this machine")
def test_the_data_gives_the_committed_split() -> None:
    committed = wd.read_folds()
    for page in wd.load():
        assert committed[page.id] == (page.page_type, page.site, page.fold), page.id
