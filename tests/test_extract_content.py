"""datapipe's main-content extractor: per-block decisions on real pages and on small markup for each rule,
structure, determinism, the sandbox, Unicode spaces, Trafilatura's cache, and too-large or slow pages.

The rules are tested as the rules-only extractor runs them (``learned=False``): the learned extractor reads their
verdicts as features of its block model (``tests/test_extract_learned.py`` and ``tests/test_extract_types.py``
test it)."""

from __future__ import annotations

import re
import sys
import unicodedata
from dataclasses import replace
from pathlib import Path

import pytest

from datapipe import HtmlExtractor, LanguageIdentifier, Shard, load_mixture, read_records
from datapipe.config.stages import ExtractConfig
from datapipe.extract import content, names, rules, walk
from datapipe.extract.content import Analysis
from datapipe.extract.html import METHODS, decode_html, trafilatura_text
from datapipe.extract.sandbox import Sandbox
from datapipe.extract.spaces import INVISIBLE, SPACES, as_written, normalize_spaces
from datapipe.extract.stage import ExtractStage
from pipelines.mixtures import BUNDLED
from tests.fixtures.build_bad import write_warc
from tests.test_extract import HB, KNOWN, PAGES, PY

VALGRIND = Path(__file__).parent / "fixtures" / "pages" / "valgrind-dist.readme.html"


def analyze(html: str | bytes, url: str = "") -> Analysis:
    """The rules alone (``learned=False``) decide."""
    return content.analyze(html, url, learned=False)


def main_content_text(html: str | bytes, *, markdown: bool = False, title: bool = False) -> str:
    return content.main_content_text(html, markdown=markdown, title=title, learned=False)


def _decisions(url: str) -> dict[str, str]:
    """Block text -> why it went ("" when kept) on one fixture page."""
    a = analyze(decode_html(PAGES[url], "utf-8"))
    return {b.text: w for b, w in zip(a.blocks, a.why, strict=True)}


# -- per-block decisions on real pages -------------------------------------------------------------------------


def test_python_docs_page_blocks():
    why = _decisions(PY + "secrets.html")
    assert why["secrets — Generate secure random numbers for managing secrets¶"] == "title"  # the headline
    body = next(t for t in why if t.startswith("The secrets module is used for generating"))
    assert why[body] == ""
    code = next(t for t in why if t.startswith(">>> token_hex(16)"))
    assert why[code] == "" and "\n" in code  # preformatted text keeps its lines
    for nav in (
        "Table of Contents",
        "Previous topic",
        "Next topic",
        "This Page",
        "Report a Bug",
        "Show Source",
    ):
        for text, reason in why.items():
            if text.startswith(nav):
                assert reason, f"sidebar block {text!r} was kept"


def test_handbook_page_blocks():
    why = _decisions(HB + "sect.raspbian.html")
    assert why["Download the ebook"] == "links"
    assert (
        "Prev" not in why and "Next" not in why
    )  # Publican's <ul class="docnav">: navigation, skipped unread
    kept = [t for t, w in why.items() if not w]
    assert any(t.startswith("Raspbian is a rebuild of Debian") for t in kept)
    assert "A.11. Raspbian" in kept  # the section heading over kept text


@pytest.mark.parametrize("url,sentences,nav", KNOWN, ids=[k[0].rsplit("/", 1)[1] for k in KNOWN])
def test_default_method_keeps_text_and_drops_navigation(url, sentences, nav):
    text = HtmlExtractor()((PAGES[url], "utf-8"))
    lines = {line.strip() for line in text.splitlines()}
    assert all(s in text for s in sentences)
    assert not lines & set(nav)


# -- each rule on small markup ---------------------------------------------------------------------------------

PARA = "This paragraph is the article's own text, long enough to count as real text on its own. " * 2


def _page(body: str) -> str:
    return f"<html><head><title>t</title><style>p {{}}</style></head><body>{body}</body></html>"


RULES = [
    # (markup, text that stays, text that goes, the reason it goes)
    (
        f'<p>{PARA}</p><div class="post-share-bar"><p>Share this article on every network</p></div>',
        PARA.strip(),
        "Share this article",
        "name:div.post-share-bar",
    ),
    (
        f'<div class="comment-list"><p>{PARA}Comment!</p></div><p>{PARA}</p>',
        PARA.strip(),
        "Comment!",
        "name:",
    ),
    (f"<nav><p>{PARA}Menu</p></nav><p>{PARA}</p>", PARA.strip(), "Menu", "name:nav"),
    (f'<div role="navigation"><p>{PARA}Nav</p></div><p>{PARA}</p>', PARA.strip(), "Nav", "name:"),
    (
        f'<p>{PARA}</p><ul><li><a href="/a">First teaser headline</a></li><li><a href="/b">Second one</a></li></ul>',
        PARA.strip(),
        "First teaser headline",
        "links",
    ),
    (
        f"<p>{PARA}</p><p>© 2024 Example Media. All rights reserved.</p><p>{PARA}</p>",
        PARA.strip(),
        "Example Media",
        "notice",
    ),
    (
        f'<div class="entry-content"><p>{PARA}</p><p>{PARA}</p><div class="li-relatedlinks"><p>{PARA}Elsewhere</p>'
        "</div></div>",
        PARA.strip(),
        "Elsewhere",
        "name:div.li-relatedlinks",
    ),
    (
        f"<p>{PARA}</p><p>Alle Rechte vorbehalten. Nachdruck nur mit Genehmigung des Verlags.</p><p>{PARA}</p>",
        PARA.strip(),
        "Nachdruck",
        "notice",
    ),
    (
        f"<p>{PARA}</p><p>版权所有：中国日报网。未经协议授权，禁止转载使用。</p><p>{PARA}</p>",
        PARA.strip(),
        "禁止转载",
        "notice",
    ),
    (
        f'<div class="sidebar"><p>{PARA}Aside text</p></div><article><h1>Title</h1><p>{PARA}</p><p>{PARA}</p>'
        f"<p>{PARA}</p></article>",
        "Title",
        "Aside text",
        "name:div.sidebar",
    ),
    (
        f'<div id="teasers"><p>{PARA}Other story</p></div><h1>The title</h1><p>The lead paragraph, set apart.'
        f' {PARA}</p><div class="article-body"><p>{PARA}</p><p>{PARA}</p><p>{PARA}</p></div><p>{PARA}After</p>',
        "The lead paragraph",
        "After",
        "outside-root",
    ),
    (
        f'<p>{PARA}</p><p>Posted on May 1</p><div class="nav-links"><p>{PARA}Older posts</p></div>',
        PARA.strip(),
        "Posted on May 1",
        "short",
    ),
    (
        f'<div class="entry-content"><p>{PARA}</p><p>{PARA}</p><div class="teaser-list"><div class="card-teaser">'
        f'<h3><a href="/other">Another story of the site</a></h3><p>{PARA}Its summary</p></div></div></div>',
        PARA.strip(),
        "Its summary",
        "teaser:div.teaser-list",
    ),
    (
        f'<div class="entry-content"><p>{PARA}</p><p>{PARA}</p><h2>Das könnte Sie auch interessieren</h2>'
        f"<p>{PARA}Another page</p></div>",
        PARA.strip(),
        "Another page",
        "tail",
    ),
]


