"""datapipe's main-content extractor (``extract: {method: datapipe}``): Trafilatura's precision at resiliparse's speed.

Why our own: resiliparse's main-content mode keeps navigation, share bars, teasers and comment threads (precision
0.79 on the tuning part of Trafilatura's evaluation pages), and Trafilatura is precise but runs its rules in Python
over lxml, at about 1/10 of resiliparse's speed. Why selectolax: it and resiliparse both parse with lexbor (C), and
selectolax's tree is the one whose C structs a compiled walk can read (:mod:`datapipe.extract.treewalk`, built by
``python -m datapipe.extract.build`` against the installed release's headers). On Trafilatura's 990 evaluation pages
the walk through selectolax's Python objects took 1.10 ms of a page's 1.91 ms (~1,750 nodes a page, each a Python
object, a property read and a dictionary lookup); compiled, the whole page takes 1.15 ms, of which parsing is 0.6 ms,
and the blocks and containers it records were identical on every one of the 990 pages. The compiled walk only moves
text: every rule below is here, in Python. ``benchmarks/extract_quality.py`` measures it against both peers.

How it decides. One pass over the tree cuts the page into blocks (paragraphs, headings, list items, table rows,
preformatted text) and records for each its text and how much of it is link text, and which named containers
hold which blocks. Then each block is kept or dropped (:func:`decide`, a pure function of that record):

1. **Never text**: scripts, styles, forms, buttons, templates, embedded media, figure captions (mostly photo
   credits; a figure's own content, such as a table, is read), ruby annotations and hidden elements (``hidden``,
   ``aria-hidden``, ``display:none``; inline ones too, such as CNN's hidden gallery captions) are not visited; a
   form holding :data:`WRAPPER_SHARE` of the page's text or more is visited (ASP.NET pages wrap the page in one).
2. **Boilerplate by name**: an element whose ``class`` or ``id`` names a page part that is never the article
   (navigation, menus, breadcrumbs, share and social bars, related and recommended teasers, comments, cookie,
   newsletter and donation boxes, ads, author boxes, captions and credits, tag lists, pagination, ...; the words
   in English and, for the boxes found inside articles, in German, Spanish, French, Italian, Dutch and Polish),
   or whose tag or ARIA role says the same
   (``nav``, ``aside``, ``footer``, ``role=navigation``, ...), drops its blocks. A name counts only when one of
   its word tokens (split at ``-``, ``_`` and camelCase; parts with digits are hashes and ignored) is in
   :data:`BOILERPLATE_TOKENS`, so ``canvas`` is no ``nav`` and ``commentary`` no ``comment``; a name that states a
   layout or state (``has-sidebar``, ``no-share``, a BEM ``--modifier``) names no part. A container that holds
   most of the page's or of the article's text, or holds the article or the body the page names, is never
   dropped by name; one that says by its tag or role what it is (an ``<aside>``, ``role=complementary``) must
   hold most of the paragraphs too (a live ticker beside a short article holds more text, in list items). A part named a ``teaser`` goes when a heading in it is a link (a card leading to another
   page); some sites name the article's own lead so, and it links nowhere. An ``<article>`` is dropped by name
   only when the name says what it is (a comment, a teaser card: :data:`ARTICLE_KINDS`), not when it says who
   wrote it (Drupal's ``author-sarayut``). A part named for a paywall (``paywall``, ``subscriber``, ``premium``:
   :data:`PAID_TOKENS`) goes unless it holds :data:`PAID_PROSE` characters of paragraphs, little of it links: then
   it is the article behind the paywall, not the box asking for a subscription (a paragraph so named is text).
3. **The content root**: when the page names its article body (``itemprop=articleBody``, ``article-body``,
   ``entry-content``, ...: :data:`ROOT_NAMES`), or else has an ``<article>`` or a ``<main>``, the candidate with
   the most text (and its siblings of the same kind with a fair share of it, unless mostly links) is the root,
   widened to the ``<article>`` around it; blocks outside go, except the title and lead (from the last ``<h1>``
   before the root).
4. **Link-heavy blocks** (teaser headlines, unnamed menus, tag lists, "read more") and short copyright notices
   (the sign, or "all rights reserved" in ten languages and the Chinese, Japanese and Korean forms) go; a long
   paragraph may link more of its words (:data:`PROSE_LINK_DENSITY`). A paragraph or heading of 15-99 characters
   that the page has three times or more is its template's (a gallery's caption on every slide, "Video Ad
   Feedback" under every video: :data:`REPEATED`).
5. **Context**: a short block (a date, a byline, "Share:") stays only between two kept blocks of real text, as
   jusText decides; a heading stays only when kept text follows it.
6. **The end of the article**: in the last half of the kept text, a section title that announces other pages of
   the site (``Related articles``, ``Das könnte Sie auch interessieren``, ``Les plus lus``: :data:`TAIL_TITLES`)
   ends it, as boilerpipe's terminating blocks do; when it titles a box of links or list items after which the
   article's paragraphs go on (:data:`BOX_RESUME` characters), only the box goes.
7. **The title**: the headline, the first kept ``<h1>`` before any kept text, is the page's ``title``, not its
   text, as Trafilatura and the article-extraction benchmarks' ground truths keep it (:func:`headline`; without
   one, the ``<title>`` element's text is the title). ``extract: {title: prepend}`` puts it back on top.

The output keeps structure where it is cheap: blocks separated by blank lines, list items as ``- `` lines, table
rows as ``|``-separated cells on one line, headings on their own lines, and with ``markdown=True`` headings as
``#`` lines, rows as ``| a | b |`` and preformatted text fenced. Whitespace runs (U+00A0 and the other Unicode
spaces included) become one ASCII space, except in preformatted text, soft hyphens go
(:func:`datapipe.extract.spaces.drop_invisible`) and the text is composed (NFC: :func:`datapipe.extract.spaces.nfc`).

Deterministic: no state outside one call except the caches of pure name classifiers.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from importlib.metadata import version
from types import ModuleType

from selectolax.lexbor import LexborHTMLParser

from datapipe.extract.spaces import drop_invisible, nfc

# Word tokens of a class or id that name a page part which is not the article, by concept. Matched as whole
# tokens of one class name or id (see name_tokens).
BOILERPLATE_GROUPS = {
    "navigation": "nav navbar navigation navi menu menubar submenu megamenu breadcrumb breadcrumbs crumbs skip "
    "skiplinks pagination pager prevnext",
    "page frame": "footer sidebar sidebars toolbar topbar popup login",
    "sharing": "share sharing shares sharebar shariff social socials sociallinks",
    "teasers": "related relatedposts relatedlinks relatedarticles relatedstories relatedcontent relatednews "
    "recommended recommendations recirculation promo promos verwandte aehnliche relacionados relacionadas "
    "connexes correlati gerelateerd powiazane",
    "ads": "advert adverts advertisement advertising ads adsense sponsor sponsored",
    "consent and sign-up": "cookie cookies consent gdpr newsletter subscribe signup infolettre boletin",
    "appeals": "donate donation donations donorbox spenden spende",
    "comments": "comment comments commentlist disqus respond rating ratings",
    "tags": "tags tagcloud taglist",
    "screen readers": "screenreader sronly",
    "credits": "caption captions credit credits copyright author authors authorbox authorbio bio byline "
    "bildunterschrift legende fotocredit",
}
BOILERPLATE_TOKENS = frozenset(t for group in BOILERPLATE_GROUPS.values() for t in group.split())
# Word tokens of a teaser: a card that shows a headline, a picture and a summary of another page. Some sites name
# the article's own lead so (``teaser-text``), so a part named a teaser goes only when it links away: when a
# heading in it is a link (:func:`links_away`).
TEASER_TOKENS = frozenset({"teaser", "teasers"})
# Word tokens of the comments under an article. On a discussion (a forum thread, a live ticker) they hold the
# page's text: see :func:`is_discussion`.
COMMENT_TOKENS = frozenset({"comment", "comments", "commentlist"})
TEASER_TIER = 4  # the walk records a part named a teaser as a container of this tier (1-3 are content roots)
# Word tokens of a part behind a paywall: the box that asks for a subscription, or the article's body that
# subscribers read (``<div class="paywall">`` around the rest of the article). The walk records it as a container
# of PAID_TIER; it goes unless it holds the article's prose (:func:`_paid_body`).
PAID_TOKENS = frozenset(
    {"paywall", "paywalled", "subscription", "subscriber", "subscribers", "premium", "metered"}
)
PAID_TIER = 5
# What an <article> element can be that is not the page's article: a comment, a teaser card, a menu entry, an ad.
# The vocabulary's other words name a part of an article or a state of it (``author-sarayut``, Drupal's class for
# who wrote the node; ``docked-sharebar-container``), not what the element is.
ARTICLE_KINDS = frozenset(
    " ".join(BOILERPLATE_GROUPS[g] for g in ("comments", "teasers", "navigation", "ads")).split()
)
LAYOUT_NAMES = frozenset(
    {"main", "content", "page", "wrapper", "container", "site", "Main", "Content", "Page"}
)
# A class name that starts with one of these states a layout or state, not a part: ``has-sidebar``,
# ``no-share``, ``with-navigation``, ``is-paywall``, ``enable-comments``.
STATE_PREFIXES = frozenset(
    [
        "has",
        "no",
        "with",
        "without",
        "is",
        "enable",
        "enabled",
        "disable",
        "disabled",
        "show",
        "hide",
        "can",
        "allow",
        "js",
        "one",
        "two",
    ]
)
BOILERPLATE_TAGS = frozenset({"nav", "aside", "footer", "menu", "dialog"})
BOILERPLATE_ROLES = frozenset(
    {
        "navigation",
        "complementary",
        "contentinfo",
        "banner",
        "search",
        "dialog",
        "alertdialog",
        "menu",
        "menubar",
    }
)
# never rendered (their subtree is not visited)
SKIP_TAGS = frozenset(
    [
        "script",
        "style",
        "noscript",
        "template",
        "svg",
        "math",
        "iframe",
        "object",
        "embed",
        "canvas",
        "video",
        "audio",
        "map",
        "button",
        "select",
        "option",
        "textarea",
        "input",
        "label",
        "head",
        "title",
        "meta",
        "link",
        "base",
        "figcaption",
        "picture",
        "rt",
        "rp",
    ]
)
# each starts a new block
BLOCK_TAGS = frozenset(
    [
        "p",
        "div",
        "section",
        "article",
        "main",
        "header",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "ul",
        "ol",
        "li",
        "dl",
        "dt",
        "dd",
        "table",
        "thead",
        "tbody",
        "tfoot",
        "tr",
        "caption",
        "blockquote",
        "pre",
        "address",
        "details",
        "summary",
        "center",
        "hr",
        "fieldset",
        "nav",
        "aside",
        "footer",
        "body",
        "html",
        "hgroup",
        "search",
        "figure",
    ]
)
# elements whose attributes are read: blocks and the other containers a page names its parts with
STRUCTURAL = BLOCK_TAGS | {"td", "th", "ul", "ol", "form"}
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
# what a tag is to the walk (the codes of ``treewalk.pyx``): a tag not named here is inline
_INLINE, _STRUCTURAL, _LINK, _BREAK, _SKIP = 1, 2, 3, 4, 5
_BR = "\x00"  # a <br> in a block's parts (the parser turns a NUL in the page into U+FFFD)
_WHAT = {
    "a": _LINK,
    "br": _BREAK,
    **{t: _SKIP for t in SKIP_TAGS},
    **{t: _STRUCTURAL for t in STRUCTURAL},
}
# flags of a structural tag (the codes of ``treewalk.pyx``)
_F_BLOCK, _F_BOILER, _F_CELL, _F_ARTICLE, _F_MAIN, _F_WRAPPER = 1, 2, 4, 8, 16, 32
# a form is never text (a search box, a comment form, a login), except when it wraps this share of the page's text
# or more: ASP.NET pages put the whole page in one <form>
WRAPPERS = frozenset({"form"})
WRAPPER_SHARE = 0.5


def _tag_ids() -> dict[str, int]:
    """lexbor's id of each tag in :data:`_WHAT`: the walk reads a node's id, not its name. Ids of the standard
    tags are lexbor's constants; a custom tag's id is above them all, so it is inline, as it should."""
    doc = LexborHTMLParser("")
    return {tag: doc.create_node(tag).tag_id for tag in _WHAT}


_CAMEL = re.compile(r"([a-z])([A-Z])")
# "all rights reserved" in the languages of the dev set, and the CJK forms of a copyright line (patterns)
RESERVED = (
    "all rights reserved",
    "alle rechte vorbehalten",
    "tous droits réservés",
    "todos los derechos reservados",
    "todos os direitos reservados",
    "tutti i diritti riservati",
    "wszelkie prawa zastrzeżone",
    "все права защищены",
    "všechna práva vyhrazena",
    "alle rechten voorbehouden",
    "版[权權](?:所有|[声聲]明|[说說]明|保[护護][:：])",
    "無断(?:転載|複製)",
    r"무단\s?(?:전재|복제|배포)",
)
_NOTICE = re.compile(r"©|\(c\) ?\d{4}|\bcopyright\b|" + "|".join(RESERVED), re.IGNORECASE)
# substrings of which one is in every notice (each of RESERVED holds one): the cheap test before the pattern
_NOTICE_MARKS = (
    "©", "(c)", "copyright", "rights reserved", "vorbehalten", "réservés", "reservados", "riservati",
    "zastrzeżone", "защищены", "vyhrazena", "voorbehouden", "版", "無断", "무단",
)  # fmt: skip
_BLANKS = re.compile(r"\n{3,}")
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)

# Names of an article body (the first tier of content roots); matched as word-token sequences of a class or id.
ROOT_NAMES = (
    "article body",
    "articlebody",
    "article content",
    "article text",
    "articletext",
    "entry content",
    "entry body",
    "post content",
    "post body",
    "postbody",
    "post text",
    "post entry",
    "story body",
    "story content",
    "text content",
    "rich text",
    "richtext",
    "field body",
    "body text",
    "page content",
    "main text",
)
SKIP_SHARE = 0.1  # a part named as boilerplate with less of the page's text is decided without visiting it
ROOT_MIN_CHARS = 250
ROOT_SIBLING = 0.25  # another candidate of the root's tier with this share of its text is a root too
SIBLING_LINKS = 0.5  # unless more of its text than this is in links: a list of links (BBC's related links)
ROOT_SHARE = 0.3  # a root with less of its <main>'s text is a fragment of the article
KEEP_SHARE = 0.6  # a container named as boilerplate that holds this share of the page's text is not dropped
LINK_DENSITY = 0.35  # link text / text above which a block goes
# a paragraph this long is prose, whose writer linked many of its words, below this link share: menus and teaser
# lists are many short links, not one long run of text
PROSE_CHARS, PROSE_LINK_DENSITY = 200, 0.6
PAID_PROSE = 400  # a part named for a paywall with this much paragraph text holds the article behind it
SHORT_CHARS = 50  # a block shorter than this is judged by its neighbours
# a paragraph or heading under REPEATED_CHARS that the page has REPEATED times or more is its template's (a
# gallery's caption on every slide, "Video Ad Feedback" under every video), not the article's; a shorter one is a
# label a record repeats ("Goals", "Lineups" for every match of a results page), read with the text after it
REPEATED, REPEATED_MIN_CHARS, REPEATED_CHARS = 3, 15, 100
NOTICE_CHARS = 200  # a block this short with a copyright sign or "all rights reserved" is a notice
HEADING_REACH = 3  # how many blocks after a heading are searched for its text
LONG_HEADING = 100  # a heading this long is text set large, and stays without text after it
SHORT_NEEDS = 2  # how many of its two context blocks must be kept long ones for a short block to stay
GOOD, SHORT, BAD = range(3)
SHORT_EXEMPT = ("li", "tr", "pre")  # list items, table rows and code are short by nature
# Section titles that announce other pages of the site (boilerpipe's "terminating blocks"), by language: whole-
# block matches, case-blind. Only titles of lists are here: words that also open a box inside an article ("read
# also", "Lesen Sie auch", "Mehr zum Thema") or a real section ("Empfehlungen", "More about this recipe") are not.
TAIL_TITLES = {
    "en": r"related (?:articles?|posts?|stories|content|news|reading)|you (?:may|might) also (?:like|enjoy)|"
    r"more stories|most (?:read|popular|viewed|shared)(?: articles| stories| posts)?|"
    r"popular (?:posts|articles|stories)|recommended (?:for you|articles|stories)",
    "de": r"das könnte (?:sie|dich) auch interessieren|weitere (?:artikel|nachrichten|beiträge|meldungen|news)"
    r"(?: .{0,40})?|ähnliche (?:artikel|beiträge|themen|nachrichten)|meist ?gelesene?(?: artikel)?|"
    r"beliebte (?:artikel|beiträge)|verwandte (?:artikel|beiträge|themen)",
    "fr": r"sur le même (?:sujet|thème)|articles similaires|les plus lus|vous aimerez aussi",
    "es": r"(?:te|le) puede interesar|(?:noticias|artículos|notas) relacionad[ao]s|lo más (?:leído|visto)|"
    r"más noticias",
    "pl": r"najczęściej czytane|podobne artykuły",
    "it": r"articoli correlati|potrebbe interessarti|i più letti",
}
_TAIL_TITLE = re.compile(r"(?:" + "|".join(TAIL_TITLES.values()) + r")[\s:.!?…»>-]*", re.IGNORECASE)
TAIL_TITLE_CHARS = 60  # a block longer than this is text, not a section title
TAIL_SHARE = 0.5  # a section title ends the article only after this share of the kept text
BOX_RESUME = 600  # paragraph characters after a titled box of links that say the article goes on past it
BOX_PARAGRAPH = 100  # ... counted in paragraphs of this many characters or more
# a page keeping less prose (paragraphs of DISCUSSION_PARAGRAPH+ characters) than this may be a discussion, when
# parts named for comments hold this much text
DISCUSSION_PROSE, DISCUSSION_CHARS, DISCUSSION_PARAGRAPH = 200, 500, 100


def name_tokens(name: str) -> list[str]:
    """Word tokens of one class name or id: ``"postShare-bar"`` -> ``["post", "share", "bar"]``; a part with a
    digit is a generated hash or a number and gives none (``"Layout_main__2pNav"`` -> ``["layout", "main"]``)."""
    out: list[str] = []
    for part in _PARTS.split(name):
        if not part.isalpha():  # empty, or a digit in it (parts are ASCII letters and digits)
            continue
        if part.islower():
            out.append(part)
        else:
            out.extend(_CAMEL.sub(r"\1 \2", part).lower().split())
    return out


_PARTS = re.compile(r"[^A-Za-z0-9]+")
# the root names as token tuples: one word (``articlebody``) or two (``article body``)
_ROOT_ONE = frozenset(n for n in ROOT_NAMES if " " not in n)
_ROOT_TWO = frozenset(tuple(n.split()) for n in ROOT_NAMES if " " in n)
assert all(len(t) == 2 for t in _ROOT_TWO)


def _root_end(toks: list[str]) -> int:
    """Where the first content-root name in the tokens ends, or 0 when none is there."""
    for i, tok in enumerate(toks):
        if tok in _ROOT_ONE:
            return i + 1
        if i + 1 < len(toks) and (tok, toks[i + 1]) in _ROOT_TWO:
            return i + 2
    return 0


# every vocabulary token and content-root name contains one of these: a name without any is decided by one
# regular-expression search, without being split into tokens (most names are such). Matched on the lowered
# name: with ``re.IGNORECASE`` a search that finds nothing took 4-7x as long.
HINTS = [
    "nav",
    "menu",
    "crumb",
    "foot",
    "side",
    "bar",
    "shar",
    "social",
    "relat",
    "recommend",
    "recirc",
    "promo",
    "advert",
    "ads",
    "sponsor",
    "cookie",
    "consent",
    "gdpr",
    "newsletter",
    "subscri",
    "signup",
    "paywall",
    "comment",
    "disqus",
    "respond",
    "rating",
    "tag",
    "pag",
    "prevnext",
    "login",
    "popup",
    "skip",
    "screen",
    "sronly",
    "author",
    "bio",
    "caption",
    "credit",
    "copyright",
    "byline",
    "body",
    "content",
    "text",
    "entry",
    "story",
    "post",
    "teaser",
    "premium",
    "metered",
    "donat",
    "donor",
    "spende",
    "infolettre",
    "boletin",
    "verwandt",
    "aehnlich",
    "relacion",
    "connexe",
    "correlat",
    "gerelateerd",
    "powiazan",
    "legende",
    "bildunter",
]


def trie_pattern(words: list[str]) -> str:
    """A regular expression matching any of ``words``, written as their prefix tree (``s(?:hare|ide)``): Python's
    engine tries each branch of a flat alternation at every position, and on the class names of Trafilatura's
    990 pages the tree form searched in 0.70 us a name against 1.68 us. A word that has a shorter word as prefix
    adds nothing to a search."""
    trie: dict[str, dict] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def branch(node: dict[str, dict]) -> str:
        if "" in node:
            return ""
        alts = [re.escape(ch) + branch(node[ch]) for ch in sorted(node)]
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return branch(trie)


_HINT = re.compile(trie_pattern(HINTS))


@functools.lru_cache(maxsize=16384)
def classify_one(name: str) -> int:
    """One class name or id: 1 names a content root, -1 boilerplate, :data:`TEASER_TIER` a teaser, 0 none of them."""
    if not _HINT.search(name.lower()):
        return 0
    # a BEM modifier (``o-section--has-ads``) states, it names nothing
    toks = name_tokens(name.split("--", 1)[0])
    if not toks or toks[0] in STATE_PREFIXES:
        return 0
    end = _root_end(toks)
    if end:
        # a part named after the body (``ArticleBody-related-coverage``) is that part, not the body
        return -1 if not BOILERPLATE_TOKENS.isdisjoint(toks[end:]) else 1
    if not BOILERPLATE_TOKENS.isdisjoint(toks):
        return -1
    if not TEASER_TOKENS.isdisjoint(toks):
        return TEASER_TIER
    return PAID_TIER if not PAID_TOKENS.isdisjoint(toks) else 0


@functools.lru_cache(maxsize=65536)
def classify_name(names: str) -> tuple[bool, int]:
    """(whether a class-and-id value names boilerplate, the content-root tier it names, :data:`TEASER_TIER` or 0),
    judged per class name; a content-root name wins over a boilerplate one (``entry-content no-share``), and
    that over a teaser's.

    Digits are ignored by :func:`name_tokens` (a part with one is a hash or a number), so every digit becomes
    ``0`` first: ``menu-item-1234`` and ``menu-item-1235`` are then one cache entry. A page has ~190 distinct
    class values, most unseen on earlier pages, and judging them anew was half the walk's time. Cached twice: as
    written (a page repeats half its values) and with numbers zeroed."""
    return _classify_value(names.encode("utf-8", "surrogatepass").translate(_ZEROS))


_ZEROS = bytes.maketrans(b"123456789", b"000000000")  # on bytes: 10x as fast as str.translate


@functools.lru_cache(maxsize=65536)
def _classify_value(key: bytes) -> tuple[bool, int]:
    names = key.decode("utf-8", "surrogatepass")
    if not _HINT.search(names.lower()):
        return False, 0
    boiler = teaser = paid = False
    for name in names.split():
        verdict = classify_one(name)
        if verdict == 1:
            return False, 1
        if name in LAYOUT_NAMES:  # ``<div id="main" class="sidebar-right">``: the page's frame, not a part
            return False, 0
        boiler = boiler or verdict < 0
        teaser = teaser or verdict == TEASER_TIER
        paid = paid or verdict == PAID_TIER
    if boiler:
        return True, 0
    return False, TEASER_TIER if teaser else PAID_TIER if paid else 0


@functools.lru_cache(maxsize=4096)
def classify_discussion(names: str) -> tuple[bool, int]:
    """:func:`classify_name` on a page read as a discussion: a value that names boilerplate only by comment words
    (``comment-list``, ``MtnComment``, ``live-match-comment``) names text."""
    boiler, tier = classify_name(names)
    if boiler and all(classify_one(name) >= 0 or _comments_only(name) for name in names.split()):
        return False, tier
    return boiler, tier


@functools.lru_cache(maxsize=4096)
def _comments_only(name: str) -> bool:
    toks = name_tokens(name.split("--", 1)[0])
    end = _root_end(toks)
    named = BOILERPLATE_TOKENS.intersection(toks[end:])
    return bool(named) and named <= COMMENT_TOKENS


def forget_names() -> None:
    """Empty the name classifiers' caches, so that the next page is judged as on a fresh process (benchmarks)."""
    for cached in (
        classify_name,
        _classify_value,
        classify_one,
        classify_discussion,
        _comments_only,
    ):
        cached.cache_clear()


