"""The extractor's compiled paths against their Python references, on real fixture pages: the class and id
vocabulary (``treewalk.Vocabulary`` against ``names.classify_name``, ``classify_discussion`` and
``signals.mask_of``), the rules' verdicts (``verdicts.decide`` against ``rules.decide``), the choice of blocks
(``scoring.choose`` against ``model.choose``) and the trees' packed thresholds. Each compiled path exists for speed
only: any difference from its reference is a bug in it."""

from __future__ import annotations

import copy
import dataclasses
import gzip
import pickle
import re
from pathlib import Path

import numpy as np
import pytest
from selectolax.lexbor import LexborHTMLParser

from datapipe.extract import model, names, rules, scoring, verdicts, walk
from datapipe.extract.blocks import Block, Container, size_of
from datapipe.extract.html import decode_html
from datapipe.extract.pagetype import head_of
from datapipe.extract.signals import mask_of

FIXTURES = Path(__file__).parent / "fixtures"
PAGES = sorted((FIXTURES / "wcxb").glob("*.html.gz")) + [FIXTURES / "pages" / "valgrind-dist.readme.html"]
# names that test the classifiers' corners: camelCase, BEM modifiers, state prefixes, root names with boilerplate
# after them, comment words against a root's name, layout names, digits, Unicode whitespace and letters
NAMES = [
    "user-post-text comment-text",
    "entry-content no-share",
    "main entry-content",
    "sidebar main",
    "main sidebar",
    "relatedPosts",
    "RelatedPosts",
    "ArticleBody-related-coverage",
    "articleBody",
    "HTMLParser postShare-bar",
    "aBcDeF",
    "menu-item menu-item-1234",
    "nav-10",
    "top10nav x",
    "post-4373 entry-content",
    "ads1",
    "comment-list",
    "MtnComment",
    "live-match-comment",
    "has-sidebar",
    "o-section--has-ads",
    "teaser--premium paywall",
    "is-paywall premium-teaser",
    "post-body post-comments",
    "Content comment",
    "story\u00a0body x\u2003comment",
    "nav\u0085bar comment\x1cnav",
    "\u212aomment ç-nav",
    "  ",
    "",
]


def _trees() -> list[LexborHTMLParser]:
    out = []
    for path in PAGES:
        raw = path.read_bytes()
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
        out.append(LexborHTMLParser(decode_html(raw, None)))
    return out


@pytest.fixture(scope="module")
def trees() -> list[LexborHTMLParser]:
    return _trees()


def test_the_vocabulary_judges_names_as_the_classifiers(trees: list[LexborHTMLParser]) -> None:
    _, compiled = walk.compiled()
    values = set(NAMES)
    for tree in trees:
        for node in tree.css("[class], [id]"):
            attrs = node.attributes
            values.add(" ".join(v for v in (attrs.get("class"), attrs.get("id")) if v))
    assert len(values) > 500
    for value in values:
        for discussion in (False, True):
            want = (names.classify_discussion if discussion else names.classify_name)(value)
            assert compiled.vocabulary.classify(value, discussion) == (*want, mask_of(value, None)), value


@pytest.mark.parametrize("mode", ["rules", "learned"])
def test_the_compiled_verdicts_are_the_rules(trees: list[LexborHTMLParser], mode: str) -> None:
    module, base = walk.compiled() if mode == "rules" else walk.learned()
    kept = 0
    for tree in trees:
        for discussion in (False, True):
            how = dataclasses.replace(base, discussion=discussion)
            mine, theirs = module.Walk(how), module.Walk(how)
            mine.run(tree.body.mem_id)
            theirs.run(tree.body.mem_id)
            got = verdicts.decide(mine.blocks, mine.containers)
            assert got == rules.decide(theirs.blocks, theirs.containers)
            # the containers are changed alike too (their characters and links; an author's <article> a root)
            assert [c._fields() for c in mine.containers] == [c._fields() for c in theirs.containers]
            kept += got.count("")
    assert kept > 100


