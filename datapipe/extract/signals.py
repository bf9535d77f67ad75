"""What the walk records of the elements around each block for the learned block model: one bit per group of
tags and of class, id and role words (a product's price, a forum's post, a grid's card, a documentation page's
table of contents, ...), OR-ed over the block's open structural elements (:attr:`Block.mask`).

Why a module of its own: the rules of :mod:`datapipe.extract.rules` judge a few containers by name; the block model
(:mod:`datapipe.extract.model`) reads every name around a block, as these groups. The groups are written from what
the words mean on the web at large (a page builder's, a shop system's, a forum engine's or a documentation tool's
vocabulary), not from the benchmark's pages; which of them matter, and how, is what the model learns. A group's bit
is its place in :data:`GROUPS`. A trained model records its feature columns (a group each) and a digest of these
word lists (:func:`datapipe.extract.pagetype.vocabulary`): after any edit here it is refused until retrained.
"""

from __future__ import annotations

import functools

from datapipe.extract.names import name_tokens

# groups of structural tags (the walk's own knowledge of the element)
TAG_GROUPS = {
    "t:form": "form",
    "t:noscript": "noscript",
    "t:header": "header",
    "t:footer": "footer",
    "t:nav": "nav menu",
    "t:aside": "aside",
    "t:table": "table",
    "t:cell": "td th",
    "t:list": "ul ol",
    "t:deflist": "dl dt dd",
    "t:article": "article",
    "t:main": "main",
    "t:section": "section",
    "t:figure": "figure",
    "t:quote": "blockquote",
    "t:details": "details summary",
    "t:address": "address",
    "t:dialog": "dialog",
    "t:hidden": "",  # not a tag: an element hidden by an attribute, read when the walk reads hidden elements
}
# groups of ARIA roles
ROLE_GROUPS = {
    "t:nav": "navigation menu menubar",
    "t:aside": "complementary",
    "t:footer": "contentinfo",
    "t:header": "banner",
    "t:main": "main",
    "t:article": "article",
    "t:dialog": "dialog alertdialog",
    "n:search": "search",
    "n:list": "list listitem feed",
    "t:table": "table grid row",
    "t:form": "form",
    "n:tab": "tab tabpanel tablist",
}
# groups of class, id and role words (whole word tokens, as :func:`datapipe.extract.names.name_tokens` splits)
NAME_GROUPS = {
    # DocBook's navheader and navfooter, Publican's docnav, Sphinx's sphinxsidebar: a documentation page's links
    # to the chapters before and after it (its header also repeats the chapter's title)
    "n:nav": "nav navbar navigation navi menu menubar submenu megamenu dropdown navheader navfooter docnav "
    "sphinxsidebar",
    "n:breadcrumb": "breadcrumb breadcrumbs crumbs crumb",
    "n:pagination": "pagination pager paging prevnext prev next",
    "n:header": "header masthead topbar top",
    "n:footer": "footer bottom",
    "n:sidebar": "sidebar sidebars aside rail widget widgets",
    "n:share": "share sharing social socials follow",
    "n:related": "related recommended recommendations recirculation more also",
    "n:ad": "ad ads advert advertisement advertising sponsor sponsored promo promotion promoted",
    "n:consent": "cookie cookies consent gdpr privacy",
    "n:signup": "newsletter subscribe subscription signup login register account",
    "n:comment": "comment comments commentlist disqus respond reply replies",
    "n:post": "post posts message messages topic thread threads discussion forum",
    "n:user": "user username author avatar profile member poster byline",
    "n:date": "date time timestamp published updated ago",
    "n:meta": "meta info details stats",
    "n:title": "title heading headline name",
    "n:body": "body text content entry copy prose markdown rte wysiwyg richtext",
    "n:article": "article story blog news",
    "n:main": "main primary page",
    "n:summary": "summary excerpt intro lead lede teaser description desc subtitle",
    "n:product": "product products pdp sku variant item",
    "n:price": "price prices pricing cost amount money sale discount",
    "n:cart": "cart basket checkout buy purchase wishlist quantity qty stock availability shipping delivery",
    "n:review": "review reviews rating ratings stars testimonial testimonials",
    "n:spec": "spec specs specification specifications attributes features feature",
    "n:card": "card cards tile tiles box thumbnail thumb",
    "n:grid": "grid list listing listings results result collection catalog gallery carousel slider row col",
    "n:filter": "filter filters facet facets sort sorting refine",
    "n:search": "search searchbar query",
    "n:category": "category categories tag tags tagcloud taxonomy label labels badge",
    "n:docs": "doc docs documentation manual reference api guide",
    "n:toc": "toc contents outline tableofcontents onthispage",
    "n:code": "code highlight syntax pre snippet example",
    "n:note": "note warning tip admonition callout alert notice important caution",
    "n:anchor": "anchor headerlink permalink hash",
    "n:edit": "edit feedback improve github source",
    "n:faq": "faq faqs question questions answer answers accordion collapse",
    "n:tab": "tab tabs tabpanel panel panels",
    "n:hero": "hero banner jumbotron splash",
    "n:cta": "cta button btn action actions link links",
    "n:modal": "modal popup popover overlay dialog drawer offcanvas lightbox",
    "n:hidden": "hidden hide invisible collapsed sronly screenreader visually",
    "n:media": "image img images photo photos picture figure media video icon icons logo",
    "n:caption": "caption captions credit credits copyright legal disclaimer",
    "n:event": "event events schedule calendar venue location address map",
    "n:plan": "plan plans tier tiers package packages",
    "n:team": "team bio about contact",
    "n:table": "table tables",
    "n:section": "section sections block blocks module modules component",
    "n:wrapper": "wrapper container inner outer layout wrap",
}
GROUPS: tuple[str, ...] = tuple(dict.fromkeys([*TAG_GROUPS, *ROLE_GROUPS, *NAME_GROUPS]))
_BIT = {g: 1 << i for i, g in enumerate(GROUPS)}
_TAG_BITS = {tag: _BIT[g] for g, tags in TAG_GROUPS.items() for tag in tags.split()}
ROLE_BITS: dict[str, int] = {}
for _g, _roles in ROLE_GROUPS.items():
    for _r in _roles.split():
        ROLE_BITS[_r] = ROLE_BITS.get(_r, 0) | _BIT[_g]
WORD_BITS: dict[str, int] = {}
for _g, _words in NAME_GROUPS.items():
    for _w in _words.split():
        WORD_BITS[_w] = WORD_BITS.get(_w, 0) | _BIT[_g]


HIDDEN_MASK = _BIT["t:hidden"]


def tag_mask(tag: str) -> int:
    """The groups a structural tag is in."""
    return _TAG_BITS.get(tag, 0)


@functools.lru_cache(maxsize=65536)
def mask_of(names: str | None, role: str | None) -> int:
    """The groups a class-and-id value and a role name: the OR of their word tokens' groups."""
    mask = ROLE_BITS.get(role, 0) if role else 0
    if names:
        for name in names.split():
            for tok in name_tokens(name):
                mask |= WORD_BITS.get(tok, 0)
    return mask


def groups_of(mask: int) -> list[str]:
    """The names of the groups in a mask (for the audit and tests)."""
    return [g for g in GROUPS if mask & _BIT[g]]
