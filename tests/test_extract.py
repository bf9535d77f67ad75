"""HTML extraction on real pages: the main text is there, the navigation is not; the sandbox limits each page."""

from __future__ import annotations

import time

import pytest
from fastwarc.warc import ArchiveIterator, WarcRecordType
from hypothesis import given, settings
from hypothesis import strategies as st

from datapipe import HtmlExtractor
from datapipe.extract.analysis import main_content
from datapipe.extract.html import decode_html, parser_input
from datapipe.extract.sandbox import Failed, Sandbox
from tests.conftest import CORPORA


def _pages() -> dict[str, bytes]:
    out = {}
    for name in ("docs-00000.warc.gz", "docs-00001.warc.gz"):
        with open(CORPORA / "crawl" / name, "rb") as f:
            for rec in ArchiveIterator(f, record_types=WarcRecordType.response, parse_http=True):
                out[rec.headers.get("WARC-Target-URI")] = rec.reader.read()
    return out


PAGES = _pages()
PY = "https://docs.python.org/3.11/library/"
HB = "https://debian-handbook.info/browse/en-US/stable/"
PYDOC_NAV = ["Table of Contents", "Previous topic", "Next topic", "This Page", "Report a Bug", "Show Source"]
HANDBOOK_NAV = ["Download the ebook", "Prev", "Next"]

# (page, sentences of its main text, navigation that must not appear)
KNOWN = [
    (
        HB + "sect.becoming-package-maintainer.html",
        ["Creating a quality Debian package is not always a simple task"],
        HANDBOOK_NAV,
    ),
    (
        PY + "email.mime.html",
        ["This module is part of the legacy (Compat32) email API."],
        PYDOC_NAV,
    ),
    (
        PY + "archiving.html",
        [
            "The modules described in this chapter support data compression with the zlib, gzip, bzip2 and lzma"
        ],
        PYDOC_NAV,
    ),
    (
        HB + "sect.raspbian.html",
        ["Raspbian is a rebuild of Debian optimized for the popular (and inexpensive) Raspberry Pi family"],
        HANDBOOK_NAV,
    ),
    (
        PY + "faulthandler.html",
        ["This module contains functions to dump Python tracebacks explicitly, on a fault, after a timeout"],
        PYDOC_NAV,
    ),
    (
        PY + "cmath.html",
        ["This module provides access to mathematical functions for complex numbers."],
        PYDOC_NAV,
    ),
    (
        PY + "secrets.html",
        ["The secrets module is used for generating cryptographically strong random numbers"],
        PYDOC_NAV,
    ),
]


@pytest.mark.parametrize("url,sentences,nav", KNOWN, ids=[k[0].rsplit("/", 1)[1] for k in KNOWN])
def test_main_text_present_navigation_absent(url, sentences, nav):
    text = HtmlExtractor()((PAGES[url], "utf-8"))
    everything = HtmlExtractor("resiliparse", main_content=False)((PAGES[url], "utf-8"))
    lines = {line.strip(" •") for line in text.splitlines()}
    for s in sentences:
        assert s in text
    on_page = [n for n in nav if n in {line.strip(" •") for line in everything.splitlines()}]
    assert len(on_page) >= 3, "the page has this navigation"
    for n in on_page:
        assert n not in lines, f"navigation {n!r} leaked into the main text"
    assert "\n" in HtmlExtractor(title="prepend")((PAGES[url], "utf-8"))  # blocks on their own lines


@pytest.mark.parametrize("preset", ["default", "fineweb"])
def test_trafilatura_presets(preset):
    url, sentences, _ = KNOWN[4]
    text = HtmlExtractor(method="trafilatura", preset=preset)((PAGES[url], "utf-8"))
    assert sentences[0] in " ".join(text.split())
    assert "Previous topic" not in text


def test_trafilatura_fineweb_is_no_longer_than_default():
    lengths = {
        p: sum(len(HtmlExtractor(method="trafilatura", preset=p)((PAGES[k[0]], "utf-8"))) for k in KNOWN)
        for p in ("default", "fineweb")
    }
    assert 0 < lengths["fineweb"] <= lengths["default"]


def test_decode_declared_and_detected_charsets():
    text = "<html><body><p>Grüße aus Köln, déjà vu</p></body></html>"
    assert "Grüße" in decode_html(text.encode("latin-1"), "iso-8859-1")
    assert "Grüße" in decode_html(text.encode("utf-8"), None)
    # an unknown charset name falls back to detection; invalid bytes never raise
    assert "Köln" in decode_html(text.encode("utf-8"), "x-no-such-charset")
    assert decode_html(b"\xff\xfe\xfa<p>ok</p>", "utf-8").endswith("<p>ok</p>")