def test_the_records_are_what_the_dataclasses_were(trees: list[LexborHTMLParser]) -> None:
    """The compiled records (``records.pyx``) read from Python as the dataclasses they replaced: their
    constructors and defaults, equality, ``repr``, pickling, no hash, no other attribute, a mask past 64 bits, a
    container's name; and they are what the walk makes."""
    b = Block("p", "Some text.", 2, 10)
    assert (b.kind, b.text, b.link_chars, b.chars, b.mask, b.path) == (
        "p",
        "Some text.",
        2,
        10,
        0,
        (-1, -1, -1, -1),
    )
    assert b == Block("p", "Some text.", 2, 10, 0, (-1, -1, -1, -1))
    assert b != Block("p", "Some text.", 2, 11) and b != ("p", "Some text.", 2, 10, 0, (-1, -1, -1, -1))
    assert (
        repr(b) == "Block(kind='p', text='Some text.', link_chars=2, chars=10, mask=0, path=(-1, -1, -1, -1))"
    )
    assert pickle.loads(pickle.dumps(b)) == b
    with pytest.raises(TypeError):
        hash(b)
    with pytest.raises(AttributeError):
        b.other = 1  # type: ignore[attr-defined]
    b.mask, b.path = 1 << 70, (3, 5, 8, 13)
    assert pickle.loads(pickle.dumps(b)) == Block("p", "Some text.", 2, 10, 1 << 70, (3, 5, 8, 13))
    c = Container("boiler", 0, 3)
    assert c._fields() == ("boiler", 0, 3, -1, 0, "", None, False, 0)
    assert c == Container("boiler", 0, 3, -1, 0, "", None, False, 0) and c != Container("root", 0, 3)
    attrs: dict[str, str | None] = {"id": "menu", "class": "main-nav  top", "role": "navigation"}
    c = Container("boiler", 0, 3, 7, 120, "div", attrs, True, 40)
    assert c.name == "div@navigation#menu.main-nav|top"
    assert repr(c) == (
        "Container(kind='boiler', tier=0, start=3, end=7, chars=120, tag='div', attrs={'id': 'menu', "
        "'class': 'main-nav  top', 'role': 'navigation'}, skipped=True, link_chars=40)"
    )
    assert pickle.loads(pickle.dumps(c)) == c and copy.copy(c) == c and copy.copy(c) is not c
    with pytest.raises(TypeError):
        hash(c)
    c.kind, c.tier, c.link_chars = "root", 2, 7
    assert (c.kind, c.tier, c.link_chars, c.skipped) == ("root", 2, 7, True)
    module, how = walk.learned()
    w = module.Walk(how)
    w.run(trees[0].body.mem_id)
    assert w.blocks and all(type(x) is Block for x in w.blocks)
    assert w.containers and all(type(x) is Container for x in w.containers)


def test_the_compiled_verdicts_leave_other_records_to_the_reference() -> None:
    block = Block("p", "Some text of a paragraph.", 0, 25)
    odd = Container("boiler", 0, 0, -1)  # never closed: not a record the walk makes
    assert verdicts.decide([block], [odd]) == rules.decide([block], [copy.copy(odd)])
    assert verdicts.decide([], []) == []


def test_the_compiled_choice_is_the_reference() -> None:
    """The same blocks kept: ties, floors, every length around numpy's blocks of 8 and 128 (the page's total in
    its pairwise order), probabilities with far apart weights, and ``p`` as a column of a matrix (the block model's
    output, strided in general)."""
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 7, 8, 9, 40, 127, 128, 129, 300, 1100):
        weight = np.maximum(np.expm1(rng.random(n) * 5), 1.0)
        wide = np.where(rng.random(n) < 0.2, weight * 1e9, weight)
        probabilities = np.stack([rng.random(n), rng.random(n)], axis=1)
        for p in (
            rng.random(n),
            np.round(rng.random(n), 1),
            np.zeros(n),
            np.full(n, 0.5),
            probabilities[:, 1],
        ):
            for w in (weight, wide):
                for floor in (0.0, 0.1, 0.6):
                    want = model.choose(p, w, floor)
                    got = scoring.choose(p, w, floor)
                    assert got.dtype == want.dtype and got.tolist() == want.tolist()
                    why = [str(rng.choice(["", "name", "links", "short:3"])) for _ in range(n)]
                    reasons = ["" if k else (r or "model") for k, r in zip(got.tolist(), why, strict=True)]
                    assert scoring.kept_why(got, why) == reasons
    with pytest.raises(ValueError):
        scoring.kept_why(np.zeros(3, dtype=bool), ["", ""])


