"""HTML bytes -> plain text with resiliparse, as DCLM-Baseline and Marin do (main content on by default)."""

from __future__ import annotations

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import bytes_to_str, detect_encoding
from resiliparse.parse.html import HTMLTree


def decode_html(payload: bytes, declared_charset: str | None) -> str:
    """Decode with the declared charset when it works, else resiliparse's detection; never raises on bad bytes."""
    encoding = declared_charset or detect_encoding(payload)
    try:
        return bytes_to_str(payload, encoding, errors="replace")
    except LookupError:  # an unknown charset name in the HTTP header
        return bytes_to_str(payload, detect_encoding(payload), errors="replace")


def html_to_text(html: str, *, main_content: bool = True, preserve_formatting: bool = True) -> str:
    """Visible text of a page; paragraphs stay on their own lines so later stages can work per paragraph."""
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