@dataclass(slots=True)
class Block:
    """A run of text between block boundaries, with what the decision needs."""

    kind: str  # "p", "h1".."h6", "li", "tr", "pre"
    text: str
    link_chars: int
    chars: int


@dataclass(slots=True)
class Container:
    """An element whose blocks are judged together: boilerplate by name (kind "boiler"), a root candidate (kind
    "root", tiers 1-3) or a part named a teaser (kind "root", :data:`TEASER_TIER`)."""

    kind: str
    tier: int
    start: int
    end: int = -1
    chars: int = 0
    tag: str = ""
    attrs: dict[str, str | None] | None = None
    skipped: bool = False  # decided during the walk: its text was not visited
    link_chars: int = 0  # of ``chars``, those in links (set by :func:`decide`)

    @property
    def name(self) -> str:
        """Tag, role, id and class (``div@navigation#menu.main-nav|top``): what the audit shows. Written only
        when asked for: most containers hold no kept-or-dropped block worth naming."""
        out = self.tag
        if self.attrs:
            for key, mark in (("role", "@"), ("id", "#"), ("class", ".")):
                value = self.attrs.get(key)
                if value:
                    out += mark + "|".join(value.split())
        return out


_KINDS = {**{h: h for h in HEADINGS}, "li": "li", "dd": "li", "dt": "li", "tr": "tr", "pre": "pre"}