def slow_or_crashing(item: str) -> str:
    """Runs in the sandbox's child process: 'hang' never finishes, 'crash' kills the process."""
    if item == "hang":
        time.sleep(60)
    if item == "crash":
        import os

        os._exit(3)
    if item == "raise":
        raise ValueError("bad page")
    if item.startswith("slow"):
        time.sleep(0.4)
    return item.upper()


def test_sandbox_times_out_one_page_and_goes_on():
    box = Sandbox(slow_or_crashing, timeout_s=1.0)
    t0 = time.perf_counter()
    out = box.run(["a", "hang", "b", "crash", "c", "raise", "d"])
    elapsed = time.perf_counter() - t0
    box.close()
    assert out[0] == "A" and out[2] == "B" and out[4] == "C" and out[6] == "D"
    assert isinstance(out[1], Failed) and out[1].reason == "timeout"
    assert isinstance(out[3], Failed) and out[3].reason == "crash"
    assert isinstance(out[5], Failed) and out[5].reason == "error" and "bad page" in out[5].detail
    assert box.restarts == 2
    assert elapsed < 20


def test_sandbox_time_limit_is_per_document_not_per_batch():
    # five documents of 0.4 s each: the batch takes 2 s, each document well under its 1 s
    box = Sandbox(slow_or_crashing, timeout_s=1.0)
    try:
        out = box.run([f"slow{i}" for i in range(5)] + ["hang", "slow5"])
    finally:
        box.close()
    assert out[:5] == [f"SLOW{i}" for i in range(5)] and out[6] == "SLOW5"
    assert out[5] == Failed("timeout", "> 1.0 s") and box.restarts == 1


def test_sandbox_gives_the_same_text_as_in_process():
    items = [(PAGES[k[0]], "utf-8") for k in KNOWN]
    ex = HtmlExtractor()
    box = Sandbox(ex, timeout_s=10)
    assert box.run(items) == [ex(i) for i in items]
    box.close()


PAGE = "<html><head><title>T</title></head><body><article><p>{}</p></article></body></html>"


@pytest.mark.parametrize(
    ("payload", "charset", "kind"),
    [
        (PAGE.format("Grüße aus Köln, 東京").encode(), "utf-8", bytes),
        (b"\xef\xbb\xbf" + PAGE.format("avec un BOM, déjà").encode(), "UTF-8", bytes),
        (b"\xef\xbb\xbf\xef\xbb\xbf" + PAGE.format("two BOMs").encode(), "utf-8", bytes),
        (PAGE.format("déjà vu").encode("cp1252"), "windows-1252", str),
        (PAGE.format("déjà vu").encode("cp1252"), "utf-8", str),  # not UTF-8: detected, or replaced
        (PAGE.format("ascii").encode(), None, str),  # nothing declared: resiliparse's detection, as before
    ],
)
def test_the_parser_gets_the_pages_bytes_only_where_they_are_the_texts_utf8(payload, charset, kind):
    given_input = parser_input(payload, charset)
    assert isinstance(given_input, kind)
    if kind is bytes:
        assert given_input.decode("utf-8") == decode_html(payload, charset)
    assert main_content(given_input) == main_content(decode_html(payload, charset))


@settings(max_examples=150, deadline=None)
@given(
    body=st.text(max_size=60),
    encoding=st.sampled_from(["utf-8", "cp1252", "shift_jis", "utf-16"]),
    declared=st.sampled_from([None, "utf-8", "UTF8", "windows-1252", "shift_jis", "utf-16", "bogus"]),
    noise=st.binary(max_size=4),
)
def test_the_same_text_from_the_pages_bytes_as_from_its_decoded_text(body, encoding, declared, noise):
    payload = PAGE.format(body).encode(encoding, errors="replace") + noise
    assert main_content(parser_input(payload, declared)) == main_content(decode_html(payload, declared))


def unpicklable_for_bad(item: str):
    """Runs in the sandbox's child: a result that cannot be pickled for 'bad' (a lambda), the item otherwise."""
    return (lambda: None) if item == "bad" else item


def test_a_result_that_cannot_cross_fails_its_document_only():
    box = Sandbox(unpicklable_for_bad, timeout_s=10)
    try:
        out = box.run(["a", "bad", "b"])
    finally:
        box.close()
    assert out[0] == "a" and out[2] == "b" and box.restarts == 0
    assert isinstance(out[1], Failed) and out[1].reason == "error" and "pickled" in out[1].detail


@pytest.mark.parametrize("memfd", [True, False])
def test_the_progress_map_works_with_and_without_anonymous_memory(monkeypatch, memfd):
    import os

    if not memfd:
        monkeypatch.delattr(os, "memfd_create", raising=False)
    elif not hasattr(os, "memfd_create"):
        pytest.skip("no memfd_create on this system")
    box = Sandbox(slow_or_crashing, timeout_s=1.0)
    try:
        assert box.run(["a", "hang", "b"]) == ["A", Failed("timeout", "> 1.0 s"), "B"]
    finally:
        box.close()
