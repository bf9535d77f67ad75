"""datapipe's main-content extractor (``extract: {method: datapipe}``): Trafilatura's precision at resiliparse's speed.

Why our own: resiliparse's main-content mode keeps navigation, share bars, teasers and comment threads (precision
0.79 on the tuning part of Trafilatura's evaluation pages), and Trafilatura is precise but runs its rules in Python
over lxml, at about 1/10 of resiliparse's speed. Why selectolax: it and resiliparse both parse with lexbor (C), and
selectolax's tree is the one whose C structs a compiled walk can read (:mod:`datapipe.extract.treewalk`, built by
``python -m datapipe.extract.build`` against the installed release's headers). On Trafilatura's 990 evaluation pages
the walk through selectolax's Python objects took 1.10 ms of a page's 1.91 ms (~1,750 nodes a page, each a Python
object, a property read and a dictionary lookup); compiled, the whole page took 1.15 ms, and the blocks and
containers it records were identical on every one of the 990 pages. With each block's text gathered in C as well,
a page takes 0.86-0.93 ms, of which lexbor's parse is ~0.4 ms (docs/benchmarks.md). The rules are written in Python
(in the modules listed at the end), which are their reference; three run compiled, each held by a test to its
reference: the judging of class and id names (:class:`datapipe.extract.treewalk.Vocabulary`), :func:`decide`
(:mod:`datapipe.extract.verdicts`) and the learned extractor's choice of blocks. On the same pages, side by side
on one machine, the learned extractor took 3.6-4.5 ms a page with them in Python (the walk 1.6-2.0 ms, most of it
judging names; the verdicts 0.4-0.5) and 2.2-2.4 ms compiled (parse 0.7, walk 0.45-0.5, verdicts 0.25, block
and page features 0.4, trees 0.35). ``benchmarks/extract_quality.py`` measures it against both peers.

How it decides. One pass over the tree cuts the page into blocks (paragraphs, headings, list items, table rows,
preformatted text) and records for each its text and how much of it is link text, and which named containers
hold which blocks. Then each block is kept or dropped (:func:`decide`, a pure function of that record):

1. **Never text**: scripts, styles, forms, buttons, templates, embedded media, figure captions (mostly photo
   credits; a figure's own content, such as a table, is read), ruby annotations and hidden elements (``hidden``,
   ``aria-hidden``, ``display:none``; inline ones too, such as CNN's hidden gallery captions) are not visited; a
   form holding :data:`WRAPPER_SHARE` of the page's text or more is visited (ASP.NET pages wrap the page in one).
   A declarative shadow root (``<template shadowrootmode>``, where a page saved from a browser keeps a web
   component's text) is read in place, as a browser renders it; lexbor keeps it out of the tree, so that
   selectolax's ``text()`` and resiliparse miss it. An inert template is never read.
   ``aria-hidden`` hides nothing on the screen: an element so marked is not visited unless it is the page
   behind an open dialog (it holds the article and :data:`WRAPPER_SHARE` of the page's text; dialog libraries
   mark the page's root so while a consent or newsletter dialog is open, and a page saved from a browser keeps
   that state).
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
   hold most of the paragraphs too (a live ticker beside a short article holds more text, in list items), and so
   must one named for comments (an article's long thread of replies). Comment words win over a name of the
   article's body in the same ``class`` and ``id`` (PIXNET's ``id="comment-text" class="user-post-text"``). A part named a ``teaser`` goes when a heading in it is a link (a card leading to another
   page); some sites name the article's own lead so, and it links nowhere. An ``<article>`` is dropped by name
   only when the name says what it is (a comment, a teaser card: :data:`ARTICLE_KINDS`), not when it says who
   wrote it (Drupal's ``author-sarayut``). A part named for a paywall (``paywall``, ``subscriber``, ``premium``:
   :data:`PAID_TOKENS`) goes unless it holds :data:`PAID_PROSE` characters of paragraphs, little of it links: then
   it is the article behind the paywall, not the box asking for a subscription (a paragraph so named is text).
3. **The content root**: when the page names its article body (``itemprop=articleBody``, ``article-body``,
   ``entry-content``, ...: :data:`ROOT_NAMES`), or else has an ``<article>`` or a ``<main>``, the candidate with
   the most text (and its siblings of the same kind with a fair share of it, unless mostly links) is the root,
   widened to the ``<article>`` around it; blocks outside go, except the title and lead (from the last ``<h1>``
   before the root). A root holding under :data:`FRAGMENT_SHARE` of the paragraphs left after rule 2 is a
   fragment (a lead named ``post-text`` above an unnamed body): then no root is taken.
4. **Link-heavy blocks** (teaser headlines, unnamed menus, tag lists, "read more") and short copyright notices
   (the sign, or "all rights reserved" in ten languages and the Chinese, Japanese and Korean forms) go; a long
   paragraph may link more of its words (:data:`PROSE_LINK_DENSITY`). A paragraph or heading of 15-99 characters
   that the page has three times or more is its template's (a gallery's caption on every slide, "Video Ad
   Feedback" under every video: :data:`REPEATED`). In a body named as the article's that is itself a list of links
   (a link roundup: :data:`LINK_LIST_ITEMS` items, under :data:`LINK_LIST_PROSE` characters without them), the
   list items are its text. After the article's last long paragraph, a run of teaser cards (a headline that is a
   link, then a one-paragraph summary, :data:`CARD_RUN` times or more) goes with its summaries (``card``). A
   picture's caption or credit set as a paragraph (under :data:`CAPTION_CHARS`, ending with ``Foto: Andina`` or
   ``/ Getty Images``, or opening with ``Photo:``, ``Titelbild:``) goes (``caption``), and so does the site's
   appeal to the reader set as a paragraph (under :data:`APPEAL_CHARS`: support us, subscribe now, sign up here,
   download our app, our newsletter, follow us on, apóyanos, abonnez-vous, ...: :data:`APPEALS`; ``appeal``), or
   an advertisement's label alone on a line (``Advertisement:``, ``Anzeige``).
5. **Context**: a short block (a date, a byline, "Share:") stays only between two kept blocks of real text, as
   jusText decides; a heading stays only when kept text follows it. Length here is in letters of an alphabet: a
   Han, kana or Hangul character counts :data:`WIDE_WEIGHT` (:func:`size_of`), so a line of Chinese prose is text.
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

Where each part is (this module is their public face: it re-exports their public names, and holds no rule itself):

- :mod:`datapipe.extract.names`: the vocabulary of class and id words, tags and roles, and the cached name
  classifiers (rule 2's names, rule 3's :data:`ROOT_NAMES`);
- :mod:`datapipe.extract.blocks`: the walk's record (:class:`Block`, compiled in :mod:`datapipe.extract.records`,
  :class:`Container`, :func:`make_block`) and the choice of the content roots (:func:`choose_root`, rule 3);
- :mod:`datapipe.extract.rules`: :func:`decide` and the thresholds and patterns of rules 2-6;
- :mod:`datapipe.extract.render`: the kept blocks as text (:func:`render`) and the headline (:func:`headline`, rule 7);
- :mod:`datapipe.extract.walk`: what the compiled walk is told (rule 1's tags, :class:`WalkRules`) and the check that
  it was built for the installed selectolax;
- :mod:`datapipe.extract.analysis`: one page from parse to decisions (:func:`analyze`, :func:`is_discussion`) and the
  entry points :func:`main_content` and :func:`main_content_text`.

Deterministic: no state outside one call except the caches of pure name classifiers.
"""