@pytest.mark.parametrize(
    "markup,stays,goes,reason", RULES, ids=[r[3].split(".")[0] + str(i) for i, r in enumerate(RULES)]
)
def test_rule(markup, stays, goes, reason):
    a = analyze(_page(markup))
    text = a.text(title=True)  # a headline stays too: as the title
    assert stays in text and goes not in text
    why = next(w for b, w in zip(a.blocks, a.why, strict=True) if goes in b.text)
    assert why.startswith(reason), why


@pytest.mark.parametrize(
    "markup",
    [
        f'<div class="page has-sidebar"><p>{PARA}</p><p>{PARA}</p></div>',  # a state, not a part
        f'<div class="commentary"><p>{PARA}</p></div>',  # not "comment"
        f'<div class="canvas-wrap"><p>{PARA}</p></div>',  # not "nav"
        f'<div class="o-section--has-ads"><p>{PARA}</p></div>',  # a BEM modifier
        f'<div class="entry-content no-share"><p>{PARA}</p></div>',  # a root name wins
        f'<div class="share"><div class="entry"><p>{PARA}</p><p>{PARA}</p><p>{PARA}</p></div></div><p>x</p>',
    ],
)
def test_names_that_are_not_boilerplate(markup):
    assert PARA.strip() in main_content_text(_page(markup))


def test_a_lead_named_teaser_stays():
    """Some sites name the article's own lead a teaser: it links nowhere, so it is read."""
    a = analyze(
        _page(f'<article><h1>Title</h1><p class="teaser-text">The lead. {PARA}</p><p>{PARA}</p></article>')
    )
    assert "The lead." in a.text() and a.why == ["title", "", ""] and a.title == "Title"


def test_the_headline_is_the_title_not_the_text():
    """The first kept <h1> before any kept text is the title (issue 40 item 1), as Trafilatura and the article
    benchmarks' truths keep it; an <h1> after the text has begun is a section of it; without a kept headline the
    <title> element is the title; the extract stage writes it to ``metadata.title``, and ``title: prepend`` puts it
    back on top of the text."""
    from datapipe import HtmlExtractor

    head = "<head><title>  Tall   ships | The Harbour Times </title></head>"
    page = (
        f"<html>{head}<body><article><p>12 May</p><h1>Tall ships</h1><p>{PARA}</p><h1>Part two</h1><p>{PARA}"
    )
    page += "</p></article></body></html>"
    a = analyze(page)
    assert a.title == "Tall ships" and "Tall ships" not in a.text() and "Part two" in a.text()
    assert HtmlExtractor(learned=False).extract((page.encode(), "utf-8"))[:2] == (a.text(), "Tall ships")
    assert HtmlExtractor(title="prepend")((page.encode(), "utf-8")).startswith("Tall ships\n\n")
    no_h1 = f"<html>{head}<body><article><p>{PARA}</p></article></body></html>"
    assert analyze(no_h1).title == "Tall ships | The Harbour Times" and PARA.strip() == analyze(no_h1).text()
    assert analyze(f"<html><body><p>{PARA}</p></body></html>").title is None
    late = f"<html><body><article><p>{PARA}</p><h1>A section</h1><p>{PARA}</p></article></body></html>"
    assert analyze(late).title is None and "A section" in analyze(late).text()


def test_a_section_title_ends_the_article_only_in_its_last_part():
    """A "Related articles" title before most of the text, or a "Lesen Sie auch" box inside the article, ends
    nothing; the same title after most of it does."""
    early = f"<article><p>{PARA}</p><h2>Related articles</h2><p>{PARA}</p><p>{PARA}</p><p>{PARA}Last</p></article>"
    assert "Last" in main_content_text(_page(early))
    box = f"<article><p>{PARA}</p><p>{PARA}</p><p>Lesen Sie auch</p><p>{PARA}Last</p></article>"
    assert "Last" in main_content_text(_page(box))
    late = (
        f"<article><p>{PARA}</p><p>{PARA}</p><p>{PARA}</p><h2>MEIST GELESEN</h2><p>{PARA}Last</p></article>"
    )
    text = main_content_text(_page(late))
    assert "Last" not in text and "MEIST" not in text and text.count(PARA.strip()) == 3


def test_an_aside_beside_the_article_goes_though_it_holds_more_text():
    """liberation.fr puts a live ticker (an ``<aside id="sidebar" role="complementary">`` of list items) inside the
    main part beside a short article: it holds 77% of the text, but a part that says by its tag or role what it is
    wraps the article only when it holds most of the paragraphs too (issue 40). A wrapper named only for a state
    still stays."""
    ticker = "".join(
        f"<li>{i}:00 The live ticker's item number {i}, with what happened then.</li>" for i in range(40)
    )
    page = _page(
        f'<div id="body-content" role="main"><h1>Title</h1><p>{PARA}</p><p>{PARA}Last</p>'
        f'<aside class="mod" id="sidebar" role="complementary"><ul>{ticker}</ul></aside></div>'
    )
    text = main_content_text(page)
    assert "Last" in text and "live ticker" not in text, text
    state = _page(f'<div class="entry share"><p>{PARA}</p><p>{PARA}Kept</p></div><p>x</p>')
    assert "Kept" in main_content_text(state)


def test_a_line_the_template_repeats_goes_a_label_stays():
    """CNN repeats a gallery's caption on every slide and "Video Ad Feedback" under every video: a paragraph or
    heading of 15-99 characters found three times or more is the template's. A shorter label a record repeats
    ("Goles" for every match of a results page) is read with the text after it."""
    videos = "".join(
        f"<h3>Story {i} of the playlist on the page</h3><p>Video Ad Feedback</p>" for i in range(4)
    )
    page = _page(f"<article><p>{PARA}</p><p>{PARA}Last</p>{videos}</article>")
    a = analyze(page)
    assert "Video Ad Feedback" not in a.text() and "Last" in a.text()
    assert {w for b, w in zip(a.blocks, a.why, strict=True) if b.text == "Video Ad Feedback"} == {"repeated"}
    labels = analyze(_page("".join(f"<p>{PARA}</p><p>Goles</p><p>{PARA}Match {i}</p>" for i in range(3))))
    assert labels.text().count("Goles") == 3 and "repeated" not in labels.why


