"""One page's analysis: parse it, walk it (compiled), decide each block, read it again as a discussion when its
comments are its text (:func:`is_discussion`), and take the headline as its title (:func:`analyze`, whose
:class:`Analysis` renders the text); :func:`main_content` and :func:`main_content_text` are the entry points.

Why a module of its own: it is the glue that runs the other parts in order (the walk, :mod:`datapipe.extract.rules`,
:mod:`datapipe.extract.render`) and holds the one rule that needs the whole page's decisions first (a discussion).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import ModuleType

from selectolax.lexbor import LexborHTMLParser

from datapipe.extract.blocks import Block, Container, size_of
from datapipe.extract.names import classify_discussion, names_comments
from datapipe.extract.render import headline, render
from datapipe.extract.rules import decide
from datapipe.extract.spaces import drop_invisible, nfc
from datapipe.extract.walk import WalkRules, compiled

# a page keeping less prose (paragraphs of DISCUSSION_PARAGRAPH+ characters) than this may be a discussion, when
# parts named for comments hold this much text
DISCUSSION_PROSE, DISCUSSION_CHARS, DISCUSSION_PARAGRAPH = 200, 500, 100


@dataclass(frozen=True)
class Analysis:
    """A page's blocks, the named containers and why each block goes ("" when kept; ``title`` for the headline,
    which is the page's ``title``, with the ``<title>`` element's text when no headline is kept)."""

    blocks: list[Block]
    containers: list[Container]
    why: list[str]
    title: str | None = None

    def text(self, markdown: bool = False, title: bool = False) -> str:
        """The kept text; with ``title``, the title first (a ``#`` heading with ``markdown``)."""
        body = render(self.blocks, self.why, markdown)
        if not title or not self.title:
            return body
        head = nfc(drop_invisible(("# " if markdown else "") + self.title))
        return head + "\n\n" + body if body else head


def is_discussion(a: Analysis) -> bool:
    """Whether the page is a discussion whose comments are its text (a forum thread, a live ticker): outside the
    parts named for comments it keeps under :data:`DISCUSSION_PROSE` characters of paragraphs, and those parts
    hold :data:`DISCUSSION_CHARS` or more. An article with comments under it keeps its own paragraphs."""
    prose = sum(_letters(b) for b, w in zip(a.blocks, a.why, strict=True) if not w and b.kind == "p")
    if prose >= DISCUSSION_PROSE:
        return False
    said = 0
    held = [False] * len(a.blocks)
    for c in a.containers:
        if c.kind != "boiler" or not c.attrs or not names_comments(c.attrs):
            continue
        if c.skipped:  # not visited: the walk measured its text
            said += c.chars
        else:
            held[c.start : c.end] = [True] * (c.end - c.start)
    said += sum(b.chars for b, h in zip(a.blocks, held, strict=True) if h)
    return said >= DISCUSSION_CHARS


def _letters(b: Block) -> int:
    """A paragraph's length in letters (a CJK character counts twice: :func:`size_of`) when it is prose, else 0; one
    of :data:`DISCUSSION_PROSE` characters settles the test alone, so its letters need no count."""
    n = b.chars if b.chars >= DISCUSSION_PROSE else size_of(b.text)
    return n if n >= DISCUSSION_PARAGRAPH else 0


def analyze(html: str | bytes) -> Analysis:
    """Cut the page into blocks and decide each (the rules: :mod:`datapipe.extract.content`); the headline is the
    title."""
    walk, rules = compiled()
    tree = LexborHTMLParser(html)
    body = tree.body
    if body is None:
        return Analysis([], [], [], _title_element(tree))
    a = _walk(walk, rules, body.mem_id)
    if is_discussion(a):  # read it again, its comments as text (rare: an extra walk)
        a = _walk(walk, replace(rules, classify=classify_discussion), body.mem_id)
    top = headline(a.blocks, a.why)
    if top is None:
        return replace(a, title=_title_element(tree))
    why = list(a.why)
    why[top] = "title"
    return replace(a, why=why, title=a.blocks[top].text)


def _title_element(tree: LexborHTMLParser) -> str | None:
    """The ``<title>`` element's text, whitespace collapsed (None when there is none or it is blank)."""
    node = tree.css_first("title")
    text = " ".join(node.text(deep=True).split()) if node is not None else ""
    return text or None


def _walk(walk: ModuleType, rules: WalkRules, node: int) -> Analysis:
    walker = walk.Walk(rules)
    walker.run(node)
    return Analysis(walker.blocks, walker.containers, decide(walker.blocks, walker.containers))


def main_content(html: str | bytes, *, markdown: bool = False) -> tuple[str, str | None]:
    """The main content of a page (its text, or its UTF-8 bytes) as text, and its title
    (:mod:`datapipe.extract.content` tells how it decides)."""
    a = analyze(html)
    return a.text(markdown), a.title


def main_content_text(html: str, *, markdown: bool = False, title: bool = False) -> str:
    """The main content of a page as text (with ``title``, the title first)."""
    return analyze(html).text(markdown, title)
