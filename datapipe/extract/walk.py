"""What the compiled tree walk (:mod:`datapipe.extract.treewalk`) is told of the rules: what each tag is to it
(skipped, a block, a link, a break, inline), the flags of the structural tags, the walk's thresholds, and the
callables it defers to (a name's verdict, a block, a container), as :class:`WalkRules`; :func:`compiled` loads the
built walk and refuses one built for another selectolax release.

Why a module of its own: this is the whole border between Python's rules and the compiled walk, the one place that
knows lexbor's tag ids and ``treewalk.pyx``'s codes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from importlib.metadata import version
from types import ModuleType

from selectolax.lexbor import LexborHTMLParser

from datapipe.extract.blocks import HEADINGS, ROOT_MIN_CHARS, Block, make_block
from datapipe.extract.names import (
    BOILERPLATE_ROLES,
    BOILERPLATE_TAGS,
    BOILERPLATE_TOKENS,
    COMMENT_TOKENS,
    LAYOUT_NAMES,
    PAID_TIER,
    PAID_TOKENS,
    ROOT_ONE,
    ROOT_TWO,
    STATE_PREFIXES,
    TEASER_TIER,
    TEASER_TOKENS,
)
from datapipe.extract.signals import HIDDEN_MASK, ROLE_BITS, WORD_BITS, tag_mask

# never rendered (their subtree is not visited)
# fmt: off
SKIP_TAGS = frozenset([
    "script", "style", "template", "svg", "math", "iframe", "object", "embed", "canvas", "video", "audio", "map",
    "button", "select", "option", "textarea", "input", "label", "head", "title", "meta", "link", "base",
    "figcaption", "picture", "rt", "rp",
])
# fmt: on
# each starts a new block
# fmt: off
BLOCK_TAGS = frozenset([
    "p", "div", "section", "article", "main", "header", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li",
    "dl", "dt", "dd", "table", "thead", "tbody", "tfoot", "tr", "caption", "blockquote", "pre", "address",
    "details", "summary", "center", "hr", "fieldset", "nav", "aside", "footer", "body", "html", "hgroup",
    "search", "figure",
])
# fmt: on
# elements whose attributes are read: blocks and the other containers a page names its parts with
STRUCTURAL = BLOCK_TAGS | {"td", "th", "ul", "ol", "form", "noscript"}
# what a tag is to the walk (the codes of ``treewalk.pyx``): a tag not named here is inline
_INLINE, _STRUCTURAL, _LINK, _BREAK, _SKIP = 1, 2, 3, 4, 5
_WHAT = {
    "a": _LINK,
    "br": _BREAK,
    **{t: _SKIP for t in SKIP_TAGS},
    **{t: _STRUCTURAL for t in STRUCTURAL},
}
# flags of a structural tag (the codes of ``treewalk.pyx``)
_F_BLOCK, _F_BOILER, _F_CELL, _F_ARTICLE, _F_MAIN, _F_WRAPPER, _F_FORM = 1, 2, 4, 8, 16, 32, 64
# a form is never text (a search box, a comment form, a login), except when it wraps this share of the page's text
# or more: ASP.NET pages put the whole page in one <form>. So is a <noscript>: a page that a script renders may
# keep its whole text there for readers without scripts (Discourse's forums put every post of a topic in one).
# The learned extractor reads every form (FORM_SHARE 0: a forum's posts, an event's details, a product grid sit in
# forms; its model judges their blocks), the rules only those that wrap the page
WRAPPERS = frozenset({"form", "noscript"})
WRAPPER_SHARE = 0.5
SKIP_SHARE = 0.1  # a part named as boilerplate with less of the page's text is decided without visiting it
# an element hidden by its inline style is not visited
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
# the block kind a structural tag gives the text inside it (a tag not here keeps the kind around it; "p" at first)
_KINDS = {**{h: h for h in HEADINGS}, "li": "li", "dd": "li", "dt": "li", "tr": "tr", "pre": "pre"}


def _tag_ids() -> dict[str, int]:
    """lexbor's id of each tag in :data:`_WHAT`: the walk reads a node's id, not its name. Ids of the standard
    tags are lexbor's constants; a custom tag's id is above them all, so it is inline, as it should."""
    doc = LexborHTMLParser("")
    return {tag: doc.create_node(tag).tag_id for tag in _WHAT}


@dataclass(frozen=True)
class WalkRules:
    """What the compiled walk (:mod:`datapipe.extract.treewalk`) needs to know of the rules: per lexbor tag
    id, what the tag is to the walk (:data:`_WHAT`), its flags, name and block kind; and the callables it defers
    to for a name's verdict and a preformatted block (the other blocks and the containers it makes itself: the
    compiled :mod:`datapipe.extract.records`)."""

    what: bytes
    flags: bytes
    names: tuple[str | None, ...]
    kinds: tuple[str | None, ...]
    roles: frozenset[str]
    # the class and id words (names.py) and the groups (signals.py) as the walk reads them: a treewalk.Vocabulary
    vocabulary: object
    make_block: Callable[[str, str, int], Block | None]
    hidden_style: Callable[[str], object]
    skip_share: float = SKIP_SHARE
    wrapper_share: float = WRAPPER_SHARE
    form_share: float = (
        WRAPPER_SHARE  # a <form>'s share to be read (the learned extractor reads every form: 0)
    )
    root_min_chars: int = ROOT_MIN_CHARS
    read_hidden: bool = (
        False  # hidden elements read, their blocks marked with signals.HIDDEN_MASK (a script reveals them)
    )
    # names judged as on a discussion, whose comments are its text (names.classify_discussion, not classify_name)
    discussion: bool = False


@functools.cache
def compiled() -> tuple[ModuleType, WalkRules]:
    """The compiled walk and its rules, checked to be built for the selectolax that parses (once per process)."""
    try:
        from datapipe.extract import treewalk
    except ImportError as e:
        raise ImportError(
            "datapipe's compiled tree walk is not built: run `python -m datapipe.extract.build` (make venv does)"
        ) from e
    installed = version("selectolax")
    if installed != treewalk.BUILT_FOR:
        raise ImportError(
            f"datapipe's compiled tree walk was built for selectolax {treewalk.BUILT_FOR}, selectolax {installed} "
            "is installed: run `python -m datapipe.extract.build`"
        )
    n = treewalk.TAGS
    what = bytearray([_INLINE]) * n
    flags = bytearray(n)
    names: list[str | None] = [None] * n
    kinds: list[str | None] = [None] * n
    masks = [0] * n
    for tag, tid in _tag_ids().items():
        what[tid] = _WHAT[tag]
        if tag not in STRUCTURAL:
            continue
        names[tid] = tag
        masks[tid] = tag_mask(tag)
        kinds[tid] = _KINDS.get(tag)
        flags[tid] = (
            (_F_BLOCK if tag in BLOCK_TAGS else 0)
            | (_F_BOILER if tag in BOILERPLATE_TAGS else 0)
            | (_F_CELL if tag in ("td", "th") else 0)
            | (_F_ARTICLE if tag == "article" else 0)
            | (_F_MAIN if tag == "main" else 0)
            | (_F_WRAPPER if tag in WRAPPERS else 0)
            | (_F_FORM if tag == "form" else 0)
        )
    rules = WalkRules(
        bytes(what),
        bytes(flags),
        tuple(names),
        tuple(kinds),
        BOILERPLATE_ROLES,
        vocabulary(treewalk, tuple(masks)),
        make_block,
        _HIDDEN_STYLE.search,
    )
    return treewalk, rules


def vocabulary(walk: ModuleType, tag_masks: tuple[int, ...]) -> object:
    """The walk's table of class and id words and of groups (``treewalk.Vocabulary``): what
    :func:`datapipe.extract.names.classify_name` (and ``classify_discussion``) and
    :func:`datapipe.extract.signals.mask_of` read, judged in C on the names' UTF-8, and the groups of each tag
    (``tag_masks``, by lexbor tag id) and of a hidden element. The Python classifiers remain the reference (a test
    holds the two to each other)."""
    return walk.Vocabulary(
        WORD_BITS,
        BOILERPLATE_TOKENS,
        TEASER_TOKENS,
        PAID_TOKENS,
        COMMENT_TOKENS,
        STATE_PREFIXES,
        ROOT_ONE,
        sorted(ROOT_TWO),
        sorted(LAYOUT_NAMES),
        ROLE_BITS,
        TEASER_TIER,
        PAID_TIER,
        tag_masks,
        HIDDEN_MASK,
    )


@functools.cache
def learned() -> tuple[ModuleType, WalkRules]:
    """The walk as the learned extractor runs it: every part visited (nothing named as boilerplate is skipped
    unread: the block model judges its blocks), every form read, and hidden elements read with their blocks marked
    (``t:hidden``): tabs, accordions and script-revealed containers hold a product's description or a page's
    article (on WCXB's pages reading them raised the best F1 a choice of blocks can reach from 0.957 to 0.978)."""
    walk, rules = compiled()
    return walk, replace(rules, skip_share=0.0, form_share=0.0, read_hidden=True)