from __future__ import annotations

from datapipe.extract.analysis import (
    DISCUSSION_CHARS,
    DISCUSSION_PARAGRAPH,
    DISCUSSION_PROSE,
    Analysis,
    analyze,
    is_discussion,
    main_content,
    main_content_text,
)
from datapipe.extract.blocks import (
    HEADINGS,
    ROOT_MIN_CHARS,
    ROOT_SHARE,
    ROOT_SIBLING,
    SIBLING_LINKS,
    WIDE_WEIGHT,
    Block,
    Container,
    choose_root,
    make_block,
    size_of,
)
from datapipe.extract.names import (
    ARTICLE_KINDS,
    BOILERPLATE_GROUPS,
    BOILERPLATE_ROLES,
    BOILERPLATE_TAGS,
    BOILERPLATE_TOKENS,
    COMMENT_TOKENS,
    HINTS,
    LAYOUT_NAMES,
    PAID_TIER,
    PAID_TOKENS,
    ROOT_NAMES,
    STATE_PREFIXES,
    TEASER_TIER,
    TEASER_TOKENS,
    classify_discussion,
    classify_name,
    classify_one,
    name_tokens,
    trie_pattern,
)
from datapipe.extract.names import forget_names as _forget_verdicts
from datapipe.extract.render import (
    headline,
    render,
)
from datapipe.extract.rules import (
    APPEAL_CHARS,
    APPEALS,
    BAD,
    BOX_PARAGRAPH,
    BOX_RESUME,
    CAPTION_CHARS,
    CARD_HEADLINE,
    CARD_RUN,
    CARD_SUMMARY,
    FRAGMENT_PARAGRAPH,
    FRAGMENT_SHARE,
    GOOD,
    HEADING_REACH,
    KEEP_SHARE,
    LINK_DENSITY,
    LINK_LIST_ITEMS,
    LINK_LIST_PROSE,
    LONG_HEADING,
    NOTICE_CHARS,
    PAID_PROSE,
    PROSE_CHARS,
    PROSE_LINK_DENSITY,
    REPEATED,
    REPEATED_CHARS,
    REPEATED_MIN_CHARS,
    RESERVED,
    SHORT,
    SHORT_CHARS,
    SHORT_EXEMPT,
    SHORT_NEEDS,
    TAIL_SHARE,
    TAIL_TITLE_CHARS,
    TAIL_TITLES,
    decide,
    links_away,
)
from datapipe.extract.signals import mask_of
from datapipe.extract.walk import (
    BLOCK_TAGS,
    SKIP_SHARE,
    SKIP_TAGS,
    STRUCTURAL,
    WRAPPER_SHARE,
    WRAPPERS,
    WalkRules,
)


