"""HTML bytes -> plain text: resiliparse (default, as DCLM-Baseline and Marin) or trafilatura (Marin's presets).

The extractor is a small picklable object so that it can run inside the extraction sandbox's child process.
"""

from __future__ import annotations

from dataclasses import dataclass

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import bytes_to_str, detect_encoding
from resiliparse.parse.html import HTMLTree

# Marin's trafilatura presets: `default` favours recall; `fineweb` favours precision and drops repeated segments,
# as FineWeb extracted its text.
TRAFILATURA_PRESETS: dict[str, dict[str, bool]] = {
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


def decode_html(payload: bytes, declared_charset: str | None) -> str:
    """Decode with the declared charset when it works, else resiliparse's detection; never raises on bad bytes."""
    encoding = declared_charset or detect_encoding(payload)
    try:
        return bytes_to_str(payload, encoding, errors="replace")
    except LookupError:  # an unknown charset name in the HTTP header
        return bytes_to_str(payload, detect_encoding(payload), errors="replace")


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

    trafilatura's ``deduplicate`` remembers segments across calls in a process-wide cache, which would make a
    page's text depend on which pages the same worker saw before; the cache is cleared per page, so duplicates are
    dropped within a page and the output is the same on any number of workers.
    """
    import trafilatura
    from trafilatura.meta import reset_caches

    options = TRAFILATURA_PRESETS[preset]
    if options["deduplicate"]:
        reset_caches()
    return (trafilatura.extract(html, output_format="txt", with_metadata=False, **options) or "").strip()


@dataclass(frozen=True)
class HtmlExtractor:
    """``extractor((payload, charset)) -> text`` with the configured method."""

    method: str = "resiliparse"
    main_content: bool = True
    preserve_formatting: bool = True
    preset: str = "default"

    def __call__(self, item: tuple[bytes, str | None]) -> str:
        payload, charset = item
        html = decode_html(payload, charset)
        if self.method == "trafilatura":
            return trafilatura_text(html, self.preset)
        return html_to_text(
            html, main_content=self.main_content, preserve_formatting=self.preserve_formatting
        )