def test_packed_thresholds_compare_as_the_models() -> None:
    rng = np.random.default_rng(5)
    threshold = np.concatenate(
        [rng.normal(size=500), np.float32(rng.normal(size=100)).astype(np.float64), [1e300, -1e300, 0.0]]
    )
    n = len(threshold)
    nodes = scoring.pack_nodes(
        np.zeros(n, np.int32), threshold, np.zeros(n, np.int32), np.zeros(n, np.int32), np.ones(n, np.uint8)
    )
    t32 = nodes["threshold"]
    with np.errstate(over="ignore"):
        above = np.nextafter(t32, np.float32(np.inf))
    values = np.concatenate([rng.normal(size=2000), t32, above]).astype(np.float32)
    values = np.concatenate([values, np.float32([np.inf, -np.inf, 3.4e38, -3.4e38])])
    for t, packed in zip(threshold, t32, strict=True):
        assert np.array_equal(values.astype(np.float64) <= t, values <= packed)


def _variants(words: list[str] | tuple[str, ...], pattern: bool) -> list[str]:
    """Each word with one character replaced by every character that the reference's own test would take for it
    (``str.lower()`` gives the word's, or a case-blind pattern matches it)."""
    chars = [chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF]
    alike: dict[str, list[str]] = {}
    for letter in sorted({ch for w in words for ch in w}):
        if pattern:
            one = re.compile(re.escape(letter), re.IGNORECASE)
            alike[letter] = [ch for ch in chars if one.fullmatch(ch)]
        else:
            alike[letter] = [ch for ch in chars if ch.lower() == letter]
    return [w[:pos] + ch + w[pos + 1 :] for w in words for pos in range(len(w)) for ch in alike[w[pos]]]


def test_the_compiled_text_tests_let_every_candidate_by(trees: list[LexborHTMLParser]) -> None:
    """The tests in C before the rules' patterns (a notice's marks, an appeal's words, a caption's signs and words)
    and a text's size: wherever the reference's own first test says yes, so does the test here, on every block of
    the fixture pages and on each word with any one character in any case the reference takes for it."""
    module, how = walk.learned()
    texts = [
        "İ",
        "copyrİght",
        "ВСЕ ПРАВА ЗАЩИЩЕНЫ",
        "¡APÓYANOS!",
        "Credıt: AP",
        "Photo ſource: x",
        "中文字符",
        "한국어",
    ]
    for tree in trees:
        w = module.Walk(how)
        w.run(tree.body.mem_id)
        texts += [b.text for b in w.blocks]
    marks = [m for m in rules._NOTICE_MARKS if m.isalpha()]
    texts += _variants(marks, False) + _variants(rules.APPEAL_WORDS, True)
    texts += _variants(rules.CAPTION_WORDS.split("|"), True) + sorted(rules._APPEAL_KEYS)
    assert len(texts) > 2000
    for text in texts:
        if rules._NOTICE_MARK.search(text.lower()):
            assert text in verdicts.NOTICE_MARKS, text
        if not rules._APPEAL_KEYS.isdisjoint(text.split()):
            assert text in verdicts.APPEAL_WORDS, text
        assert verdicts.caption_candidate(text) == (":" in text or "/" in text or "©" in text), text
        if rules._is_caption(text):
            assert text in verdicts.CAPTION_WORDS or "/" in text, text
        assert verdicts.text_size(text) == size_of(text), text


