"""HTML bytes -> plain text: datapipe's main-content extractor (default, :mod:`datapipe.extract.content`),
resiliparse (as DCLM-Baseline and Marin) or trafilatura (Marin's presets).

The extractor is a small picklable object so that it can run inside the extraction sandbox's child process.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import NamedTuple, TypedDict

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import bytes_to_str, detect_encoding, map_encoding_to_html5
from resiliparse.parse.html import HTMLTree

from datapipe.config.stages import ExtractConfig
from datapipe.extract.content import analyze

METHODS = ("datapipe", "resiliparse", "trafilatura")


class TrafilaturaOptions(TypedDict):
    """The keyword arguments of ``trafilatura.extract`` that a preset sets."""

    favor_recall: bool
    favor_precision: bool
    include_comments: bool
    deduplicate: bool


# Marin's trafilatura presets: `default` favours recall; `fineweb` favours precision and drops repeated segments,
# as FineWeb extracted its text.
TRAFILATURA_PRESETS: dict[str, TrafilaturaOptions] = {
    "default": {
        "favor_recall": True,
        "favor_precision": False,
        "include_comments": False,
        "deduplicate": False,
    },
    "fineweb": {
        "favor_recall": False,
        "favor_precision": True,
        "include_comments": False,
        "deduplicate": True,
    },
}


def _decode_strict(payload: bytes, encoding: str) -> str | None:
    """The page decoded with ``encoding`` (without a BOM) if every byte fits, else None."""
    try:
        return payload.decode(encoding).removeprefix("\ufeff")
    except (UnicodeError, LookupError):
        return None


def _detect(payload: bytes) -> str:
    """resiliparse's detected encoding. With WHATWG remapping (its default) it falls back to UTF-8 itself and never
    returns None; the stub's ``str | None`` covers ``html5_compatible=False`` only."""
    return detect_encoding(payload) or "utf-8"


def decode_html(payload: bytes, declared_charset: str | None) -> str:
    """Decode with the declared charset when the page is valid in it, else with the detected one when the page is
    valid in that, else as before: the declared charset with resiliparse's fallbacks and replacement characters.

    Declarations are often wrong (a Shift_JIS or EUC-JP page served as UTF-8): replacing what does not fit, or
    resiliparse's fallbacks (UTF-8, then Windows-1252), would turn such a page into replacement characters or
    mojibake, while detection reads it right. A name that is not a web charset (unknown, or a Python codec such
    as ``idna`` or ``unicode_escape``) maps to None in the WHATWG label table and goes to detection. Never raises
    on bad bytes or a bad name.
    """
    return _decoded(payload, declared_charset)[0]


def _decoded(payload: bytes, declared_charset: str | None) -> tuple[str, str | None]:
    """:func:`decode_html`'s text, and the encoding it was strictly decoded with (None: with replacements)."""
    declared = map_encoding_to_html5(declared_charset, fallback_utf8=False) if declared_charset else None
    if declared is None:
        return bytes_to_str(payload, _detect(payload), errors="replace"), None
    text = _decode_strict(payload, declared)
    if text is not None:
        return text, declared
    detected = _detect(payload)
    # a page served with an 8-bit charset has ASCII markup: a UTF-16 guess comes from bytes that look like a BOM
    if "<".encode(detected) == b"<":
        text = _decode_strict(payload, detected)
        if text is not None:
            return text, detected
    return bytes_to_str(payload, declared, errors="replace"), None


_UTF8_BOM = b"\xef\xbb\xbf"


def parser_input(payload: bytes, declared_charset: str | None) -> str | bytes:
    """What our extractor gives lexbor for a page: :func:`decode_html`'s text, or the page's own bytes when that
    text was strictly decoded from UTF-8. lexbor parses UTF-8 bytes, and the text it would encode back to those
    very bytes (less the byte-order mark the decoding drops): 0.11 CPU s of encoding over e2e's 5,255 pages."""
    text, encoding = _decoded(payload, declared_charset)
    if encoding is not None and codecs.lookup(encoding).name == "utf-8":
        return payload.removeprefix(_UTF8_BOM)
    return text