def make_block(kind: str, raw: str, link_chars: int) -> Block | None:
    """A block from the text the walk gathered between two block boundaries (None when it holds no text):
    whitespace runs become one space (lines kept in preformatted text), ``<br>`` breaks the line, a row's cells
    lose their outer separators."""
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


def _inside(inner: Container, outer: Container) -> bool:
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
        if not any(_inside(c, o) for o in outermost):
            outermost.append(c)
    roots = outermost
    cores = list(roots)
    out: list[Container] = []
    for root in roots:
        if root.tier == 1:
            around = [c for c in tiers[2] if _inside(root, c)]
            if around:
                root = min(around, key=lambda c: c.chars)
        mains = [c for c in tiers[3] if _inside(root, c) and c is not root]
        if mains:
            main = min(mains, key=lambda c: c.chars)
            if best.chars < ROOT_SHARE * main.chars:
                root = main
        if all(r is not root for r in out):
            out.append(root)
    return out, cores


def _is_notice(text: str) -> bool:
    """A copyright sign or words in the text; the regular expression only where a plain substring test found a
    candidate (a case-blind search that finds nothing took a quarter of the decisions' time)."""
    low = text.lower()
    return any(mark in low for mark in _NOTICE_MARKS) and bool(_NOTICE.search(text))