@pytest.mark.parametrize("pattern", verdicts.FOLDED_PATTERNS, ids=["appeal", "caption_start", "caption_end"])
def test_a_folded_pattern_reads_every_code_point_as_the_case_blind_one(pattern: re.Pattern[str]) -> None:
    """The compiled verdicts read the rules' case-blind patterns case-sensitive over the folded text: the same
    answer on every text when each character of the pattern matches, case-blind, exactly the characters that fold
    to it, and ``\\w`` (so ``\\b``), ``\\s``, ``\\d`` and ``.`` read every character as its fold. Held over every
    code point, with the engine's own case-blind matching as the reference."""
    assert not pattern.flags & re.IGNORECASE
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    folds = verdicts.folded("".join(chars))
    assert len(folds) == len(chars)
    literals = sorted(set(pattern.pattern) | {"\n"})
    any_literal = re.compile("[" + "".join(re.escape(x) for x in literals) + "]", re.IGNORECASE)
    blind = [c for c in chars if any_literal.fullmatch(c)]
    for x in literals:
        same = re.compile(re.escape(x), re.IGNORECASE)
        assert {c for c in blind if same.fullmatch(c)} == {
            c for c, f in zip(chars, folds, strict=True) if f == x
        }, x
    for cls in (r"\w", r"\s", r"\d"):
        each = re.compile(cls)
        assert [
            c for c, f in zip(chars, folds, strict=True) if bool(each.match(c)) != bool(each.match(f))
        ] == []
    assert [c for c, f in zip(chars, folds, strict=True) if (c == "\n") != (f == "\n")] == []


def test_the_folded_patterns_find_what_the_rules_find(trees: list[LexborHTMLParser]) -> None:
    """``by_first_letter`` changes how the engine tries the phrases, not what they find: on every block of the
    fixture pages, on each phrase's own words and on texts made of two phrases' words, the grouped pattern and the
    phrases joined find the same; and the compiled verdicts' appeal and caption tests are the reference's."""
    joined = re.compile(r"(?:" + "|".join(rules.APPEAL_PHRASES) + r")\b")
    grouped = re.compile(r"(?:" + verdicts.by_first_letter(rules.APPEAL_PHRASES) + r")\b")
    module, how = walk.learned()
    texts = []
    for tree in trees:
        w = module.Walk(how)
        w.run(tree.body.mem_id)
        texts += [b.text for b in w.blocks]
    samples = [
        "Support us", "please consider supporting", "Become a member today", "download the mobile app now",
        "Únete a nuestra comunidad", "Abonnez-vous", "ya tenemos un canal de telegram", "unsere newsletter",
        "nuestros boletines newsletter", "síguenos en", "jede kleine spende", "cada donación", "zapraszamy do subskrypcji",
        "Follow us on", "folgen sie uns", "sign up for our", "join our community", "every contribution",
        "Foto: Andina", "PHOTO 2: the bridge", "(Credit: X / Grist)", "Titelbild: dpa", "a / Getty Images",
        "Fotó: nem", "İmage: x", "ſource: Reuters", "x /domena publiczna", "Figure 1: a diagram", "© AFP",
    ]  # fmt: skip
    words = [t for phrase in rules.APPEAL_PHRASES for t in re.split(r"[^\w ]+", phrase) if t.strip()]
    texts += samples + words + [a + " " + b for a in words[:40] for b in words[:40]]
    assert sum(bool(joined.search(verdicts.folded(t))) for t in texts) >= 18
    assert sum(rules._is_caption(t) for t in texts) >= 7
    for text in texts:
        folded = verdicts.folded(text)
        assert bool(grouped.search(folded)) == bool(joined.search(folded)), text
        assert bool(grouped.search(folded)) == bool(rules._APPEAL.search(text)), text
        assert verdicts.caption(text) == rules._is_caption(text), text
    with pytest.raises(ValueError, match="open with a letter"):
        verdicts.by_first_letter(["(?:a|b) c"])
    with pytest.raises(ValueError, match="one alternative"):
        verdicts.by_first_letter(["ab|ac"])  # grouped as a(?:b|ac), it would find "aac", not "ac"
    phrases = [r"a[|]b", r"a\|c", "a(?:b|c)d", "a[]|]e", "a[^]|]f"]
    assert verdicts.by_first_letter(phrases) == r"a(?:[|]b|\|c|(?:b|c)d|[]|]e|[^]|]f)"