def test_a_titled_box_of_links_inside_the_article_ends_nothing():
    """A "Related articles" box in the last part of an article (a title, then a list of links) followed by more
    of the article's paragraphs goes alone; the article is not ended there (issue 40: "no early end at a box
    heading"). The same title with no article after its list still ends it."""
    items = "".join(
        f'<li><a href="/s{i}">Another story {i}</a>: what it is about, in brief.</li>' for i in range(3)
    )
    box = f"<h2>Related articles</h2><ul>{items}</ul>"
    page = _page(f"<article>{f'<p>{PARA}</p>' * 6}{box}{f'<p>{PARA}</p>' * 3}<p>{PARA}Last</p></article>")
    a = analyze(page)
    assert "Last" in a.text() and "Related articles" not in a.text() and "Another story" not in a.text()
    assert "box" in a.why
    end = _page(f"<article>{f'<p>{PARA}</p>' * 6}{box}<p>{PARA}Footer text</p></article>")
    assert "Footer text" not in main_content_text(end)


def test_an_article_body_behind_a_paywall_name_is_read_the_box_is_not():
    """Publishers wrap the rest of the article in ``<div class="paywall">`` (or ``subscriber-content``,
    ``premium``): with paragraphs of prose in it, it is the article's text; the box that asks for a subscription
    (a line and a link) still goes (issue 40)."""
    body = f'<div class="article-body"><p>{PARA}</p><div class="paywall"><p>{PARA}</p><p>{PARA}Paid text</p></div>'
    box = '<div class="subscriber-content"><p>Subscribe to read on.</p><p><a href="/sub">Subscribe now</a></p></div>'
    text = main_content_text(_page(f"<article>{body}{box}</div></article>"))
    assert "Paid text" in text and "Subscribe" not in text, text
    premium = f'<div class="premium-article"><p>{PARA}</p><p>{PARA}</p><p>{PARA}Premium text</p></div>'
    assert "Premium text" in main_content_text(_page(premium))


@pytest.mark.parametrize(
    "name,word",
    [
        ("spenden-box", "Spenden"),
        ("noticias-relacionadas", "Relacionadas"),
        ("articles-connexes", "Connexes"),
        ("bildunterschrift", "Bildunterschrift"),
        ("newsletter-infolettre", "Infolettre"),
        ("donation-appeal", "Donate"),
    ],
)
def test_in_article_boxes_are_named_in_several_languages(name, word):
    """Donation, related, caption and newsletter boxes inside an article, by names in German, Spanish, French and
    English (issue 40)."""
    page = _page(
        f'<article><p>{PARA}</p><div class="{name}"><p>{word}: {PARA}</p></div><p>{PARA}Last</p></article>'
    )
    text = main_content_text(page)
    assert "Last" in text and f"{word}:" not in text, text


def test_an_article_named_as_boilerplate_around_the_named_body_stays():
    """uebermedien.de names its <article> ``steady-paywall-container``: the body the page names inside it is
    read, though the comments below make it a small part of the <main>."""
    comments = "".join(f'<li class="comment"><p>{PARA}Reader {i}</p></li>' for i in range(8))
    html = _page(
        f'<main><article class="post steady-paywall-container"><h1>Title</h1><div class="entry-content">'
        f'<p>{PARA}Body one</p><p>{PARA}Body two</p></div></article><ol class="comment-list">{comments}</ol></main>'
    )
    text = main_content_text(html)
    assert "Body one" in text and "Body two" in text and "Reader" not in text


def test_two_root_names_on_the_same_text_make_one_root():
    """wmn.de wraps its body in ``<div class="entry-content"><article class="article-body">``: two candidates of
    one tier with the same blocks. Each lies inside the other, and the rule "outermost only" once dropped both, so
    that no root was found and the whole page was kept. The element opened first is the root."""
    html = _page(
        f"<div><p>{PARA}Unnamed box beside the article</p></div>"
        f'<div class="entry-content"><article class="article-body"><p>{PARA}Body one</p><p>{PARA}Body two</p>'
        "</article></div>"
    )
    a = analyze(html)
    text = a.text()
    assert "Body one" in text and "Body two" in text, text
    assert "Unnamed box" not in text, text


def test_a_list_of_links_named_as_the_body_is_not_a_root():
    """BBC's Chinese pages name their related links ``g-block story-body contextual-links``: a second candidate of
    the body's tier with a fair share of its text. A candidate whose text is mostly links is not a section of the
    body, and what is not in the body goes."""
    related = "".join(
        f'<li><a href="/n{i}">A related story, number {i}</a><p>2012-12-0{i}</p></li>' for i in range(6)
    )
    html = _page(
        f'<div class="story-body"><p>{PARA}Body one</p><p>{PARA}Body two</p></div>'
        f'<div class="story-body contextual-links"><h2>Related</h2><ul>{related}</ul></div>'
    )
    text = main_content_text(html)
    assert "Body one" in text and "Body two" in text, text
    assert "2012-12-01" not in text, text


def test_paragraphs_named_paywall_are_text_and_the_paywall_box_is_not():
    """Condé Nast's sites (Wired, The New Yorker) name every paragraph after the first ``paywall``: the text behind
    the paywall, in the HTML. A box named so (an element around text) is the paywall itself."""
    menu = "<nav><ul>" + "<li><a href='/s'>A section of the site</a></li>" * 60 + "</ul></nav>"
    box = '<div class="signwall-body paywall"><p>You have reached your limit of free articles this month</p></div>'
    html = _page(
        f'{menu}<article><h1>Title</h1><p>{PARA}First</p><p class="paywall">{PARA}Second</p>'
        f'<p class="paywall">{PARA}Third</p>{box}</article>'
    )
    text = main_content_text(html)
    assert all(w in text for w in ("First", "Second", "Third")), text
    assert "limit of free articles" not in text


def test_an_article_named_for_its_author_is_the_article():
    """prachatai.com's Drupal theme names the article's node ``author-sarayut``: a class that says who wrote it,
    not an author box. An <article> named for what it is (a comment, a teaser card) or with a boilerplate role
    stays dropped."""
    sidebar = "<aside>" + f"<h3><a href='/n'>Another story</a></h3><p>{PARA}Sidebar</p>" * 4 + "</aside>"
    html = _page(
        f'<article class="node node-report author-sarayut" id="node-report-80642"><h1>Title</h1>'
        f"<p>{PARA}Body one</p><p>{PARA}Body two</p></article>"
        f'<article class="comment"><p>{PARA}Reader</p></article>'
        f'<article role="complementary"><p>{PARA}Aside</p></article>{sidebar}'
    )
    a = analyze(html)
    text = a.text()
    assert "Body one" in text and "Body two" in text and a.title == "Title", text
    assert not any(w in text for w in ("Reader", "Aside", "Sidebar")), text