def _paid_body(c: Container, prose: int) -> bool:
    """Whether a part named for a paywall holds the article's text behind it, not the box that asks for a
    subscription: :data:`PAID_PROSE` characters of paragraphs or more, little of its text links. (A paragraph
    named so is always text: Condé Nast's sites name every paragraph after the first ``paywall``.)"""
    return prose >= PAID_PROSE and c.link_chars <= LINK_DENSITY * c.chars


def _holds_most(c: Container, prose: int, outer_chars: int, outer_prose: int) -> bool:
    """Whether a part named as boilerplate holds most of an outer part's text (``prose``: its paragraphs'
    characters), so that it wraps the article and is not dropped. A part that says by its tag or ARIA role what it
    is (an ``<aside>``, ``role=complementary``) must hold most of the paragraphs too: a live ticker or a list of
    headlines beside a short article has more text than the article, in list items and links."""
    if c.chars < KEEP_SHARE * outer_chars:
        return False
    stated = c.tag in BOILERPLATE_TAGS or bool(c.attrs and c.attrs.get("role") in BOILERPLATE_ROLES)
    return not stated or prose >= KEEP_SHARE * outer_prose


def links_away(blocks: list[Block]) -> bool:
    """Whether a heading among the blocks is a link: a teaser's headline leads to its article, an article's
    own subheadings lead nowhere."""
    return any(b.kind in HEADINGS and b.link_chars > b.chars // 2 for b in blocks)


def decide(blocks: list[Block], containers: list[Container]) -> list[str]:
    """Why each block goes ("" for a block kept): a pure function of the walk's record (see the module docstring).
    The first rule that drops a block names it: ``name:<the container>``, ``teaser:<the container>``,
    ``outside-root``, ``links``, ``notice``, ``short``, ``heading``, ``tail``."""
    n = len(blocks)
    total = sum(b.chars for b in blocks)
    why = [""] * n
    upto = [0] * (n + 1)  # upto[i]: characters in the blocks before block i
    links = [0] * (n + 1)  # links[i]: of them, those in links
    prose = [0] * (n + 1)  # prose[i]: of them, those in paragraphs
    for i, b in enumerate(blocks):
        upto[i + 1] = upto[i] + b.chars
        links[i + 1] = links[i] + b.link_chars
        prose[i + 1] = prose[i] + (b.chars if b.kind == "p" else 0)
    for c in containers:
        if not c.skipped:
            c.chars = upto[c.end] - upto[c.start]
            c.link_chars = links[c.end] - links[c.start]
            if c.kind == "boiler" and c.tag == "article" and not _names_kind(c.attrs):
                c.kind, c.tier = "root", 2  # named for its author or a state of it: an article
    roots, cores = choose_root(containers, total)
    # 2. boilerplate by name, and teasers that link away (not a container around a root or the candidate it
    # grew from, or holding most of the text)
    for c in containers:
        if c.start == c.end:
            continue
        if c.kind == "boiler":
            label = "name:"
        elif c.tier == TEASER_TIER and links_away(blocks[c.start : c.end]):
            label = "teaser:"
        elif c.tier == PAID_TIER and c.tag != "p" and not _paid_body(c, prose[c.end] - prose[c.start]):
            label = "paywall:"
        else:
            continue
        mine = prose[c.end] - prose[c.start]
        if (
            _holds_most(c, mine, total, prose[n])
            or any(
                _inside(r, c)
                or (_inside(c, r) and _holds_most(c, mine, r.chars, prose[r.end] - prose[r.start]))
                for r in roots
            )
            or any(_inside(r, c) for r in cores)
        ):
            continue  # a wrapper named for a state (``<div class="entry share">``) around the article
        label += c.name
        for i in range(c.start, c.end):
            why[i] = why[i] or label
    # 3. the content roots, and the title and lead: from the last <h1> before the first root to it
    if roots:
        inside = [False] * n
        for r in roots:
            inside[r.start : r.end] = [True] * (r.end - r.start)
        first = min(r.start for r in roots)
        title = max((i for i in range(first) if blocks[i].kind == "h1"), default=first)
        inside[title:first] = [True] * (first - title)
        for i in range(n):
            if not inside[i] and not why[i]:
                why[i] = "outside-root"
    # 4. link-heavy blocks, and copyright notices; and a line the page's template repeats
    seen = Counter(b.text for b in blocks if b.kind == "p" or b.kind in HEADINGS)
    for i, b in enumerate(blocks):
        if why[i]:
            continue
        if (
            (b.kind == "p" or b.kind in HEADINGS)
            and seen[b.text] >= REPEATED
            and REPEATED_MIN_CHARS <= b.chars < REPEATED_CHARS
        ):
            why[i] = "repeated"
            continue
        long_prose = b.kind == "p" and b.chars >= PROSE_CHARS
        if b.link_chars > (PROSE_LINK_DENSITY if long_prose else LINK_DENSITY) * b.chars:
            why[i] = "links"
        elif b.chars < NOTICE_CHARS and _is_notice(b.text):
            why[i] = "notice"
    # 5. a short block stays only between kept long ones: the nearest block on each side that is not itself
    # short (jusText's context rule)
    state = [
        BAD if w else GOOD if b.chars >= SHORT_CHARS and b.kind[0] != "h" else SHORT
        for b, w in zip(blocks, why, strict=True)
    ]
    if GOOD not in state:  # a page of short blocks only (verse, a list, a table): they are its text
        state = [BAD if w else GOOD for w in why]
    before = [BAD] * n
    last = BAD
    for i in range(n):
        before[i] = last
        if state[i] != SHORT:
            last = state[i]
    last = BAD
    for i in range(n - 1, -1, -1):
        kind = blocks[i].kind
        short = state[i] == SHORT and kind[0] != "h" and kind not in SHORT_EXEMPT
        if short and (before[i] == GOOD) + (last == GOOD) < SHORT_NEEDS:
            why[i] = "short"
        if state[i] != SHORT:
            last = state[i]
    # then a heading stays only when kept text (or a kept subheading) follows it within a few blocks, before
    # the next heading of its level
    for i in range(n - 1, -1, -1):
        b = blocks[i]
        if why[i] or b.kind not in HEADINGS or b.chars >= LONG_HEADING:
            continue
        level = HEADINGS[b.kind]
        for j in range(i + 1, min(n, i + 1 + HEADING_REACH)):
            nxt = blocks[j].kind
            if nxt in HEADINGS and HEADINGS[nxt] <= level:
                break
            if not why[j]:
                break
        else:
            j = n
        if j >= n or why[j] or (blocks[j].kind in HEADINGS and HEADINGS[blocks[j].kind] <= level):
            why[i] = "heading"
    # 6. the end of the article: a section title that announces other pages of the site, in the last part of
    # the kept text, ends it (the list it titles follows); one that the article's prose follows again titles a
    # box inside the article, which goes alone
    kept = 0
    tail = TAIL_SHARE * sum(b.chars for b, w in zip(blocks, why, strict=True) if not w)
    i = 0
    while i < n:
        b = blocks[i]
        if not why[i] and b.chars <= TAIL_TITLE_CHARS and _TAIL_TITLE.fullmatch(b.text):
            resume = _prose_after(blocks, why, i)
            if resume < n:
                for j in range(i, resume):
                    why[j] = why[j] or "box"
                i = resume
                continue
            if kept >= tail:
                for j in range(i, n):
                    why[j] = why[j] or "tail"
                break
        if not why[i]:
            kept += b.chars
        i += 1
    return why


def _prose_after(blocks: list[Block], why: list[str], i: int) -> int:
    """Where the article goes on after a box titled at block ``i`` (``len(blocks)`` when it does not): the first
    kept paragraph (:data:`BOX_PARAGRAPH` characters or more, little of it links) after a box of links or list items,
    with at least :data:`BOX_RESUME` characters of such paragraphs from there on. A title followed by a teaser's
    summary, or by the page's last paragraphs, ends the article as before."""
    n = len(blocks)
    for j in range(i + 1, n):
        b = blocks[j]
        if (
            not why[j]
            and b.kind == "p"
            and b.chars >= BOX_PARAGRAPH
            and b.link_chars <= LINK_DENSITY * b.chars
        ):
            box = range(i + 1, j)
            listed = sum(why[k] == "links" or blocks[k].kind == "li" for k in box)
            if not box or 2 * listed < len(box):
                return n
            more = sum(
                c.chars
                for c, w in zip(blocks[j:], why[j:], strict=True)
                if not w and c.kind == "p" and c.chars >= BOX_PARAGRAPH
            )
            return j if more >= BOX_RESUME else n
    return n


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
    prose = sum(
        b.chars
        for b, w in zip(a.blocks, a.why, strict=True)
        if not w and b.kind == "p" and b.chars >= DISCUSSION_PARAGRAPH
    )
    if prose >= DISCUSSION_PROSE:
        return False
    said = 0
    held = [False] * len(a.blocks)
    for c in a.containers:
        if c.kind != "boiler" or not c.attrs or not _names_comments(c.attrs):
            continue
        if c.skipped:  # not visited: the walk measured its text
            said += c.chars
        else:
            held[c.start : c.end] = [True] * (c.end - c.start)
    said += sum(b.chars for b, h in zip(a.blocks, held, strict=True) if h)
    return said >= DISCUSSION_CHARS


def _class_and_id(attrs: dict[str, str | None]) -> str:
    """A container's class and id as the walk hands them to the name classifiers."""
    return " ".join(v for v in (attrs.get("class"), attrs.get("id")) if v)


def _names_kind(attrs: dict[str, str | None] | None) -> bool:
    """Whether an <article> named as boilerplate is named for what it is (:data:`ARTICLE_KINDS`: a comment, a
    card; or its ARIA role says so), not for its author or a state of it."""
    if not attrs or attrs.get("role") in BOILERPLATE_ROLES:
        return True
    names = _class_and_id(attrs)
    return any(
        classify_one(name) < 0 and not ARTICLE_KINDS.isdisjoint(name_tokens(name.split("--", 1)[0]))
        for name in names.split()
    )


def _names_comments(attrs: dict[str, str | None]) -> bool:
    names = _class_and_id(attrs)
    return bool(names) and classify_name(names)[0] and not classify_discussion(names)[0]


@dataclass(frozen=True)
class WalkRules:
    """What the compiled walk (:mod:`datapipe.extract.treewalk`) needs to know of the rules above: per lexbor tag
    id, what the tag is to the walk (:data:`_WHAT`), its flags, name and block kind; and the callables it defers
    to for a name's verdict, a block and a container."""

    what: bytes
    flags: bytes
    names: tuple[str | None, ...]
    kinds: tuple[str | None, ...]
    roles: frozenset[str]
    classify: Callable[[str], tuple[bool, int]]
    make_block: Callable[[str, str, int], Block | None]
    container: type[Container]
    hidden_style: Callable[[str], object]
    skip_share: float = SKIP_SHARE
    wrapper_share: float = WRAPPER_SHARE
    root_min_chars: int = ROOT_MIN_CHARS


@functools.cache
def _compiled() -> tuple[ModuleType, WalkRules]:
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
    for tag, tid in _tag_ids().items():
        what[tid] = _WHAT[tag]
        if tag not in STRUCTURAL:
            continue
        names[tid] = tag
        kinds[tid] = _KINDS.get(tag)
        flags[tid] = (
            (_F_BLOCK if tag in BLOCK_TAGS else 0)
            | (_F_BOILER if tag in BOILERPLATE_TAGS else 0)
            | (_F_CELL if tag in ("td", "th") else 0)
            | (_F_ARTICLE if tag == "article" else 0)
            | (_F_MAIN if tag == "main" else 0)
            | (_F_WRAPPER if tag in WRAPPERS else 0)
        )
    rules = WalkRules(
        bytes(what),
        bytes(flags),
        tuple(names),
        tuple(kinds),
        BOILERPLATE_ROLES,
        classify_name,
        make_block,
        Container,
        _HIDDEN_STYLE.search,
    )
    return treewalk, rules


def analyze(html: str) -> Analysis:
    """Cut the page into blocks and decide each (see the module docstring); the headline is the title."""
    walk, rules = _compiled()
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


def main_content(html: str, *, markdown: bool = False) -> tuple[str, str | None]:
    """The main content of a page as text, and its title (see the module docstring for how it decides)."""
    a = analyze(html)
    return a.text(markdown), a.title


def main_content_text(html: str, *, markdown: bool = False, title: bool = False) -> str:
    """The main content of a page as text (with ``title``, the title first)."""
    return analyze(html).text(markdown, title)