def test_the_compiled_head_and_title_are_selectolax_reads(trees: list[LexborHTMLParser]) -> None:
    """``treewalk.head_parts`` is ``pagetype.head_of`` and ``treewalk.first_title`` the text of
    ``css_first("title")``, on the fixture pages and on heads that test their corners (a valueless or empty
    ``property`` before a ``name``, upper case, a meta without content, an empty script)."""
    module, _ = walk.compiled()
    corners = [
        '<head><meta property name="Generator" content="Hugo"><meta property="" name=og:TYPE content=article>'
        '<meta name=generator><script type="Application/LD+JSON"></script><title> A \n b </title></head>',
        '<head><script type=application/ld+json>{"@type": "Product"}</script><meta property=og:type></head>'
        "<body><svg><title>icon</title></svg></body>",
        "<body><p>no head, no title</p></body>",
    ]
    pages = list(trees) + [LexborHTMLParser(html) for html in corners]
    seen = 0
    for tree in pages:
        want = head_of(tree)
        assert module.head_parts(tree.head.mem_id) == want
        seen += len(want[0]) + len(want[1])
        node = tree.css_first("title")
        title = " ".join(node.text(deep=True).split()) or None if node is not None else None
        assert module.first_title(tree.root.mem_id) == title
    assert seen > 10


def test_few_rows_score_as_many() -> None:
    """A forest's scores of fewer than ``scoring.FEW_ROWS`` rows (its trees walked eight at a time) are those the
    rows get among many (each tree walked by every row), NaN included."""
    forest = model.shipped().page_types.forest
    rng = np.random.default_rng(7)
    width = int(forest.feature.max()) + 1
    x = rng.normal(size=(40, width)).astype(np.float32)
    x[rng.random(x.shape) < 0.1] = np.nan
    many = scoring.forest_scores(x, forest.nodes, forest.roots, forest.leaf_value, forest.classes)
    for n in range(scoring.FEW_ROWS):
        few = scoring.forest_scores(
            x[:n].copy(), forest.nodes, forest.roots, forest.leaf_value, forest.classes
        )
        assert np.array_equal(few, many[:n])


def test_the_compiled_utf8_is_cpythons() -> None:
    """``treewalk.utf8`` writes the bytes ``str.encode("utf-8", "ignore")`` does (what selectolax parses a ``str``
    as): every width of str, runs of ASCII of every length around other characters, lone surrogates dropped."""
    module, _ = walk.compiled()
    rng = np.random.default_rng(11)
    pool = [
        "a",
        " ",
        "\x7f",
        "\x80",
        "é",
        "\xff",
        "\u07ff",
        "\u0800",
        "€",
        "\uffff",
        "\ud800",
        "\udfff",
        "😀",
    ]
    pool += ["\U0010ffff", "b" * 7, "c" * 16, "d" * 33]
    texts = ["", "ascii only", "é" * 40, "€" * 3 + "x" * 29, "😀" + "y" * 50]
    for _ in range(3000):
        texts.append("".join(pool[k] for k in rng.integers(0, len(pool), size=int(rng.integers(0, 40)))))
    for path in PAGES:
        raw = path.read_bytes()
        texts.append(decode_html(gzip.decompress(raw) if path.suffix == ".gz" else raw, None))
    for text in texts:
        assert module.utf8(text) == text.encode("utf-8", "ignore"), repr(text[:80])