def test_a_discussion_is_read_from_its_comments():
    """A forum thread (mactechnews.de names each post ``MtnComment``) has no text outside its comments: they are
    read, the sidebar and the reply form still not. Under an article, comments stay dropped."""
    posts = "".join(
        f'<div class="MtnComment"><span class="MtnCommentAccountName">user{i}</span>'
        f'<div class="MtnCommentText">Post {i}: {PARA}</div></div>'
        for i in range(3)
    )
    sidebar = '<div class="col"><ul>' + "<li>Top news of the week, one line each</li>" * 6 + "</ul></div>"
    forum = _page(
        f'<h2>Thread title</h2>{posts}<div id="respond"><p>Log in to reply to this thread</p></div>{sidebar}'
    )
    a = analyze(forum)
    text = a.text()
    assert all(f"Post {i}:" in text for i in range(3)), text
    assert "Log in to reply" not in text
    assert not content.is_discussion(a)  # as read the second time: its posts are its prose
    article = _page(
        f"<article><p>{PARA}Own text</p><p>{PARA}</p></article><div class='comments'>{posts}</div>"
    )
    text = main_content_text(article)
    assert "Own text" in text and "Post 0" not in text


def test_comments_under_an_article_go_though_their_body_is_named_like_an_articles():
    """A blog (PIXNET) names its comment list ``<div id="comment-text" class="user-post-text">`` inside
    ``<div id="comment-box">``: comment words win over a post's body name, and a box of comments holding most of the
    page's text is still dropped when the page's paragraphs are the article's, not its."""
    assert names.classify_name("user-post-text comment-text") == (True, 0)
    assert names.classify_discussion("user-post-text comment-text") == (False, 0)
    assert names.classify_name("entry-content no-share") == (False, 1)  # other boilerplate words still lose
    assert names.classify_name("main entry-content") == (
        False,
        0,
    )  # a layout name before it still ends the scan
    replies = "".join(
        f"<li>#{i} reader{i} 2013/12/28</li><li>{PARA}Reply {i}</li><li>Author replied 2014/01/01</li>"
        for i in range(12)
    )
    page = _page(
        f'<div class="article-content-inner"><p>{PARA}Body one</p><p>{PARA}Body two</p></div>'
        f'<div id="comment-box" class="user-post-box"><h3 id="comment-title">Comments (12)</h3>'
        f'<div id="comment-text" class="user-post-text"><ul>{replies}</ul></div></div>'
    )
    text = main_content_text(page)
    assert "Body one" in text and "Body two" in text
    assert "Reply" not in text and "reader" not in text, text


def test_han_kana_and_hangul_count_as_two_letters_in_length_thresholds():
    """A line of Chinese says what twice its length in letters says: a 30-character paragraph of a Chinese blog
    (PIXNET, newspaper4k's Chinese article) is text, not a short line judged by its neighbours, and a page of such
    paragraphs with comments under it is an article, not a discussion."""
    lines = [
        "一波波接續性低溫寒流報到已將新竹尖石鄉後山一帶層層山巒披上嫣紅的彩衣",
        "玉峰道路一路上雲氣山嵐滯留山頭順路下切蜿蜒道路後不久即抵達來到玉峰國小",
        "美樹美如其名偌大楓香樹早已呈現金黃泛紅色彩也是愛攝人仕所喜愛造訪之地",
    ]
    assert rules.size_of(lines[0]) == 2 * len(lines[0]) and rules.size_of("plain") == 5
    assert rules.size_of("한국어 문장") == 11 and rules.size_of("ひらがなカタカナ") == 16
    short = "短い日付の行"  # 6 characters: 12 letters' worth, still short
    a = analyze(_page("<div class='post'>" + "".join(f"<p>{t}</p>" for t in lines) + f"<p>{short}</p></div>"))
    why = dict(zip((b.text for b in a.blocks), a.why, strict=True))
    assert all(why[t] == "" for t in lines), why
    assert why[short] == "short"
    posts = "".join(f'<div class="comment"><p>{PARA}Post {i}</p></div>' for i in range(4))
    blog = _page("<article>" + "".join(f"<p>{t}{t}</p>" for t in lines) + f"</article>{posts}")
    text = main_content_text(blog)
    assert lines[0] in text and "Post 0" not in text, text


def test_long_prose_may_link_many_of_its_words():
    """A long paragraph whose writer linked half its words is prose; a short one is a menu or a teaser."""
    linked = '<a href="/x">linked words of the paragraph</a> and plain words of it; ' * 4
    long, short = f"<p>{linked}</p>", f"<p>{linked[: len(linked) // 2]}</p>"
    assert analyze(_page(f"<p>{PARA}</p>{long}<p>{PARA}</p>")).why == ["", "", ""]
    assert analyze(_page(f"<p>{PARA}</p>{short}<p>{PARA}</p>")).why == ["", "links", ""]


def test_a_body_that_is_a_list_of_links_keeps_its_links():
    """A link roundup (a WordPress bookmarks post: each item a link and a "via" line, the body named
    ``entry-content``, a sidebar of links beside it) is a list of links: its items are its text. An article whose
    body holds its own paragraphs and a list of related links keeps its paragraphs and drops the list."""
    items = "".join(
        f'<li><a href="/a{i}">Headline number {i} of the links this post collects</a></li>'
        f'<li>via <a href="/s{i}">Source {i}</a> https://example.org</li>'
        for i in range(4)
    )
    sidebar = "".join(f'<li><a href="/p{i}">Older post {i} of this blog</a></li>' for i in range(4))
    page = _page(
        f'<article><h1>Blogposting 01/23/2020</h1><div class="entry-content"><ul>{items}</ul>'
        f"<p>Posted from Diigo. The rest of my favorite links are here.</p></div></article>"
        f'<div id="secondary" role="complementary"><ul>{sidebar}</ul></div>'
    )
    text = main_content_text(page)
    assert "Headline number 0 of the links" in text and "Headline number 3 of the links" in text, text
    assert "Older post" not in text
    related = "".join(f'<li><a href="/r{i}">Related story number {i} of the site</a></li>' for i in range(6))
    article = _page(f'<div class="entry-content"><p>{PARA}</p><p>{PARA}</p><ul>{related}</ul></div>')
    text = main_content_text(article)
    assert "article's own text" in text and "Related story" not in text


