"""One page's analysis: parse it, walk it (compiled), decide each block, and take the headline as its title
(:func:`analyze`, whose :class:`Analysis` renders the text); :func:`main_content` and :func:`main_content_text` are
the entry points.

Two ways to decide. The default (``learned``) walks every part of the page (hidden ones marked), lets the rules give
their verdicts, and keeps the blocks the block model chooses (:mod:`datapipe.extract.model`, with the rules' verdicts
among its features); it also tells the page's type (:mod:`datapipe.extract.pagetype`). The rules alone
(``learned=False``) skip what they name as boilerplate unread, and read the page again as a discussion when its
comments are its text (:func:`is_discussion`).

Why a module of its own: it is the glue that runs the other parts in order (the walk, :mod:`datapipe.extract.rules`,
the models, :mod:`datapipe.extract.render`) and holds the one rule that needs the whole page's decisions first (a
discussion).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import ModuleType

import numpy as np
from selectolax.lexbor import LexborHTMLParser

from datapipe.extract.blocks import HEADINGS, Block, Container, size_of
from datapipe.extract.features import FEATURES, block_features
from datapipe.extract.model import Models, shipped
from datapipe.extract.names import names_comments
from datapipe.extract.pagetype import PAGE_TYPES, page_features
from datapipe.extract.render import headline, render
from datapipe.extract.rules import SHORT_CHARS
from datapipe.extract.spaces import drop_invisible, nfc
from datapipe.extract.walk import WalkRules, compiled, learned

# a page keeping less prose (paragraphs of DISCUSSION_PARAGRAPH+ characters) than this may be a discussion, when
# parts named for comments hold this much text
DISCUSSION_PROSE, DISCUSSION_CHARS, DISCUSSION_PARAGRAPH = 200, 500, 100
_WORDS = FEATURES.index("words")  # the block features' column of log1p(words): a block's weight in choose()


@dataclass(frozen=True)
class Analysis:
    """A page's blocks, the named containers and why each block goes ("" when kept; ``title`` for the headline,
    which is the page's ``title``, with the ``<title>`` element's text when no headline is kept)."""

    blocks: list[Block]
    containers: list[Container]
    why: list[str]
    title: str | None = None
    page_type: str | None = None  # the learned extractor's: one of PAGE_TYPES
    page_type_score: float = 0.0  # its probability
    scores: list[float] | None = None  # the block model's probability of each block (the learned extractor)
    # what the page declares it is (JSON-LD scripts, microdata types, og:type) and its generators: the learned walk's
    declared: tuple[str, ...] = ()
    generators: tuple[str, ...] = ()

    def text(self, markdown: bool = False, title: bool = False) -> str:
        """The kept text; with ``title``, the title first (a ``#`` heading with ``markdown``), unless the text
        already begins with it."""
        body = render(self.blocks, self.why, markdown)
        if not title or not self.title:
            return body
        head = nfc(drop_invisible(("# " if markdown else "") + self.title))
        if body.startswith(head):
            return body
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


def analyze(
    html: str | bytes, url: str = "", *, learned: bool = True, models: Models | None = None
) -> Analysis:
    """Cut the page into blocks and decide each: by the block model over the rules' verdicts (``learned``, the
    default; ``models`` the shipped ones unless given), or by the rules alone (:mod:`datapipe.extract.content`).
    ``url`` (may be empty) helps tell the page's type. The headline is the title."""
    if learned:
        return _learned(html, url, models or shipped())
    walk, rules = compiled()
    tree = _parse(html)
    body = tree.body
    if body is None:
        return Analysis([], [], [], _title_element(tree))
    a = _walk(walk, rules, body.mem_id)
    if is_discussion(a):  # read it again, its comments as text (rare: an extra walk)
        a = _walk(walk, replace(rules, discussion=True), body.mem_id)
    top = headline(a.blocks, a.why)
    if top is None:
        return replace(a, title=_title_element(tree))
    why = list(a.why)
    why[top] = "title"
    return replace(a, why=why, title=a.blocks[top].text)


def _learned(html: str | bytes, url: str, models: Models) -> Analysis:
    """The learned extractor: every part walked, the rules' verdicts, then the blocks the model chooses
    (:func:`datapipe.extract.model.choose`); a block it drops keeps the rules' reason, or ``model`` where the rules
    kept it. The title is the headline (:func:`_headline_of`), out of the text (``title``) where the model keeps it:
    the page's title is metadata (issue 40), ``text(title=True)`` puts it on top. On WCXB, whose truth holds the
    headline, that costs 0.0007 of out-of-fold F1 (0.8709 with it in the text)."""
    tree = _parse(html)
    a = _walked(tree)
    blocks = a.blocks
    # the block model's input: each block's features, then its page's type probabilities (written in place below:
    # pagetype.with_page_types, as the training script makes it, copied the matrix); the page's features read
    # only the blocks' columns
    x = block_features(blocks, a.containers, a.why, extra=len(PAGE_TYPES))
    page = models.page_types.probabilities(page_features(url, list(a.declared), list(a.generators), x))[0]
    best = int(np.argmax(page))
    kind, score = models.page_types.classes[best], float(page[best])
    if not blocks:
        return replace(a, title=_title_element(tree), page_type=kind, page_type_score=score)
    x[:, len(FEATURES) :] = page  # rounded to float32 as astype rounds it
    p = models.blocks.probabilities(x)[:, 0]
    _, choose, kept_why = _compiled()
    keep = choose(p, np.maximum(np.expm1(x[:, _WORDS].astype(np.float64)), 1.0), models.blocks.floor)
    why = kept_why(keep, a.why)  # ["" if k else (w or "model") for k, w in zip(keep.tolist(), a.why)]
    top = _headline_of(blocks, why)
    # the <title> element is read only where no <h1> heads the page (a CSS query: not on every page)
    named = _title_element(tree) if top is None else None
    if named:
        top = _heading_named(blocks, why, named)
    if top is not None and not why[top]:
        why[top] = "title"  # the headline is the page's title: metadata, out of the text (as the rules do it)
    title = blocks[top].text if top is not None else named
    # made directly, not by dataclasses.replace (which reads the fields back and calls the same __init__)
    return Analysis(a.blocks, a.containers, why, title, kind, score, p.tolist(), a.declared, a.generators)