def test_a_value_judged_again_on_a_page_is_judged_alike() -> None:
    """The walk judges each class-and-id value once a page (``Walk.judge`` keeps the verdicts by their bytes): on
    a page of repeated, swapped, empty and near-identical names, every block's groups and every container are
    those of the same element walked alone."""
    module, how = walk.learned()
    names = ["nav", "post-body", "comments", "nav", "", "sidebar widget", "post-body", "nav"]
    pairs = [(c, i) for c in names for i in ("", "nav", "main", "comments")] * 2
    pairs += [("navx", ""), ("na", "v"), ("n", "av"), ("product card", "x"), ("product", "card x")]

    def element(c: str, i: str, k: int) -> str:
        attrs = (f' class="{c}"' if c else "") + (f' id="{i}"' if i else "")
        return f"<div{attrs}><p>Block number {k} of the page, long enough to be a block of its own.</p></div>"

    def record(html: str) -> tuple[list[int], list[tuple[str, int]]]:
        tree = LexborHTMLParser(html)  # alive while the walk reads it
        w = module.Walk(how)
        w.run(tree.body.mem_id)
        return [b.mask for b in w.blocks], [(c.kind, c.tier) for c in w.containers]

    page_masks, page_containers = record("".join(element(c, i, k) for k, (c, i) in enumerate(pairs)))
    alone_masks: list[int] = []
    alone_containers: list[tuple[str, int]] = []
    for k, (c, i) in enumerate(pairs):
        masks, containers = record(element(c, i, k))
        alone_masks += masks
        alone_containers += containers
    assert page_masks == alone_masks and len(page_masks) == len(pairs)
    assert page_containers == alone_containers and any(kind == "boiler" for kind, _ in page_containers)


def test_the_pairwise_sum_is_numpys() -> None:
    """``scoring.pairwise_sum`` adds as numpy's ``sum`` does (its pairwise order): the same double for every length
    (below, in and above its blocks of 8 and 128, above its buffer of 8,192), with terms of far apart sizes whose
    sum depends on the order."""
    rng = np.random.default_rng(3)
    for n in [*range(300), 1000, 1023, 8191, 8192, 8193, 20011]:
        a = np.expm1(rng.random(n) * rng.choice([1.0, 10.0, 40.0], n))
        a = np.where(rng.random(n) < 0.3, a * 1e13, a)
        assert scoring.pairwise_sum(a) == a.sum()


def _block_parts(x: np.ndarray, slack: float = 1.0) -> tuple[np.ndarray | None, np.ndarray]:
    """The compiled page part of ``x`` (block features) and its numpy reference."""
    from datapipe.extract import pagetype

    chars = np.expm1(x[:, pagetype._CHARS].astype(np.float64))
    got = scoring.page_block_part(
        x, chars, pagetype._KIND_COLUMNS, pagetype._KIND_AT["li"], pagetype._KIND_AT["tr"],
        pagetype._KIND_AT["pre"], pagetype._LINK_SHARE, pagetype._CURRENCY, pagetype._GROUPS_AT,
        float(pagetype.PROSE_CHARS), slack,
    )  # fmt: skip
    return got, pagetype._block_part_numpy(x, chars)


def test_the_compiled_page_part_is_the_reference(trees: list[LexborHTMLParser]) -> None:
    """``scoring.page_block_part`` gives the float32s of ``pagetype._block_part_numpy`` (the page model reads
    float32) on real pages and on made ones (random kinds, sizes, links, groups, many pages of one kind); where it
    cannot promise them (here forced by a wide ``slack``) it says None and ``_block_part`` takes the reference."""
    from datapipe.extract import pagetype
    from datapipe.extract.analysis import _walked
    from datapipe.extract.features import FEATURES, block_features

    xs = []
    for tree in trees:
        a = _walked(tree)
        xs.append(block_features(a.blocks, a.containers, a.why, extra=7))
    rng = np.random.default_rng(5)
    for n in (1, 2, 7, 9, 130, 300, 2000):
        x = np.zeros((n, len(FEATURES) + 7), dtype=np.float32)
        kinds = rng.integers(0, len(pagetype._KINDS), n) if n != 300 else np.zeros(n, dtype=np.int64)
        x[np.arange(n), pagetype._KIND_COLUMNS[kinds]] = 1.0
        x[:, pagetype._CHARS] = np.log1p(rng.integers(0, 3000, n)).astype(np.float32)
        x[:, pagetype._LINK_SHARE] = rng.random(n).astype(np.float32)
        x[:, pagetype._CURRENCY] = rng.integers(0, 3, n)
        x[:, pagetype._GROUPS_AT] = rng.random((n, len(pagetype._GROUPS_AT))) < 0.3
        xs.append(x)
    seen = 0
    for x in [x for x in xs if len(x)]:
        got, ref = _block_parts(x)
        assert got is not None and np.array_equal(got.astype(np.float32), ref.astype(np.float32))
        assert np.array_equal(pagetype._block_part(x), got)
        assert np.array_equal(got[[0, 1, 4, *range(7, len(got))]], ref[[0, 1, 4, *range(7, len(ref))]])
        wide, _ = _block_parts(x, 1e12)
        seen += wide is None
    assert seen >= 8  # the shares, widened, come near a float32's boundary and are refused


