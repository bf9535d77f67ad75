"""HTML extraction with resiliparse on real pages."""

from __future__ import annotations

from fastwarc.warc import ArchiveIterator, WarcRecordType

from datapipe.extract.html import decode_html, html_to_text
from tests.conftest import CORPORA


def _first_page(url_part: str) -> bytes:
    for name in ("docs-00000.warc.gz", "docs-00001.warc.gz"):
        with open(CORPORA / "crawl" / name, "rb") as f:
            for rec in ArchiveIterator(f, record_types=WarcRecordType.response, parse_http=True):
                if url_part in rec.headers.get("WARC-Target-URI", ""):
                    return rec.reader.read()
    raise AssertionError(url_part)


def test_main_content_drops_navigation():
    html = decode_html(_first_page("docs.python.org/3.11/library/"), "utf-8")
    full = html_to_text(html, main_content=False)
    main = html_to_text(html, main_content=True)
    assert 0 < len(main) < len(full)
    assert "Navigation" in full and "Navigation" not in main
    assert "\n" in main  # paragraphs kept on their own lines


def test_decode_declared_and_detected_charsets():
    text = "<html><body><p>Grüße aus Köln, déjà vu</p></body></html>"
    latin1 = text.encode("latin-1")
    assert "Grüße" in decode_html(latin1, "iso-8859-1")
    assert "Grüße" in decode_html(text.encode("utf-8"), None)
    # an unknown charset name falls back to detection; invalid bytes never raise
    assert "Köln" in decode_html(text.encode("utf-8"), "x-no-such-charset")
    assert decode_html(b"\xff\xfe\xfa<p>ok</p>", "utf-8").endswith("<p>ok</p>")