def walked(html: str | bytes) -> Analysis:
    """The learned walk's record of a page and the rules' verdicts, before the block model: what the model reads
    (the training script, ``classifiers/extractor.py``, reads the same)."""
    return _walked(_parse(html))


def _parse(html: str | bytes) -> LexborHTMLParser:
    """The page's tree. A ``str`` is handed to lexbor as the UTF-8 that selectolax would make of it
    (``str.encode("utf-8", "ignore")``), made by the compiled walk's :func:`utf8` (a test holds the bytes to
    CPython's): CPython's encoder was ~0.2 ms of a page's ~3 on Trafilatura's evaluation pages, ~0.13 this way."""
    if isinstance(html, str):
        html = compiled()[0].utf8(html)
    return LexborHTMLParser(html)


def _walked(tree: LexborHTMLParser) -> Analysis:
    walk, rules = learned()
    head = tree.head
    # pagetype.head_of, read from lexbor's structs (the same lists; a test holds the two together)
    declared, generators = walk.head_parts(head.mem_id) if head is not None else ([], [])
    body = tree.body
    if body is None:
        return Analysis([], [], [], declared=tuple(declared), generators=tuple(generators))
    walker = walk.Walk(rules)
    walker.run(body.mem_id)
    why = _compiled()[0](walker.blocks, walker.containers)
    return Analysis(
        walker.blocks,
        walker.containers,
        why,
        declared=(*declared, *walker.declared),
        generators=tuple(generators),
    )


@functools.cache
def _compiled() -> tuple[
    Callable[[list[Block], list[Container]], list[str]],
    Callable[[np.ndarray, np.ndarray, float], np.ndarray],
    Callable[[np.ndarray, list[str]], list[str]],
]:
    """The compiled rules' verdicts, block choice and the reasons after it (:func:`datapipe.extract.verdicts.decide`,
    :func:`datapipe.extract.scoring.choose`, :func:`datapipe.extract.scoring.kept_why`; the references are
    :func:`datapipe.extract.rules.decide`, :func:`datapipe.extract.model.choose` and the comprehension beside its
    call), loaded once: built with the walk by ``python -m datapipe.extract.build``."""
    from datapipe.extract.scoring import choose, kept_why
    from datapipe.extract.verdicts import decide

    return decide, choose, kept_why


def _headline_of(blocks: list[Block], why: list[str]) -> int | None:
    """The page's headline for the learned extractor: the first ``<h1>`` before the first kept block of text (a
    block of :data:`SHORT_CHARS` or more that is not a heading), kept as text or not."""
    for i, (b, w) in enumerate(zip(blocks, why, strict=True)):
        if b.kind == "h1":
            return i
        if not w and b.kind[0] != "h" and b.chars >= SHORT_CHARS:
            return None
    return None


def _heading_named(blocks: list[Block], why: list[str], named: str) -> int | None:
    """A page without an ``<h1>`` headline: the first kept heading before the first kept text whose text is the
    ``<title>`` element's (DocBook's and Publican's section pages head each section with an ``<h2>`` that is the
    page's title); it is the headline, so the title does not open the text too. On WCXB it moved 5 pages, F1
    unchanged (0.8702)."""
    for i, (b, w) in enumerate(zip(blocks, why, strict=True)):
        if w:
            continue
        if b.kind in HEADINGS:
            if " ".join(b.text.split()) == named:
                return i
        elif b.chars >= SHORT_CHARS:
            return None
    return None


def _title_element(tree: LexborHTMLParser) -> str | None:
    """The ``<title>`` element's text, whitespace collapsed (None when there is none or it is blank): the first
    ``<title>`` in document order, found by the compiled walk's :func:`first_title` (a CSS query,
    ``tree.css_first("title")``, its reference in the tests, cost more than finding it)."""
    root = tree.root
    if root is None:
        return None
    title: str | None = compiled()[0].first_title(root.mem_id)
    return title


def _walk(walk: ModuleType, rules: WalkRules, node: int) -> Analysis:
    walker = walk.Walk(rules)
    walker.run(node)
    return Analysis(walker.blocks, walker.containers, _compiled()[0](walker.blocks, walker.containers))


def main_content(
    html: str | bytes, *, markdown: bool = False, url: str = "", learned: bool = True
) -> tuple[str, str | None]:
    """The main content of a page (its text, or its UTF-8 bytes) as text, and its title
    (:mod:`datapipe.extract.content` tells how it decides)."""
    a = analyze(html, url, learned=learned)
    return a.text(markdown), a.title


def main_content_text(
    html: str | bytes, *, markdown: bool = False, title: bool = False, url: str = "", learned: bool = True
) -> str:
    """The main content of a page as text (with ``title``, the title first)."""
    return analyze(html, url, learned=learned).text(markdown, title)