def test_the_page_part_falls_back_to_the_reference(
    trees: list[LexborHTMLParser], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the compiled pass refuses, the page's features are the reference's."""
    from datapipe.extract import pagetype
    from datapipe.extract.analysis import _walked
    from datapipe.extract.features import block_features

    a = _walked(trees[0])
    x = block_features(a.blocks, a.containers, a.why, extra=7)
    want = pagetype._block_part(x)
    monkeypatch.setattr(scoring, "page_block_part", lambda *args: None)
    got = pagetype._block_part(x)
    assert np.array_equal(
        got, pagetype._block_part_numpy(x, np.expm1(x[:, pagetype._CHARS].astype(np.float64)))
    )
    assert np.array_equal(got.astype(np.float32), want.astype(np.float32))


def _row_by_row(forest: model.Forest, x: np.ndarray) -> np.ndarray:
    """Each row's scores alone (the few-rows path: every node of every tree walked, nothing folded)."""
    return np.concatenate(
        [
            scoring.forest_scores(
                x[r : r + 1].copy(), forest.nodes, forest.roots, forest.leaf_value, forest.classes
            )
            for r in range(len(x))
        ]
    )


def test_a_pages_rows_score_as_each_alone(trees: list[LexborHTMLParser]) -> None:
    """The block model's scores of a page's rows (the nodes on columns every row shares decided once, the trees
    walked eight rows at a time) are each row's scored alone: on real pages, and on made rows whose shared columns
    hold NaN (each node's default way), -0.0 beside 0.0 (not the same bits: not folded), and row counts around
    eight."""
    from datapipe.extract.analysis import _walked
    from datapipe.extract.features import block_features
    from datapipe.extract.pagetype import page_features

    shipped = model.shipped()
    forest = shipped.blocks.forest
    seen = 0
    for tree in trees:
        a = _walked(tree)
        x = block_features(a.blocks, a.containers, a.why, extra=7)
        if len(x) < scoring.FEW_ROWS:
            continue
        page = shipped.page_types.probabilities(page_features("", list(a.declared), list(a.generators), x))[0]
        x[:, x.shape[1] - 7 :] = page.astype(np.float32)
        got = scoring.forest_scores(x, forest.nodes, forest.roots, forest.leaf_value, forest.classes)
        assert np.array_equal(got, _row_by_row(forest, x))
        seen += 1
    assert seen >= 6
    rng = np.random.default_rng(13)
    width = int(forest.feature.max()) + 1
    for n in (8, 9, 15, 16, 17, 40):
        x = rng.normal(size=(n, width)).astype(np.float32)
        shared = rng.random(width) < 0.5
        x[:, shared] = x[0, shared]
        x[:, rng.random(width) < 0.1] = np.nan
        x[rng.random(x.shape) < 0.05] = np.nan
        zero = np.flatnonzero(rng.random(width) < 0.1)
        x[:, zero] = 0.0
        x[::2, zero] = -0.0
        got = scoring.forest_scores(x, forest.nodes, forest.roots, forest.leaf_value, forest.classes)
        assert np.array_equal(got, _row_by_row(forest, x))
    narrow = np.zeros((10, width - 1), dtype=np.float32)
    with pytest.raises(ValueError):
        scoring.forest_scores(narrow, forest.nodes, forest.roots, forest.leaf_value, forest.classes)