def test_teaser_cards_after_the_article_go_with_their_summaries():
    """A "Deep Dive" of cards after the article (MIT Technology Review, WebMD): each a headline that links to
    another page and a one-line summary. The headlines go as links; their summaries go with them. Inside the
    article, a linked subheading followed by long paragraphs is left alone."""
    cards = "".join(
        f'<h3><a href="/story{i}">Another story number {i} of the site</a></h3>'
        f"<p>A summary of story {i}, a sentence or two that says what it is about.</p>"
        for i in range(4)
    )
    page = _page(f"<main><h1>Title</h1><p>{PARA}</p><p>{PARA}</p><h3>Deep Dive</h3>{cards}</main>")
    a = analyze(page)
    why = {b.text: w for b, w in zip(a.blocks, a.why, strict=True)}
    assert why["A summary of story 0, a sentence or two that says what it is about."] == "card"
    assert why["Another story number 0 of the site"] == "links"
    assert "article's own text" in a.text()
    listicle = "".join(
        f'<h3><a href="/tool{i}">Tool number {i}</a></h3><p>What tool {i} does, in short.</p><p>{PARA}{PARA}</p>'
        for i in range(4)
    )
    a = analyze(_page(f"<main><p>{PARA}</p>{listicle}</main>"))
    assert "card" not in a.why, a.why


def test_a_caption_set_as_a_paragraph_goes():
    """A picture's caption or credit that a page sets as a paragraph, not a ``<figcaption>``, goes: one that ends
    with a credit (``Foto: Andina``, ``(Credit: Clayton Aldern / Grist)``, ``/domena publiczna``) or opens with a
    picture's label (``Titelbild:``). A numbered figure's caption (``Figure 1: ...``) says what a diagram shows and
    stays, and so does a sentence that names a source."""
    captions = [
        "Son tres los periodos de vacaciones durante el año escolar. Foto: Andina",
        "Roman Prymula, photo: Archives du Gouvernement tchèque",
        "Angus Barbieri mając 27 lat, ważył 206 kilogramów /domena publiczna",
        "(Credit: Clayton Aldern / Grist)",
        "Titelbild: Geyres Christophe/ABACA/picture-alliance",
    ]
    kept = [
        "Figure 1: The why loop iterates over ideas and software, the how loop on building them.",
        "Source: the ministry said on Monday that it would publish the figures for the whole country next week.",
    ]
    _between_paragraphs_they_go_as(captions, kept, "caption")


def _between_paragraphs_they_go_as(dropped: list[str], kept: list[str], reason: str) -> None:
    """Each text as a paragraph of an article between paragraphs of prose: ``dropped`` go for ``reason``, ``kept``
    stay."""
    body = "".join(f"<p>{PARA}</p><p>{t}</p>" for t in dropped + kept) + f"<p>{PARA}</p>"
    a = analyze(_page(f"<article>{body}</article>"))
    why = {b.text: w for b, w in zip(a.blocks, a.why, strict=True)}
    assert all(why[t] == reason for t in dropped), why
    assert all(why[t] == "" for t in kept), why


def test_an_appeal_to_the_reader_set_as_a_paragraph_goes():
    """A site's appeal set as a paragraph of the article, not in a box named for it (a donation, a subscription,
    a sign-up, its newsletter, its app, its social channels; in the dev set's languages) goes, and so does an
    advertisement's label alone on a line. A sentence of the article about subscriptions, or one
    that asks to support a demand ("unterstützen Sie unsere Forderung"), stays."""
    appeals = [
        "Si te parece valioso el trabajo de El Faro, apóyanos para seguir. Únete a nuestra comunidad de lectores.",
        "Subscribe now to our eNATION edition for the full story.",
        "For the latest stories and breaking news updates download the Nationnews apps for iOS and Android.",
        "If you enjoyed reading this post – would you consider supporting our work? Just click here. Thanks!",
        "Do you want to be informed of DiEM25's actions? Sign up here",
        "Never miss the latest news by signing up to our newsletter today!",
        "Siguenos en Telegram, Instagram, Facebook y Twitter para recibir todas nuestras actualizaciones",
        "Jede kleine Spende hilft den notleidenden Menschen dieser Welt!",
        "Advertisement:",
    ]
    kept = [
        "The company said the number of people who subscribe to its streaming service fell by a million.",
        "Unterschreiben Sie unsere Petition und unterstützen Sie unsere Forderung nach einem Ministerium.",
    ]
    _between_paragraphs_they_go_as(appeals, kept, "appeal")


def test_a_named_lead_above_an_unnamed_body_is_no_root():
    """A page that names only its lead (``<div class="post-text">``, a body word) and sets the article's sections
    after it unnamed: the lead holds a fifth or less of the page's paragraphs, so it is a fragment, not the content
    root, and the sections are read. A named body with most of the paragraphs still leaves out the text beside
    it."""
    sections = "".join(f"<h2>Section {i}</h2><p>{PARA}</p><p>{PARA}</p>" for i in range(6))
    page = _page(
        f'<h1>Dimethylether</h1><div class="post-text"><p>{PARA}{PARA}The lead.</p></div>'
        f'<div class="share">Share</div>{sections}'
    )
    text = main_content_text(page)
    assert "The lead." in text and "Section 5" in text, text
    named = _page(f'<div class="post-text">{sections}</div><div><p>{PARA}Beside the body.</p></div>')
    assert "Beside the body." not in main_content_text(named)


def test_never_text():
    markup = (
        f"<p>{PARA}</p><script>var secret = 1;</script><style>.x{{}}</style><form><p>Form field</p></form>"
        '<p hidden>Hidden one</p><p style="display: none">Hidden two</p><div aria-hidden="true">Hidden three</div>'
        "<figure><img src=x><figcaption>A caption</figcaption></figure><template><p>Template</p></template>"
        f'<p>{PARA}<span style="display:none">Hidden four</span> <cite hidden>Hidden five</cite> '
        '<a href="/x" aria-hidden="true">Hidden six</a> seen</p>'
    )
    text = main_content_text(_page(markup))
    assert "seen" in text, text
    for gone in (
        "secret",
        ".x",
        "Form field",
        "Hidden one",
        "Hidden two",
        "Hidden three",
        "Hidden four",
        "Hidden five",
        "Hidden six",
        "A caption",
        "Template",
    ):
        assert gone not in text


def test_a_figure_is_read_but_not_its_caption():
    """Sites put tables and gallery text in a <figure> (thebalance.com's comparison tables): its content is read,
    as a block of its own; its caption, mostly a photo credit, is not."""
    markup = (
        f"<p>{PARA}</p><figure><table><tr><th>Fee</th><th>Coinbase</th></tr><tr><td>GBP withdrawal</td>"
        "<td>1 GBP</td></tr></table><figcaption>Photo: Agency</figcaption></figure>"
        f"<p>{PARA}</p><figure>Inline figure text set apart from the paragraphs</figure><p>{PARA}</p>"
    )
    a = analyze(_page(markup))
    kept = [b.text for b, w in zip(a.blocks, a.why, strict=True) if not w]
    assert "Fee | Coinbase" in kept and "GBP withdrawal | 1 GBP" in kept
    assert "Inline figure text set apart from the paragraphs" in kept
    assert "Photo: Agency" not in " ".join(b.text for b in a.blocks)


