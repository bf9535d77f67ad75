"""The extractor's vocabulary: which ``class`` and ``id`` names, tags and ARIA roles name a part of a page that is
not the article (navigation, share bars, teasers, comments, a paywall, ...) and which name the article's body, and
the cached classifiers that judge a name by its word tokens (:func:`classify_name`).

Why a module of its own: these are the words the rules are made of, tuned page by page, and the classifiers judge
every named element; the rules that act on a verdict are in :mod:`datapipe.extract.rules`. The compiled walk
judges names with the same words and logic in C (``treewalk.Vocabulary``, made from these lists by
:func:`datapipe.extract.walk.vocabulary`); the classifiers here are its reference, and a change to their logic
must be made there too (``tests/test_extract_compiled.py`` holds the two together). Depends on nothing else of the extractor. The vocabulary's
meaning is told in :mod:`datapipe.extract.content`'s docstring (rule 2).
"""

from __future__ import annotations

import functools
import re

# Word tokens of a class or id that name a page part which is not the article, by concept. Matched as whole
# tokens of one class name or id (see name_tokens).
BOILERPLATE_GROUPS = {
    "navigation": "nav navbar navigation navi menu menubar submenu megamenu breadcrumb breadcrumbs crumbs skip "
    "skiplinks pagination pager prevnext navheader navfooter docnav sphinxsidebar",
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

_CAMEL = re.compile(r"([a-z])([A-Z])")

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
ROOT_ONE = frozenset(n for n in ROOT_NAMES if " " not in n)
ROOT_TWO = frozenset(tuple(n.split()) for n in ROOT_NAMES if " " in n)
assert all(len(t) == 2 for t in ROOT_TWO)


def _root_end(toks: list[str]) -> int:
    """Where the first content-root name in the tokens ends, or 0 when none is there."""
    for i, tok in enumerate(toks):
        if tok in ROOT_ONE:
            return i + 1
        if i + 1 < len(toks) and (tok, toks[i + 1]) in ROOT_TWO:
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
    split = names.split()
    for name in split:
        verdict = classify_one(name)
        if verdict == 1:
            # a comment's body named like an article's as well (``<div id="comment-text" class="user-post-text">``)
            # is a comment: comment words win over a root's name, which wins over every other boilerplate word
            if any(classify_one(other) < 0 and _comments_only(other) for other in split):
                return True, 0
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


def names_comments(attrs: dict[str, str | None]) -> bool:
    """Whether a container's class and id name it boilerplate only by comment words (a discussion's posts)."""
    names = class_and_id(attrs)
    return bool(names) and classify_name(names)[0] and not classify_discussion(names)[0]


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


def class_and_id(attrs: dict[str, str | None]) -> str:
    """A container's class and id as the walk hands them to the name classifiers."""
    return " ".join(v for v in (attrs.get("class"), attrs.get("id")) if v)