def html_to_text(html: str, *, main_content: bool = True, preserve_formatting: bool = True) -> str:
    """Visible text of a page (resiliparse); paragraphs stay on their own lines for per-line and per-paragraph rules."""
    tree = HTMLTree.parse(html)
    text = extract_plain_text(
        tree,
        main_content=main_content,
        preserve_formatting=preserve_formatting,
        list_bullets=True,
        alt_texts=False,
        links=False,
        form_fields=False,
        noscript=False,
    )
    return text.strip()


def trafilatura_text(html: str, preset: str = "default") -> str:
    """Text by trafilatura with one of :data:`TRAFILATURA_PRESETS`.

    trafilatura's ``deduplicate`` remembers segments across calls in a process-wide LRU cache, which would make
    a page's text depend on which pages the same worker saw before; that cache is cleared per page, so
    duplicates are dropped within a page and the output is the same on any number of workers. Only that cache:
    ``trafilatura.meta.reset_caches()`` also clears its other caches and runs ``gc.collect()``, which costs
    ~60 ms per page in a worker whose heap holds Beam, models and tokenizers (3 ms in a bare process), and
    those caches never change a page's text.
    """
    import trafilatura
    from trafilatura.deduplication import LRU_TEST

    options = TRAFILATURA_PRESETS[preset]
    if options["deduplicate"]:
        LRU_TEST.clear()
    return (trafilatura.extract(html, output_format="txt", with_metadata=False, **options) or "").strip()


class Extracted(NamedTuple):
    """A page's text and its title (None when the method gives none: only datapipe's own extractor does), and its
    page type with the model's probability (datapipe's learned extractor only)."""

    text: str
    title: str | None = None
    page_type: str | None = None
    page_type_score: float = 0.0


@dataclass(frozen=True)
class HtmlExtractor:
    """``extractor((payload, charset)) -> text`` with the configured method (one of :data:`METHODS`);
    :meth:`extract` gives the title too, which the extract stage keeps as the document's ``title`` metadata."""

    method: str = "datapipe"
    main_content: bool = True
    preserve_formatting: bool = True
    preset: str = "default"
    markdown: bool = False
    title: str = "metadata"  # datapipe only: the headline as metadata, or "prepend": on top of the text too
    learned: bool = True  # datapipe only: the block model (and page types), else the rules alone

    @classmethod
    def from_config(cls, cfg: ExtractConfig) -> HtmlExtractor:
        return cls(
            cfg.method,
            cfg.main_content,
            cfg.preserve_formatting,
            cfg.preset,
            cfg.markdown,
            cfg.title,
            cfg.learned,
        )

    def extract(
        self, item: str | bytes | tuple[bytes, str | None] | tuple[bytes, str | None, str]
    ) -> Extracted:
        """The page's text (and title, and type). ``item`` is the page: its text, its bytes (the charset
        detected), or ``(bytes, declared charset)`` or ``(bytes, declared charset, URL)`` as a crawl reader has
        them; the URL helps tell the page's type."""
        payload, charset, url = _page(item)
        if self.method == "datapipe":
            html = payload if isinstance(payload, str) else parser_input(payload, charset)
            a = analyze(html, url, learned=self.learned)
            text = a.text(self.markdown, title=self.title == "prepend")
            return Extracted(text, a.title, a.page_type, a.page_type_score)
        if isinstance(payload, str):
            payload, charset = payload.encode("utf-8"), "utf-8"
        html = decode_html(payload, charset)
        if self.method == "trafilatura":
            return Extracted(trafilatura_text(html, self.preset))
        return Extracted(
            html_to_text(html, main_content=self.main_content, preserve_formatting=self.preserve_formatting)
        )

    def __call__(self, item: str | bytes | tuple[bytes, str | None] | tuple[bytes, str | None, str]) -> str:
        return self.extract(item).text


def _page(item: object) -> tuple[str | bytes, str | None, str]:
    """(page, declared charset, URL) of what :meth:`HtmlExtractor.extract` accepts; a clear error otherwise."""
    if isinstance(item, str | bytes):
        return item, None, ""
    if isinstance(item, tuple) and len(item) in (2, 3) and isinstance(item[0], str | bytes):
        charset = item[1]
        url = item[2] if len(item) == 3 else ""
        if (charset is None or isinstance(charset, str)) and isinstance(url, str | None):
            return item[0], charset, url or ""
    raise TypeError(
        "HtmlExtractor.extract takes a page: its text or bytes, or (bytes, charset) or (bytes, charset, url); got "
        + type(item).__name__
    )
