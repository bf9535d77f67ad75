"""The article-page benchmark's sources: what it reads from Debian's index and from Readability's test suites.

The fetch itself needs the network (benchmarks/article_pages.py runs it); these check the parts that decide which
archive is taken, how the pages it gives are pinned, and which pages count.
"""

from __future__ import annotations

import io
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import article_pages as ap  # noqa: E402

# the shape of Debian trixie's Sources entry for chromium (2026-12-04), cut to the fields the fetch reads
SOURCES = """Package: chromium
Binary: chromium, chromium-l10n
Version: 150.0.7871.181-1~deb13u1
Files:
 a7624e3abc7c34cddfd5d69278fd3a72 941240556 chromium_150.0.7871.181.orig.tar.xz
Checksums-Sha256:
 8cc28beda0a8eb65b25fd2acd6433460c5f048caf689c14b4f4f159b4e34cf7c 4099 chromium_150.0.7871.181-1~deb13u1.dsc
 0e03ca671e0d01e497230193923cddf2a1113a440481c1796ca29c6ffab6f578 941240556 chromium_150.0.7871.181.orig.tar.xz
 87895b68020096247ab8ab76825165083b3e8077327ad64e21ab266439643b16 536824 chromium_150.0.7871.181-1~deb13u1.debian.tar.xz
Directory: pool/main/c/chromium

Package: chromium-bsu
Version: 0.9.16.1-3
Checksums-Sha256:
 1111111111111111111111111111111111111111111111111111111111111111 100 chromium-bsu_0.9.16.1.orig.tar.xz
Directory: pool/main/c/chromium-bsu

Package: chromium
Version: 156.0.8078.79-1~deb13u1
Checksums-Sha256:
 81da743a5cb52784043027e6adf3578cda7667c6e98bbedc41464feb82bc96d9 18141952 chromium_156.0.8078.79.orig-pre-gen.tar.xz
 5351bbf4e68def70819a25b3a07eafad8f97204bcd4a3e2002c1a1dd690b0e31 801144748 chromium_156.0.8078.79.orig.tar.xz
Directory: pool/main/c/chromium
"""


def test_each_listed_upstream_archive_of_the_package_is_a_candidate_in_the_index_order():
    got = ap.upstream_archives(SOURCES, "chromium", "debian")
    assert got == [
        (
            "http://deb.debian.org/debian/pool/main/c/chromium/chromium_150.0.7871.181.orig.tar.xz",
            "0e03ca671e0d01e497230193923cddf2a1113a440481c1796ca29c6ffab6f578",
            941240556,
        ),
        (
            "http://deb.debian.org/debian/pool/main/c/chromium/chromium_156.0.8078.79.orig.tar.xz",
            "5351bbf4e68def70819a25b3a07eafad8f97204bcd4a3e2002c1a1dd690b0e31",
            801144748,
        ),
    ]
    assert ap.upstream_archives(SOURCES, "firefox", "debian") == []


def _tar(files: dict[str, bytes], mtime: int = 0, uname: str = "") -> tarfile.TarFile:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.uname = len(data), mtime, uname
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return tarfile.open(fileobj=buf)


def test_the_pin_covers_what_the_files_hold_not_the_archive_around_them():
    files = {"s/test-pages/a/source.html": b"<p>a</p>", "s/test-pages/a/expected.html": b"a"}
    reordered = dict(reversed(list(files.items())))
    same = ap.files_digest(_tar(files))
    assert ap.files_digest(_tar(reordered, mtime=1_700_000_000, uname="debian")) == same
    assert ap.files_digest(_tar({**files, "s/test-pages/a/expected.html": b"b"})) != same


def test_readabilitys_unit_test_pages_are_left_out_and_real_ones_read():
    prose = b"<html lang=en><head><link rel=canonical href='https://example.org/x'></head><body>"
    real = prose + b"<p>" + b"A sentence of a real article about the weather. " * 200 + b"</p></body></html>"
    lorem = prose + b"<p>" + b"Lorem ipsum dolor sit amet. " * 400 + b"</p></body></html>"
    files = {
        "s/test/test-pages/real-1/source.html": real,
        "s/test/test-pages/real-1/expected.html": b"<div><p>A sentence.</p></div>",
        "s/test/test-pages/real-1/expected-metadata.json": b'{"title": "A sentence."}',
        "s/test/test-pages/lorem/source.html": lorem,
        "s/test/test-pages/lorem/expected.html": b"<p>Lorem ipsum</p>",
        "s/test/test-pages/small/source.html": b"<p>tiny</p>",
        "s/test/test-pages/small/expected.html": b"<p>tiny</p>",
        "s/test/test-pages/no-expected/source.html": real,
    }
    pages = list(ap._read_readability_suite(_tar(files), "s/test/", "suite"))
    assert [(p.name, p.source, p.article, p.url, p.lang, p.title_in_article) for p in pages] == [
        ("real-1", "suite", "A sentence.", "https://example.org/x", "en", True)
    ]


def test_the_chromium_paths_of_the_suite_are_the_ones_taken():
    top = "chromium-150.0.7871.181/third_party/readability/src/test/"
    m = ap._CHROMIUM_PAGES.fullmatch(top + "test-pages/bbc-1/expected.html")
    assert m is not None and m.group(1) == "test-pages/bbc-1/expected.html"
    for other in ("test-pages/bbc-1/readme.txt", "test-pages/bbc-1/deeper/source.html", "utils.js"):
        assert ap._CHROMIUM_PAGES.fullmatch(top + other) is None
    assert (
        ap._CHROMIUM_PAGES.fullmatch("chromium-150/third_party/readability/modded_src/x/source.html") is None
    )