def test_a_form_around_the_whole_page_is_read():
    """ASP.NET pages put everything in one <form>: a form that holds half the page's text or more is walked (its
    search box and inputs are still never text); a form holding less stays unread."""
    page = _page(
        "<form><p>Search the site for recipes, menus and many more of our ideas</p></form>"
        f'<form id="mainform"><input value="typed"><nav><p>{PARA}Menu</p></nav><h1>Recipe</h1><p>{PARA}</p>'
        f"<p>{PARA}</p></form>"
    )
    text = main_content_text(page, title=True)
    assert text.count(PARA.strip()) == 2 and text.startswith("Recipe\n\n")
    assert "Menu" not in text and "Search the site" not in text and "typed" not in text
    assert "Search the site" not in " ".join(b.text for b in analyze(page).blocks)  # not read at all


def test_a_page_of_short_blocks_keeps_them():
    verse = "".join(f"<p>Line {i} of a short poem</p>" for i in range(12))
    assert main_content_text(_page(verse)).count("of a short poem") == 12


def test_structure_plain_and_markdown():
    markup = (
        f"<article><h1>Title</h1><p>{PARA}</p><h2>Section</h2><p>{PARA}<br>second line</p><ul><li>one item</li>"
        "<li>two item</li></ul><table><tr><th>name</th><th>value</th></tr><tr><td>a</td><td>1</td></tr></table>"
        "<pre>x = 1\n    y = 2</pre></article>"
    )
    text = main_content_text(_page(markup))
    assert text.startswith(PARA.strip() + "\n\nSection\n\n")  # the headline is the title, not text
    assert main_content_text(_page(markup), title=True).startswith("Title\n\n" + PARA.strip())
    assert "\nsecond line" in text
    assert "- one item\n- two item" in text
    assert "name | value\na | 1" in text
    assert "x = 1\n    y = 2" in text
    md = main_content_text(_page(markup), markdown=True, title=True)
    assert md.startswith("# Title\n\n") and "\n\n## Section\n\n" in md
    assert "| name | value |\n| a | 1 |" in md and "```\nx = 1\n    y = 2\n```" in md


def test_deep_nesting_is_read_as_shallow_nesting_is():
    """No flattening at any depth lexbor parses (issue 40 item 3): the walk keeps its own stack, not C's. A table of
    contents nested 5,000 deep is one block per entry, as it is nested 3 deep (the recursive walk made everything
    below 256 levels one run of text: the contents came out as one line); 200,000 levels of inline elements, inside
    a part named as boilerplate (measured in C) or not, overflow nothing."""
    entries = [f"Chapter {i}: on the configuration of module number {i}" for i in range(5000)]
    deep = "".join(f"<ul><li>{e}" for e in entries) + "</li></ul>" * len(entries)
    blocks = [b.text for b in analyze(_page(f"<p>{PARA}</p>{deep}")).blocks]
    assert blocks.count(entries[0]) == 1 and blocks.count(entries[-1]) == 1
    assert [b for b in blocks if b.startswith("Chapter ")] == entries
    deeper = "<span>" * 200_000 + "deeper text" + "</span>" * 200_000
    text = main_content_text(_page(f"<p>{PARA}</p><div class=sidebar>{deeper}</div><p>{PARA}{deeper}</p>"))
    assert text.count("deeper text") == 1


def test_a_walk_built_for_another_selectolax_is_refused():
    """The extractor refuses a walk built for another selectolax release (it reads lexbor's structs by that
    release's layout). What the walk counts of a subtree's text: the next test."""
    walk.compiled.cache_clear()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(walk, "version", lambda _: "0.0.1")
            with pytest.raises(ImportError, match=r"built for selectolax .* 0\.0\.1 is installed"):
                walk.compiled()
    finally:
        walk.compiled.cache_clear()


def test_vocabulary_is_prematched():
    """Every boilerplate token passes the quick pre-match (else it could never be found)."""
    assert all(names._HINT.search(t) for t in content.BOILERPLATE_TOKENS)
    assert content.classify_one("relatedPosts") == -1 and content.classify_one("entry-content") == 1
    assert content.classify_one("ArticleBody-related-coverage") == -1  # a part of the body, named after it
    assert all(names._HINT.search(n) for n in content.ROOT_NAMES)
    assert content.classify_name("RelatedPosts") == (True, 0)  # the hint is matched case-blind
    # the prefix-tree pattern finds what the flat alternation finds, in and around each hint and its prefixes
    flat = re.compile("|".join(content.HINTS))
    probes = [
        f"{a}{h[:k]}{b}"
        for h in content.HINTS
        for k in range(len(h) + 1)
        for a in ("", "x-")
        for b in ("", "s")
    ]
    assert [bool(names._HINT.search(p)) for p in probes] == [bool(flat.search(p)) for p in probes]
    # every "all rights reserved" form holds one of the notice marks, the substring test run before the pattern
    assert all(any(m in form for m in rules._NOTICE_MARKS) for form in content.RESERVED)


def test_numbered_names_are_judged_by_their_words():
    """Digits become zeros before the cached verdict: numbered variants share it, and a part with a digit stays
    no word (``ad1`` is no ``ads``, ``top10-nav`` is no ``nav`` but ``nav-10`` is)."""
    content.forget_names()
    assert content.classify_name("menu-item menu-item-1234") == content.classify_name(
        "menu-item menu-item-77"
    )
    assert content.classify_name("nav-10") == (True, 0) and content.classify_name("top10nav x") == (False, 0)
    assert content.classify_name("post-4373 entry-content") == (False, 1)
    assert content.classify_name("ads1") == (False, 0)


def test_tags_by_id_and_custom_elements():
    """The walk dispatches on lexbor's tag ids: every named tag has its own, and a custom element is inline."""
    ids = walk._tag_ids()
    assert len(set(ids.values())) == len(walk._WHAT)
    text = main_content_text(
        _page(f"<p>{PARA}<my-widget>inline words</my-widget> end</p><x-box><p>{PARA}</p></x-box>")
    )
    assert "inline words end" in text and text.count(PARA.strip()) == 2


# -- determinism and the sandbox -------------------------------------------------------------------------------


def test_deterministic_whatever_came_before():
    pages = [decode_html(PAGES[k[0]], "utf-8") for k in KNOWN]
    first = [main_content_text(p) for p in pages]
    assert [main_content_text(p) for p in reversed(pages)] == first[::-1]