def forget_names() -> None:
    """Empty every cache of judged class names (the rules' verdicts and the learned walk's groups), so that the next
    page is judged as on a fresh process (the benchmarks clear them before each pass)."""
    _forget_verdicts()
    mask_of.cache_clear()


__all__ = [
    "WIDE_WEIGHT",
    "size_of",
    "BOILERPLATE_GROUPS",
    "BOILERPLATE_TOKENS",
    "TEASER_TOKENS",
    "COMMENT_TOKENS",
    "TEASER_TIER",
    "PAID_TOKENS",
    "PAID_TIER",
    "ARTICLE_KINDS",
    "LAYOUT_NAMES",
    "STATE_PREFIXES",
    "BOILERPLATE_TAGS",
    "BOILERPLATE_ROLES",
    "SKIP_TAGS",
    "BLOCK_TAGS",
    "STRUCTURAL",
    "HEADINGS",
    "WRAPPERS",
    "WRAPPER_SHARE",
    "RESERVED",
    "ROOT_NAMES",
    "SKIP_SHARE",
    "ROOT_MIN_CHARS",
    "ROOT_SIBLING",
    "SIBLING_LINKS",
    "ROOT_SHARE",
    "KEEP_SHARE",
    "LINK_DENSITY",
    "PROSE_CHARS",
    "PROSE_LINK_DENSITY",
    "PAID_PROSE",
    "LINK_LIST_ITEMS",
    "LINK_LIST_PROSE",
    "CARD_RUN",
    "CARD_SUMMARY",
    "CARD_HEADLINE",
    "CAPTION_CHARS",
    "FRAGMENT_SHARE",
    "FRAGMENT_PARAGRAPH",
    "APPEAL_CHARS",
    "APPEALS",
    "SHORT_CHARS",
    "REPEATED",
    "REPEATED_MIN_CHARS",
    "REPEATED_CHARS",
    "NOTICE_CHARS",
    "HEADING_REACH",
    "LONG_HEADING",
    "SHORT_NEEDS",
    "GOOD",
    "SHORT",
    "BAD",
    "SHORT_EXEMPT",
    "TAIL_TITLES",
    "TAIL_TITLE_CHARS",
    "TAIL_SHARE",
    "BOX_RESUME",
    "BOX_PARAGRAPH",
    "DISCUSSION_PROSE",
    "DISCUSSION_CHARS",
    "DISCUSSION_PARAGRAPH",
    "name_tokens",
    "HINTS",
    "trie_pattern",
    "classify_one",
    "classify_name",
    "classify_discussion",
    "forget_names",
    "Block",
    "Container",
    "make_block",
    "choose_root",
    "links_away",
    "decide",
    "render",
    "headline",
    "Analysis",
    "is_discussion",
    "WalkRules",
    "analyze",
    "main_content",
    "main_content_text",
]
