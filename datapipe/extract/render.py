"""The kept blocks as the document's text (:func:`render`: blank lines between blocks, list items as ``- `` lines,
table rows on one line, Markdown on request) and the page's headline (:func:`headline`), which is its title.

Why a module of its own: what the output looks like is decided apart from what is kept; these are the functions
that make the output bytes, so a change to them shows in the demo build's bytes.
"""

from __future__ import annotations

from datapipe.extract.blocks import HEADINGS, Block
from datapipe.extract.rules import SHORT_CHARS
from datapipe.extract.spaces import drop_invisible, nfc


def render(blocks: list[Block], why: list[str], markdown: bool = False) -> str:
    """The kept blocks as text: blank lines between blocks, one line per list item and table row; invisible
    characters dropped and the text composed (NFC)."""
    out: list[str] = []
    prev = ""
    for b, w in zip(blocks, why, strict=True):
        if w:
            continue
        kind = b.kind
        text = b.text
        if kind == "li":
            text = "- " + text
        elif markdown and kind in HEADINGS:
            text = "#" * HEADINGS[kind] + " " + text
        elif markdown and kind == "pre":
            text = "```\n" + text + "\n```"
        elif markdown and kind == "tr":
            text = "| " + text + " |"
        if out:
            out.append("\n" if kind == prev and kind in ("li", "tr") else "\n\n")
        out.append(text)
        prev = kind
    # once per page: per block it cost 5% of a page's time
    return nfc(drop_invisible("".join(out)))


def headline(blocks: list[Block], why: list[str]) -> int | None:
    """The page's headline among the kept blocks: the first kept ``<h1>``, when no kept text (a block of
    :data:`SHORT_CHARS` or more that is not a heading) comes before it. It is the document's title, not its text,
    as Trafilatura and the article-extraction benchmarks' ground truths keep it (issue 40)."""
    for i, (b, w) in enumerate(zip(blocks, why, strict=True)):
        if w:
            continue
        if b.kind == "h1":
            return i
        if b.kind not in HEADINGS and b.chars >= SHORT_CHARS:
            return None
    return None
