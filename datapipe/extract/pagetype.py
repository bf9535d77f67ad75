"""What kind of page a page is (:data:`PAGE_TYPES`: an article, a forum thread, a product, a collection of products,
a listing, documentation, a service or marketing page), told apart cheaply from what is already at hand: the URL's
shape, the schema.org types the page declares (JSON-LD, microdata, ``og:type``), the software that made it
(``<meta name=generator>``) and the structure the walk recorded (lists, links, prices, forms, posts, code).

Why: a mixture may keep or drop pages by type (``extract: {page_types: [...]}``) and the report counts them; the
type is recorded as ``metadata.page_type`` with the model's probability as ``metadata.page_type_score``. The
vocabularies below are the web's (schema.org's type names, the generators of common site software, URL words of
shops, forums and documentation sites), written before any page was looked at; the classifier over them is a tree
ensemble trained by ``classifiers/extractor.py`` on WCXB's labelled pages and measured out of fold.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from urllib.parse import urlsplit

import numpy as np
from selectolax.lexbor import LexborHTMLParser

from datapipe.extract.features import FEATURES as BLOCK_FEATURES
from datapipe.extract.features import KINDS

PAGE_TYPES = ("article", "documentation", "service", "forum", "collection", "listing", "product")

URL_WORDS = [
    "product",
    "products",
    "p",
    "dp",
    "item",
    "items",
    "itm",
    "pd",
    "pdp",
    "sku",
    "buy",
    "shop",
    "store",
    "cart",
    "collections",
    "collection",
    "category",
    "categories",
    "c",
    "cat",
    "catalog",
    "catalogue",
    "browse",
    "b",
    "department",
    "deals",
    "t",
    "topic",
    "topics",
    "thread",
    "threads",
    "forum",
    "forums",
    "community",
    "discuss",
    "discussion",
    "discussions",
    "d",
    "questions",
    "question",
    "q",
    "answers",
    "viewtopic",
    "showthread",
    "board",
    "boards",
    "r",
    "comments",
    "docs",
    "doc",
    "documentation",
    "api",
    "reference",
    "ref",
    "guide",
    "guides",
    "manual",
    "tutorial",
    "tutorials",
    "learn",
    "library",
    "handbook",
    "wiki",
    "blog",
    "news",
    "article",
    "articles",
    "post",
    "posts",
    "story",
    "stories",
    "magazine",
    "insights",
    "press",
    "services",
    "service",
    "solutions",
    "solution",
    "pricing",
    "features",
    "platform",
    "plans",
    "enterprise",
    "business",
    "consulting",
    "agency",
    "jobs",
    "careers",
    "events",
    "list",
    "lists",
    "search",
    "results",
    "tag",
    "tags",
    "top",
    "best",
    "ranking",
    "rankings",
    "chart",
    "directory",
]
SCHEMA_TYPES = [
    "article",
    "newsarticle",
    "blogposting",
    "techarticle",
    "scholarlyarticle",
    "report",
    "reportagenewsarticle",
    "analysisnewsarticle",
    "product",
    "productgroup",
    "offer",
    "aggregateoffer",
    "itemlist",
    "collectionpage",
    "searchresultspage",
    "offercatalog",
    "discussionforumposting",
    "socialmediaposting",
    "qapage",
    "question",
    "answer",
    "comment",
    "faqpage",
    "softwareapplication",
    "webapplication",
    "softwaresourcecode",
    "apireference",
    "howto",
    "service",
    "professionalservice",
    "localbusiness",
    "organization",
    "corporation",
    "event",
    "jobposting",
    "course",
    "recipe",
    "review",
    "aggregaterating",
    "breadcrumblist",
    "webpage",
    "website",
    "person",
    "profilepage",
    "videoobject",
    "website",
    "article",
    "product",
    "video",
    "profile",
    "book",
    "music",
]
GENERATORS = [
    "wordpress",
    "drupal",
    "joomla",
    "ghost",
    "hugo",
    "jekyll",
    "gatsby",
    "next",
    "nuxt",
    "astro",
    "wix",
    "squarespace",
    "webflow",
    "hubspot",
    "shopify",
    "magento",
    "woocommerce",
    "bigcommerce",
    "prestashop",
    "discourse",
    "xenforo",
    "phpbb",
    "vbulletin",
    "invision",
    "nodebb",
    "flarum",
    "mediawiki",
    "sphinx",
    "docusaurus",
    "mkdocs",
    "gitbook",
    "readthedocs",
    "docfx",
    "vitepress",
    "javadoc",
    "doxygen",
]
# groups of the walk's masks whose share of the blocks the classifier reads
BLOCK_GROUPS = (
    "n:price",
    "n:product",
    "n:cart",
    "n:post",
    "n:comment",
    "n:user",
    "n:date",
    "n:docs",
    "n:toc",
    "n:code",
    "n:card",
    "n:grid",
    "n:review",
    "n:filter",
    "n:plan",
    "n:faq",
    "n:hero",
    "n:cta",
    "n:event",
    "n:article",
    "n:summary",
    "n:spec",
    "t:form",
    "t:table",
    "t:article",
    "t:hidden",
)
_YEAR = re.compile(r"(?:^|/)(?:19|20)\d\d(?:/|$|-)")
_SPLIT = re.compile(r"[^a-z0-9]+")
_UNSAFE = re.compile("[\t\r\n]")  # what urlsplit removes from a URL first
_TYPE = re.compile(r'"@type"\s*:\s*\[?\s*"(?:https?://schema\.org/)?([A-Za-z]+)"')
_HOST_WORDS = ("forum", "forums", "community", "discuss", "discussion", "docs", "developer", "developers", "shop",
               "store", "blog", "news", "support", "help", "learn", "wiki", "api", "answers", "boards")  # fmt: skip

FEATURES: tuple[str, ...] = (
    *(f"url:{w}" for w in URL_WORDS),
    *(f"host:{w}" for w in _HOST_WORDS),
    "url:depth",
    "url:query",
    "url:numbers",
    "url:year",
    "url:html",
    "url:last_length",
    "url:known",
    *(f"schema:{t}" for t in SCHEMA_TYPES),
    *(f"generator:{g}" for g in GENERATORS),
    "page:blocks",
    "page:chars",
    "page:paragraphs",
    "page:items",
    "page:headings",
    "page:rows",
    "page:pre",
    "page:links",
    "page:prose",
    "page:h1",
    "page:h2",
    "page:currency",
    *(f"blocks:{g}" for g in BLOCK_GROUPS),
)
_URL_INDEX = {w: i for i, w in enumerate(URL_WORDS)}
_SCHEMA_INDEX = {t: i for i, t in enumerate(SCHEMA_TYPES)}
# the block features' columns read here
_COLUMN = {name: i for i, name in enumerate(BLOCK_FEATURES)}
_CHARS, _LINK_SHARE, _CURRENCY = _COLUMN["chars"], _COLUMN["link_share"], _COLUMN["text:currency"]
_KINDS = [_COLUMN[f"kind:{k}"] for k in KINDS]
_KIND_AT = {k: i for i, k in enumerate(KINDS)}
_GROUP_COLUMNS = [_COLUMN[f"group:{g}"] for g in BLOCK_GROUPS]
_KIND_COLUMNS = np.array(_KINDS, dtype=np.intp)
_GROUPS_AT = np.array(_GROUP_COLUMNS, dtype=np.intp)
PROSE_CHARS = 200  # a paragraph this long is prose (page:prose)


# a URL whose parts urlsplit would find as these groups (scheme, netloc, path, query; the rest a fragment): ASCII,
# a scheme and "//", no brackets, userinfo or "%" in the host (see _split_url)
_SIMPLE_URL = re.compile(r"[A-Za-z][A-Za-z0-9+\-.]*://([^/?#\[\]%@]*)(?=[/?#]|\Z)([^?#]*)(\?[^#]*)?")
_HOST_AT = {w: j for j, w in enumerate(_HOST_WORDS)}


def _split_url(url: str) -> tuple[str, str, str]:
    """The URL's path, query and host name (lower-cased, "" for none), as ``urlsplit`` and its ``hostname`` give
    them. A plain ``scheme://host/path?query#fragment`` is read by one match (:data:`_SIMPLE_URL`: urlsplit's
    Python, its caches missed by every new URL, cost most of a page's URL features with the caches cold); anything
    else (other characters, no "//", brackets, userinfo, a leading space or a tab) by ``urlsplit`` itself. A test
    holds the two to each other."""
    m = _SIMPLE_URL.match(url) if url.isascii() and url[:1] > " " and not _UNSAFE.search(url) else None
    if m is None:
        parts = urlsplit(url)
        return parts.path, parts.query, parts.hostname or ""
    netloc, path, query = m.groups()
    return path, query[1:] if query else "", netloc.partition(":")[0].lower()


def _url_part(url: str) -> list[float]:
    words = [0.0] * len(URL_WORDS)
    host = [0.0] * len(_HOST_WORDS)
    if not url:
        return words + host + [0.0] * 6 + [0.0]
    path, query, hostname = _split_url(url)
    path = (path or "/").lower()
    segments = [s for s in path.split("/") if s]
    for tok in _SPLIT.split(path):
        i = _URL_INDEX.get(tok)
        if i is not None:
            words[i] = 1.0
    labels = hostname.split(".")
    # a host word is marked where it is one of the labels before the domain and its suffix, or the first label
    for w in {*labels[:-2], labels[0]}:
        j = _HOST_AT.get(w)
        if j is not None:
            host[j] = 1.0
    numbers = sum(1 for s in segments if any(map(str.isdigit, s)))
    last = segments[-1] if segments else ""
    return (
        words
        + host
        + [
            float(len(segments)),
            1.0 if query else 0.0,
            float(numbers),
            1.0 if _YEAR.search(path) else 0.0,
            1.0 if last.endswith((".html", ".htm", ".php", ".aspx")) else 0.0,
            math.log1p(len(last)),
            1.0,
        ]
    )


def head_of(tree: LexborHTMLParser) -> tuple[list[str], list[str]]:
    """What the page's head declares: its JSON-LD scripts' text and its ``og:type`` (as ``og:<type>``), and its
    generators (``<meta name=generator>``). The body's JSON-LD and microdata types the walk gathers
    (``Walk.declared``): together they are what :func:`page_features` reads. Read from the tree, not the text: a
    search of a page's text for them took 0.7 ms of a page's 8. The extractor reads them with the compiled walk's
    ``head_parts`` (the same lists from lexbor's structs, 0.06 -> 0.01 ms a page): this is its reference, held to
    it by a test."""
    declared: list[str] = []
    generators: list[str] = []
    head = tree.head
    if head is None:
        return declared, generators
    for node in head.iter():
        tag = node.tag
        if tag == "meta":
            attrs = node.attributes
            name = (attrs.get("property") or attrs.get("name") or "").lower()
            if name == "og:type":
                declared.append("og:" + (attrs.get("content") or ""))
            elif name == "generator":
                generators.append(attrs.get("content") or "")
        elif tag == "script" and (node.attributes.get("type") or "").lower() == "application/ld+json":
            declared.append(node.text(deep=True))
    return declared, generators


def _declared_part(declared: list[str], generators: list[str]) -> list[float]:
    """The schema.org types declared (a JSON-LD script's ``@type`` values, a microdata ``itemtype``'s last part,
    ``og:<type>``) and the generators named, as 0/1 columns."""
    schema = [0.0] * len(SCHEMA_TYPES)
    found: list[str] = []
    for d in declared:
        if d.startswith("og:"):
            found.append(d[3:].lower().split(".")[0].split(":")[0])
        elif d.startswith(("http://", "https://")):
            found.append(d.rstrip("/").rsplit("/", 1)[-1].lower())
        elif '"@type"' in d:
            found += [t.lower() for t in _TYPE.findall(d)]
    for t in found:
        i = _SCHEMA_INDEX.get(t)
        if i is not None:
            schema[i] = 1.0
    generator = [0.0] * len(GENERATORS)
    for name in generators:
        low = name.lower()
        for j, g in enumerate(GENERATORS):
            if g in low:
                generator[j] = 1.0
    return schema + generator


def _block_part(x: np.ndarray) -> np.ndarray:
    """What the page's blocks say, from their features (:func:`datapipe.extract.features.block_features`, one row a
    block): how many, their text, the shares of paragraphs, list items, headings, rows, code, links and prose,
    headlines, currency signs, and the share of blocks inside each of :data:`BLOCK_GROUPS`. Made in one compiled
    pass (:func:`datapipe.extract.scoring.page_block_part`: the reference's numbers, where it can promise their
    float32s) and else by the reference, :func:`_block_part_numpy`."""
    from datapipe.extract.scoring import page_block_part

    if len(x) == 0:
        return np.zeros(12 + len(BLOCK_GROUPS))
    chars = np.expm1(x[:, _CHARS].astype(np.float64))
    part = page_block_part(
        np.asarray(x, dtype=np.float32), chars, _KIND_COLUMNS, _KIND_AT["li"], _KIND_AT["tr"], _KIND_AT["pre"], _LINK_SHARE, _CURRENCY,
        _GROUPS_AT, float(PROSE_CHARS),
    )  # fmt: skip
    return part if part is not None else _block_part_numpy(x, chars)


def _block_part_numpy(x: np.ndarray, chars: np.ndarray) -> np.ndarray:
    """:func:`_block_part` as the models were trained with it (``chars``: each block's characters, from its
    feature): the counts made in one compiled pass (:func:`datapipe.extract.scoring.page_block_sums`), the sums of
    characters by numpy (its pairwise summation and its matrix product fix their roundings)."""
    from datapipe.extract.scoring import page_block_sums

    n = len(x)
    if n == 0:
        return np.zeros(12 + len(BLOCK_GROUPS))
    total = chars.sum() or 1.0
    kind_chars = chars @ x[:, _KINDS].astype(np.float64)
    per_kind, prose_chars, linked, currency, means = page_block_sums(
        np.ascontiguousarray(x, dtype=np.float32),
        chars,
        _KIND_COLUMNS,
        _LINK_SHARE,
        _CURRENCY,
        _GROUPS_AT,
        float(PROSE_CHARS),
    )
    prose = float(prose_chars.sum())
    links = float(linked.sum())
    head = [
        math.log1p(n),
        math.log1p(total),
        kind_chars[0] / total,
        kind_chars[_KIND_AT["li"]] / total,
        sum(per_kind[1:7]) / n,
        kind_chars[_KIND_AT["tr"]] / total,
        kind_chars[_KIND_AT["pre"]] / total,
        links / total,
        prose / total,
        math.log1p(per_kind[1]),
        math.log1p(per_kind[2]),
        math.log1p(currency),
    ]
    return np.concatenate([np.array(head), means])


# the block model reads each block's features and its page's type probabilities (the page-type model's, in the
# order of PAGE_TYPES): a product's price line is content, a collection's is one of many
BLOCK_MODEL_FEATURES: tuple[str, ...] = (*BLOCK_FEATURES, *(f"page_type:{t}" for t in PAGE_TYPES))


def vocabulary() -> str:
    """A digest of every word list the two models' features are computed with (the walk's groups of tags, roles
    and names, the rules' boilerplate names, this module's URL, host, schema and generator words): a trained model
    records it, and a model trained with other lists is refused (:func:`datapipe.extract.model.load_models`)."""
    from datapipe.extract.names import BOILERPLATE_GROUPS
    from datapipe.extract.signals import NAME_GROUPS, ROLE_GROUPS, TAG_GROUPS

    lists = [TAG_GROUPS, ROLE_GROUPS, NAME_GROUPS, BOILERPLATE_GROUPS, URL_WORDS, _HOST_WORDS, SCHEMA_TYPES]
    blob = json.dumps([*lists, GENERATORS], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def with_page_types(x: np.ndarray, probabilities: np.ndarray) -> np.ndarray:
    """The block model's input: each block's features, then its page's type probabilities (float32; written into
    one new array: ``np.hstack`` of the two cost several times the copy)."""
    n, m = x.shape
    out = np.empty((n, m + len(PAGE_TYPES)), dtype=np.float32)
    out[:, :m] = x
    out[:, m:] = probabilities.astype(np.float32)
    return out


def page_features(url: str, declared: list[str], generators: list[str], blocks: np.ndarray) -> np.ndarray:
    """One row of :data:`FEATURES` for the page (float32, shape (1, len(FEATURES))), from its URL (may be empty),
    what it declares (:func:`head_of` and the walk's ``declared``) and its blocks' features
    (:func:`datapipe.extract.features.block_features`)."""
    head = _url_part(url) + _declared_part(declared, generators)
    part = _block_part(blocks)
    assert len(head) + len(part) == len(FEATURES)
    row = np.empty(
        (1, len(FEATURES)), dtype=np.float32
    )  # each float64 value rounded to float32, as astype does
    row[0, : len(head)] = head
    row[0, len(head) :] = part
    return row