@pytest.mark.parametrize("method", [*METHODS, "datapipe+markdown"])
def test_every_method_gives_the_same_text_in_the_sandbox(method):
    ex = (
        HtmlExtractor(method="datapipe", markdown=True)
        if method == "datapipe+markdown"
        else HtmlExtractor(method)
    )
    items = [(PAGES[k[0]], "utf-8") for k in KNOWN[:4]] + [(VALGRIND.read_bytes(), "utf-8")]
    box = Sandbox(ex, timeout_s=30)
    try:
        assert box.run(items) == [ex(i) for i in items]
    finally:
        box.close()


# -- Trafilatura's cache ---------------------------------------------------------------------------------------


def test_trafilatura_fineweb_clears_only_its_duplicate_cache():
    """The same text as clearing every cache (and collecting garbage) before each page, in any order."""
    from trafilatura import extract
    from trafilatura.meta import reset_caches

    from datapipe.extract.html import TRAFILATURA_PRESETS

    pages = [decode_html(PAGES[k[0]], "utf-8") for k in KNOWN]
    pages += pages[:2]  # a page seen before must not lose its text to the duplicate cache

    def full_reset(html: str) -> str:
        reset_caches()
        return (
            extract(html, output_format="txt", with_metadata=False, **TRAFILATURA_PRESETS["fineweb"]) or ""
        ).strip()

    expected = [full_reset(p) for p in pages]
    assert [trafilatura_text(p, "fineweb") for p in pages] == expected
    assert expected[-1] == expected[1] and expected[1]


# -- Unicode spaces --------------------------------------------------------------------------------------------


