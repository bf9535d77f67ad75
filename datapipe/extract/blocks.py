"""The record the walk makes of a page and the rules read: :class:`Block` (a run of text between block boundaries,
with its link text) and :class:`Container` (a named element, as the range of blocks it holds), how a block is made
of the text gathered (:func:`make_block`), and which containers are the content roots (:func:`choose_root`).

Why a module of its own: the walk (:mod:`datapipe.extract.walk`), the rules (:mod:`datapipe.extract.rules`) and the
rendering (:mod:`datapipe.extract.render`) all speak of blocks and containers; kept here, none of them imports
another for the shapes alone. Depends on nothing else of the extractor but the two records themselves, which are
compiled (:mod:`datapipe.extract.records`: the compiled walk, verdicts and features set and read their fields in
place).
"""

from __future__ import annotations

import re

from datapipe.extract.records import Block, Container

# the kinds of heading block, and their levels
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BR = "\x00"  # a <br> in a block's parts, as treewalk.pyx writes it (the parser turns a NUL in the page into U+FFFD)
_BLANKS = re.compile(r"\n{3,}")
# the content roots (:func:`choose_root`): the candidate with most text must hold this many characters
ROOT_MIN_CHARS = 250
ROOT_SIBLING = 0.25  # another candidate of the root's tier with this share of its text is a root too
SIBLING_LINKS = 0.5  # unless more of its text than this is in links: a list of links (BBC's related links)
ROOT_SHARE = 0.3  # a root with less of its <main>'s text is a fragment of the article


# Han, kana and Hangul: one of these characters says about as much as WIDE_WEIGHT letters of an alphabet (a word of
# Chinese is 1-2 characters, of English 5-6 with its space), so the length thresholds that tell a line from text
# count them so (:func:`size_of`). On the tuning pages 3 did as 2 on the dev set and 0.0003 worse on the articles
_WIDE = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"
)
WIDE_WEIGHT = 2


def size_of(text: str) -> int:
    """A text's length in letters of an alphabet: a Han, kana or Hangul character counts WIDE_WEIGHT."""
    n = len(text)
    if text.isascii():
        return n
    return n + (WIDE_WEIGHT - 1) * len(_WIDE.findall(text))


def make_block(kind: str, raw: str, link_chars: int) -> Block | None:
    """A block from the text the walk gathered between two block boundaries (None when it holds no text):
    whitespace runs become one space (lines kept in preformatted text), ``<br>`` breaks the line, a row's cells
    lose their outer separators. The compiled walk calls it for preformatted text only and makes the rest's text
    as it gathers it (``treewalk.gather_text``); this function says what that must be, and a test holds it to it."""
    raw = raw.strip()
    if not raw:
        return None
    text = raw.replace(_BR, "\n") if kind == "pre" else " ".join(raw.split())
    if _BR in text:  # <br> breaks the line; the markup's own line breaks are spaces
        text = _BLANKS.sub("\n\n", "\n".join(line.strip() for line in text.split(_BR)).strip())
    if kind == "tr":  # cells of a row: no separator before the first or after the last
        text = text.strip(" |")
    n = len(text)
    return Block(kind, text, min(link_chars, n), n) if n else None


def is_inside(inner: Container, outer: Container) -> bool:
    """Whether ``outer`` holds all of ``inner``'s blocks."""
    return outer.start <= inner.start and inner.end <= outer.end


def choose_root(containers: list[Container], total: int) -> tuple[list[Container], list[Container]]:
    """The content roots: the article-body candidates (the one with most text, and others of the same tier with
    a fair share of its text: a body split into sections), each widened to the ``<article>`` around it (the
    lead and title often sit beside the body); else the ``<article>`` or, last, the ``<main>`` with most text. A
    root holding under :data:`ROOT_SHARE` of the ``<main>`` around it is a fragment: the ``<main>`` is taken."""
    tiers: dict[int, list[Container]] = {1: [], 2: [], 3: []}
    for c in containers:
        if c.kind == "root" and c.tier in tiers and c.chars >= ROOT_MIN_CHARS // 4:
            tiers[c.tier].append(c)
    best = None
    for tier in (1, 2, 3):
        if tiers[tier]:
            best = max(tiers[tier], key=lambda c: c.chars)
            if best.chars >= ROOT_MIN_CHARS:
                break
            best = None
    if best is None:
        return [], []
    roots = [
        c
        for c in tiers[best.tier]
        if c is best or (c.chars >= ROOT_SIBLING * best.chars and c.link_chars <= SIBLING_LINKS * c.chars)
    ]
    outermost: list[Container] = []
    for c in roots:  # in the order opened: an element before those inside it, even those with the same blocks
        if not any(is_inside(c, o) for o in outermost):
            outermost.append(c)
    roots = outermost
    cores = list(roots)
    out: list[Container] = []
    for root in roots:
        if root.tier == 1:
            around = [c for c in tiers[2] if is_inside(root, c)]
            if around:
                root = min(around, key=lambda c: c.chars)
        mains = [c for c in tiers[3] if is_inside(root, c) and c is not root]
        if mains:
            main = min(mains, key=lambda c: c.chars)
            if best.chars < ROOT_SHARE * main.chars:
                root = main
        if all(r is not root for r in out):
            out.append(root)
    return out, cores
