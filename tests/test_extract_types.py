"""The learned extractor across page types: each type told on a real page of it, each page's text holding what its
ground truth holds and not its boilerplate, and the walk's new reading of a page (a ``<noscript>`` holding the page,
forms, hidden parts) on the patterns of the real pages they were found on, each failing on the code before it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from datapipe import HtmlExtractor
from datapipe.config.stages import PAGE_TYPES as CONFIG_TYPES
from datapipe.extract.analysis import analyze, walked
from datapipe.extract.pagetype import PAGE_TYPES
from datapipe.extract.signals import groups_of

FIXTURES = Path(__file__).parent / "fixtures" / "wcxb"
PAGES = sorted(FIXTURES.glob("*.json"))


def _page(meta: Path) -> tuple[dict, bytes]:
    return json.loads(meta.read_text(encoding="utf-8")), gzip.decompress(
        meta.with_suffix(".html.gz").read_bytes()
    )


def test_one_fixture_page_of_each_type() -> None:
    assert sorted(_page(p)[0]["page_type"] for p in PAGES) == sorted(PAGE_TYPES)
    assert CONFIG_TYPES == PAGE_TYPES  # the config's list (a leaf: it cannot import the extractor's)


@pytest.mark.parametrize("meta", PAGES, ids=[p.stem for p in PAGES])
def test_page_type_and_text(meta: Path) -> None:
    page, raw = _page(meta)
    got = HtmlExtractor().extract((raw, None, page["url"]))
    assert got.page_type == page["page_type"], (got.page_type, got.page_type_score)
    assert 0.3 < got.page_type_score <= 1.0
    text = " ".join(got.text.split())
    found = [s for s in page["with"] if " ".join(s.split()) in text]
    assert len(found) >= len(page["with"]) - 1, f"missing: {set(page['with']) - set(found)}"
    leaked = [s for s in page["without"] if " ".join(s.split()) in text]
    assert len(leaked) <= 1, f"boilerplate kept: {leaked}"


# -- the walk's new reading, on the patterns of real pages -----------------------------------------------------

POST = "This is a reply of a forum member with enough words in it to be a real paragraph of a discussion. "

# Discourse (forum.obsidian.md, community.openai.com, ...): the page is a JavaScript application; the topic's posts
# are in a <noscript> for readers without scripts, which lexbor parses as elements
DISCOURSE = (
    "<html><head><title>Plugin recommendations - Obsidian Forum</title></head><body>"
    '<section id="main"><div id="d-splash"><p>Loading…</p></div></section>'
    '<noscript data-path="/t/plugin-recommendations/88771"><header class="d-header"><a href="/">Obsidian</a></header>'
    '<div id="main-outlet" class="wrap" role="main"><div id="topic-title"><h1>Plugin recommendations</h1></div>'
    + "".join(
        f'<div class="topic-body crawler-post" itemprop="comment"><div class="crawler-post-meta">'
        f'<span class="creator" itemprop="author"><a href="/u/m{i}">member{i}</a></span></div>'
        f'<div class="post" itemprop="text"><p>{POST * 3}</p></div></div>'
        for i in range(4)
    )
    + "</div><footer><a href='/privacy'>Privacy</a></footer></noscript></body></html>"
)


@pytest.mark.parametrize("learned", [True, False])
def test_a_noscript_holding_the_page_is_read(learned: bool) -> None:
    a = analyze(DISCOURSE, learned=learned)
    assert a.text().count("This is a reply of a forum member") >= 9, a.text()[:300]


def test_a_noscript_holding_little_is_not_read() -> None:
    page = (
        "<html><body><article><p>" + POST * 6 + "</p></article>"
        "<noscript><p>Please enable JavaScript to use all of this site's functions properly.</p></noscript></body></html>"
    )
    for learned in (True, False):
        assert "enable JavaScript" not in " ".join(b.text for b in analyze(page, learned=learned).blocks)


# Invision Community (forum.kerbalspaceprogram.com, discussion.evernote.com): a topic's posts sit in a moderation
# <form> that holds far less than half the page, each post an <article> under a part named "comments"
INVISION = (
    "<html><body><nav class='ipsNavBar'>"
    + "".join(f"<a href='/f{i}'>Forum section number {i}</a>" for i in range(40))
    + "</nav><main id='ipsLayout_body'><div id='comments' class='cTopic'><div id='elPostFeed'><form>"
    + "".join(
        f"<article id='elComment_{i}' class='cPost ipsBox ipsComment'><div class='ipsComment_content'>"
        f"<div class='cPost_contentWrap'><div class='ipsType_richText'><p>{POST * 2}</p></div></div></div></article>"
        for i in range(3)
    )
    + "</form></div></div></main><footer>"
    + "".join(
        f"<p>Footer line number {i} with a few words of boilerplate in it, repeated.</p>" for i in range(40)
    )
    + "</footer></body></html>"
)


def test_a_form_holding_posts_is_read_by_the_learned_walk() -> None:
    learned = [b.text for b in walked(INVISION).blocks]
    assert sum(POST.strip() in t for t in learned) == 3
    form = next(b for b in walked(INVISION).blocks if POST.strip() in b.text)
    assert {"t:form", "n:comment", "t:article"} <= set(groups_of(form.mask))
    rules = analyze(INVISION, learned=False)
    assert not any(POST.strip() in b.text for b in rules.blocks)  # the rules skip a form under half the page
    assert analyze(INVISION).text().count(POST.strip()) == 6  # each post holds it twice


# a product page's tabs (sleepnumber.com, shop.bombas.com): the description and specifications are in tab panels
# hidden until clicked; a page filled in by script keeps its article in a hidden container the same way
TABS = (
    "<html><head><title>Sound therapy system</title></head><body><main><h1>Sleep sound therapy system</h1>"
    "<p class='price'>$149.00</p><ul class='tabs' role='tablist'><li role='tab'>Details</li><li role='tab'>Specs</li></ul>"
    "<div class='tab-panel' role='tabpanel'><p>A speaker that sits under the pillow and plays sounds that help you "
    "fall asleep, with a timer and a companion app for choosing what it plays.</p></div>"
    "<div class='tab-panel' role='tabpanel' hidden><p>Dimensions 4 by 4 inches; weighs 12 ounces; works with any "
    "mattress; plays for up to eight hours on one charge of its battery.</p></div>"
    "<div class='tab-panel' role='tabpanel' style='display:none'><p>Every order ships free, and you may return it "
    "within a hundred nights for a full refund of what you paid for it.</p></div></main></body></html>"
)


def test_hidden_parts_are_read_and_marked() -> None:
    blocks = walked(TABS).blocks
    specs = next(b for b in blocks if b.text.startswith("Dimensions"))
    shipping = next(b for b in blocks if b.text.startswith("Every order"))
    assert "t:hidden" in groups_of(specs.mask) and "t:hidden" in groups_of(shipping.mask)
    shown = next(b for b in blocks if b.text.startswith("A speaker"))
    assert "t:hidden" not in groups_of(shown.mask)
    rules = " ".join(b.text for b in analyze(TABS, learned=False).blocks)
    assert "Dimensions" not in rules and "Every order" not in rules  # the rules' walk reads no hidden part
    assert "Dimensions 4 by 4 inches" in analyze(TABS).text()


# DocBook's HTML (PostgreSQL's manual, the Debian Reference, Git's user manual): a navigation header that repeats
# the chapter's title above "Prev | Up | Home | Next", and a footer of the same links; kept, the title line repeats
# on every page of a manual and the repetition filters read it (issue 64)
DOCBOOK = (
    "<html><body><div class='navheader'><table summary='Navigation header'><tr><th colspan='3'>Chapter 11. Indexes"
    "</th></tr><tr><td><a href='prev.html'>Prev</a></td><th>Part II. The SQL Language</th>"
    "<td><a href='next.html'>Next</a></td></tr></table></div><div class='chapter'><h2>Chapter 11. Indexes</h2>"
    + "".join(f"<p>{POST * 2}</p>" for _ in range(3))
    + "</div><div class='navfooter'><table summary='Navigation footer'><tr><td><a href='prev.html'>Prev</a></td>"
    "<td><a href='sql.html'>Up</a></td><td><a href='next.html'>Next</a></td></tr><tr><td>10.6. SELECT Output "
    "Columns</td><td><a href='index.html'>Home</a></td><td>11.1. Introduction</td></tr></table></div></body></html>"
)


@pytest.mark.parametrize("learned", [True, False])
def test_documentation_navigation_is_removed(learned: bool) -> None:
    text = analyze(DOCBOOK, learned=learned).text()
    assert text.count("Chapter 11. Indexes") <= 1 and "Part II" not in text and "Prev" not in text, text[:200]
    assert "SELECT Output Columns" not in text and text.count(POST.strip()) == 6
    if learned:
        header = next(b for b in walked(DOCBOOK).blocks if "Part II" in b.text)
        assert "n:nav" in groups_of(header.mask)


def test_page_type_rule_in_a_build(tmp_path: Path) -> None:
    """``extract: {page_types: {keep: [...]}}`` removes the other pages as extract/page_type, each accounted for."""
    from datapipe.config.mixture import SourceConfig
    from datapipe.config.stages import ExtractConfig
    from datapipe.extract.stage import ExtractStage
    from datapipe.io.shards import Shard
    from tests.fixtures.build_bad import write_warc

    records = []
    for meta in PAGES:
        page, raw = _page(meta)
        records.append((page["url"], raw))
    warc = tmp_path / "pages.warc.gz"
    write_warc(warc, [(url, raw, "text/html") for url, raw in records])
    extract = ExtractConfig.from_dict(
        {"page_types": {"keep": ["forum", "documentation"]}, "timeout_s": 0}, "x", "e"
    )
    source = SourceConfig("web", 1.0, "warc", (str(warc),), "text", extract=extract)
    stage = ExtractStage(source, str(tmp_path / "out"))
    stats = stage.process_shard(Shard(0, str(warc), warc.name))
    assert stats.docs_in == len(PAGES)
    assert stats.removed["extract/page_type"] == len(PAGES) - 2
    assert stats.docs_kept == 2
    assert sum(n for k, n in stats.counters.items() if k.startswith("extract/page_type/")) == len(PAGES)


def test_the_extract_stage_version_covers_the_models() -> None:
    """Models trained again decide other blocks: the extract stage's version hash covers their digests (and only
    when the learned extractor runs)."""
    from datapipe.config.mixture import SourceConfig
    from datapipe.config.stages import ExtractConfig
    from datapipe.extract.model import shipped
    from datapipe.orchestrate.registry import BY_NAME

    def config(extract: dict) -> dict:
        source = SourceConfig(
            "web", 1.0, "warc", ("x.warc.gz",), "text", extract=ExtractConfig.from_dict(extract, "x", "e")
        )
        return BY_NAME["extract"].hash_config(None, source, "")  # type: ignore[arg-type]

    models = shipped()
    assert config({})["extract"]["models"] == [models.blocks.digest, models.page_types.digest]
    assert "models" not in config({"learned": False})["extract"]
    assert "models" not in config({"method": "resiliparse"})["extract"]