def test_spaces_are_unicode_space_separators():
    zs = {chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Zs"} - {" "}
    assert set(SPACES) == zs
    assert normalize_spaces("a\u00a0b\u2009c\u3000d\u2028e") == "a b c d\ne"
    plain = "nothing to do"
    assert normalize_spaces(plain) is plain
    # each character it changes, alone in an otherwise untouched non-ASCII text (one scan decides whether to look)
    for ch in SPACES:
        assert normalize_spaces(f"¶ a{ch}b") == "¶ a b"
    for ch in "\u2028\u2029":
        assert normalize_spaces(f"¶ a{ch}b") == "¶ a\nb"
    for ch in INVISIBLE:
        assert normalize_spaces(f"¶ a{ch}b") == "¶ ab"
    untouched = "¶ déjà vu\u200b"
    assert normalize_spaces(untouched) is untouched


def test_invisible_characters_go():
    """Soft hyphens split a word for every reader of the text but a browser: they go, in every method's text."""
    assert {unicodedata.category(ch) for ch in INVISIBLE} == {"Cf"}
    assert normalize_spaces("Ita\u00adli\u00adens\u2060 \ufeffwine\u200b") == "Italiens wine\u200b"
    html = _page(f"<p>Ita&shy;li&shy;ens, ne&shy;ben Ba&shy;ro&shy;lo. {PARA}</p>")
    assert main_content_text(html).startswith("Italiens, neben Barolo.")


def test_extracted_text_is_composed():
    """A page written on a Mac spells ``ü`` as ``u`` and a combining mark: extracted text is NFC, as
    Trafilatura's is; a JSONL text is the user's and keeps its code points."""
    decomposed = "Mu\u0308ller"
    assert main_content_text(_page(f"<p>{decomposed} {PARA}</p>")).startswith("M\u00fcller ")
    assert as_written(decomposed, extracted=True, normalize=True) == "M\u00fcller"
    assert as_written(decomposed, extracted=False, normalize=True) == decomposed


def test_valgrind_readme_reads_as_english_after_normalization():
    raw = VALGRIND.read_bytes()
    lid = LanguageIdentifier()
    joined = HtmlExtractor(method="resiliparse")((raw, "utf-8"))
    assert joined.count("\u00a0") > 100  # every word joined by U+00A0: the page this rule is for
    assert lid.predict(joined).language != "en"
    for method in METHODS:
        text = normalize_spaces(HtmlExtractor(method)((raw, "utf-8")))
        assert "\u00a0" not in text
        pred = lid.predict(text)
        assert pred.language == "eng_Latn" and pred.score > 0.5, (method, pred)


# -- the stage: every page accounted for -----------------------------------------------------------------------


def _stage(tmp_path: Path, **extract) -> tuple[ExtractStage, Path]:
    mix = load_mixture("dclm_phase3.yaml", search=(BUNDLED,))
    src = replace(mix.source("dolmino_dclm"), langid=None, extract=ExtractConfig(**extract))
    return ExtractStage(src, str(tmp_path / "out")), tmp_path / "in.warc.gz"


def test_stage_normalizes_spaces_and_counts(tmp_path):
    stage, warc = _stage(tmp_path, method="resiliparse")
    write_warc(
        warc, [("https://valgrind.org/docs/manual/dist.readme.html", VALGRIND.read_bytes(), "text/html")]
    )
    stats = stage.process_shard(Shard(0, str(warc), warc.name))
    stage.teardown()
    assert stats.docs_kept == 1 and stats.counters["extract/spaces_normalized"] == 1
    (doc,) = read_records(stage.part_url(Shard(0, str(warc), warc.name)))
    assert "\u00a0" not in doc["text"] and "Release notes for Valgrind" in doc["text"]


def test_stage_states_why_a_huge_or_slow_page_went(tmp_path):
    """A page over ``max_bytes`` is never parsed (read/too_large: the reader skips it); one that takes longer than ``timeout_s``
    is killed (extract/timeout); the others are kept, in order."""
    paras = "".join(
        f'<div class="c{i % 7}"><p>Paragraph {i} says a few words, and a <a href="/x{i}">link</a>.</p></div>'
        for i in range(40000)
    )
    slow = f"<html><body>{paras}</body></html>".encode()  # ~4 MB: Trafilatura needs ~20 s
    huge = b"<html><body>" + b"<p>too much</p>" * 700_000 + b"</body></html>"  # ~10 MB
    ok = PAGES[KNOWN[0][0]]
    stage, warc = _stage(tmp_path, method="trafilatura", timeout_s=1.0, max_bytes=8 << 20)
    write_warc(
        warc,
        [
            ("https://a.example/1", ok, "text/html"),
            ("https://a.example/2", huge, "text/html"),
            ("https://a.example/3", slow, "text/html"),
            ("https://a.example/4", ok, "text/html"),
        ],
    )
    shard = Shard(0, str(warc), warc.name)
    stats = stage.process_shard(shard)
    stage.teardown()
    assert stats.balanced and stats.docs_in == 4 and stats.docs_kept == 2
    assert stats.removed["read/too_large"] == 1 and stats.removed["extract/timeout"] == 1
    assert [d["metadata"]["url"] for d in read_records(stage.part_url(shard))] == [
        "https://a.example/1",
        "https://a.example/4",
    ]


# every character Python counts as whitespace (str.split, str.strip), and some it does not that look like it
_PY_SPACES = [chr(c) for c in range(0x3001) if chr(c).isspace()]
_NOT_SPACES = [
    "\u200b",
    "\u180e",
    "\u2060",
    "\ufeff",
    "\u2030",
    "\u205e",
    "\u3001",
    "|",
    "x",
    "é",
    "中",
    "😀",
]


def test_compiled_text_count_is_selectolax_text_stripped():
    """The walk counts a subtree's text (the page's, a part's share of it) without making it: the count is
    ``len(node.text(deep=True).strip())`` on every element of the fixture pages and with every kind of whitespace
    at the edges of, and spanning, text nodes."""
    import random

    from selectolax.lexbor import LexborHTMLParser

    treewalk, _ = walk.compiled()
    for payload in PAGES.values():
        tree = LexborHTMLParser(decode_html(payload, "utf-8"))
        assert tree.body is not None
        for node in [tree.body, *tree.body.iter()]:
            assert treewalk.text_chars(node.mem_id) == len(node.text(deep=True).strip())
    rng = random.Random(7)
    for _ in range(2000):
        texts = [
            "".join(rng.choices(_PY_SPACES + _NOT_SPACES, k=rng.randint(0, 4)))
            for _ in range(rng.randint(1, 5))
        ]
        tree = LexborHTMLParser("<body>" + "".join(f"<b>{t}</b><i></i>{t}" for t in texts) + "</body>")
        assert tree.body is not None
        assert treewalk.text_chars(tree.body.mem_id) == len(tree.body.text(deep=True).strip()), texts


def test_compiled_gathering_makes_the_blocks_make_block_makes():
    """The walk gathers a block's text in C (whitespace collapsed, ``<br>`` as a line break) and makes it what
    :func:`make_block` makes of the text nodes joined, as the walk in Python did: a whitespace-only text starts
    no block, and a link counts the characters of its text less its outer whitespace."""
    import random

    treewalk, _ = walk.compiled()
    rng = random.Random(11)
    alphabet = _PY_SPACES + _NOT_SPACES + [" | ", "ab", "  "]
    for _ in range(5000):
        parts = [
            None if rng.random() < 0.2 else "".join(rng.choices(alphabet, k=rng.randint(0, 5)))
            for _ in range(rng.randint(1, 6))
        ]
        kind = rng.choice(["p", "li", "tr", "h2"])
        joined: list[str] = []
        chars = 0
        for part in parts:
            if part is None:
                joined.append("\x00")
            elif part and (joined or not part.isspace()):
                joined.append(part)
                chars += len(part.strip())
        block = content.make_block(kind, "".join(joined), 0) if joined else None
        assert treewalk.block_text(parts, kind) == (block.text if block else None, chars), (parts, kind)


def test_declarative_shadow_roots_are_read_where_they_render():
    """A page saved from a browser keeps a web component's text in its declarative shadow root (Chrome's
    ``getHTML({serializableShadowRoots: true})``, SingleFile): ``<template shadowrootmode="open">`` as the host's
    first child, the host's own children rendered in its ``<slot>``. lexbor puts a template's children in its
    content, out of the tree (selectolax's ``text()`` and resiliparse see none of it); the walk reads a shadow
    root in place, nested ones too, and still judges what is named inside it. An inert ``<template>`` is never
    rendered, so never read."""
    from selectolax.lexbor import LexborHTMLParser

    lead, body, aside, inert = (f"{w}: {PARA.strip()}" for w in ("Lead", "Body", "Aside", "Inert"))
    html = _page(
        "<site-header><template shadowrootmode=open><nav class=menu><a href=/>Home</a> <a href=/a>About</a></nav>"
        "</template></site-header>"
        '<news-article><template shadowrootmode="open" shadowrootserializable="">'
        f"<style>:host {{ display: block }}</style><article><h1>The headline</h1><p>{lead}</p>"
        f"<article-body><template shadowroot=open><p>{body}</p><slot></slot></template>"
        "<p>Light text in the slot, a sentence long enough to be kept on its own as the article's text.</p>"
        f"</article-body><aside class=related><p>{aside}</p></aside></article></template></news-article>"
        f"<template id=row><p>{inert}</p></template>"
    )
    a = analyze(html)
    text = a.text()
    assert a.title == "The headline"
    assert lead in text and body in text and "Light text in the slot" in text
    assert text.index(lead) < text.index(body) < text.index("Light text in the slot")
    assert aside not in text and "About" not in text and inert not in text
    assert "Inert" not in " ".join(b.text for b in a.blocks)
    treewalk, _ = walk.compiled()
    tree = LexborHTMLParser(html)
    assert tree.body is not None and body not in tree.body.text(deep=True)
    shown = sum(len(t) for t in (lead, body, aside, "The headline", "Home", "About"))
    assert treewalk.text_chars(tree.body.mem_id) > shown > len(tree.body.text(deep=True).strip())


def test_the_page_behind_an_open_dialog_is_read():
    """``aria-hidden`` hides nothing on the screen. A dialog library (MUI's modal, react-modal, a11y-dialog) sets
    it on the page's root while a dialog is open, so a page saved from a browser with a consent or newsletter
    dialog open holds its whole article under ``aria-hidden="true"``: an element so marked that holds the article
    and most of the page's text is read. An icon, a duplicate slide or a closed menu so marked is not (a
    hamburger menu holding half the page's text, as Dotdash Meredith's sites have it, holds no article)."""
    menu = "".join(f"<li><a href=/s{i}>Section number {i} of the site's menu</a></li>" for i in range(12))
    article = (
        f"<main><article><h1>The headline</h1><p>First: {PARA}</p>"
        f"<p>Second: {PARA}<span aria-hidden=true>(decorative duplicate)</span></p></article></main>"
    )
    dialog = (
        '<div role="presentation" class="MuiModal-root"><div role="dialog" aria-modal="true">'
        "<p>We use cookies to improve your experience. Accept all cookies?</p><button>Accept</button></div></div>"
    )
    for root in (
        '<div id="__next" aria-hidden="true">{}</div>',
        '<app-root aria-hidden="true">{}</app-root>',
    ):
        a = analyze(_page(root.format(f"<header><ul class=nav>{menu}</ul></header>{article}") + dialog))
        text = a.text()
        assert a.title == "The headline" and "First: " in text and "Second: " in text, root
        assert "decorative duplicate" not in text and "cookies" not in text and "Section number" not in text
    # a closed menu marked so, with as much text as the article but no article in it, stays unread
    long_menu = "".join(f"<li><a href=/s{i}>{PARA[:60]} {i}</a></li>" for i in range(12))
    a = analyze(
        _page(f'<div class="partial modal hamburger" aria-hidden="true"><ul>{long_menu}</ul></div>{article}')
    )
    assert not any(b.text.startswith(PARA[:60]) for b in a.blocks)
    assert "First: " in a.text()
