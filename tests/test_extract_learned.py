"""The learned extractor's parts, each on its own: the compiled trees against LightGBM's own prediction, the text
statistics, the choice of blocks, the feature layout, the groups the walk records, and the shipped models."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from datapipe.extract.analysis import analyze, walked
from datapipe.extract.features import FEATURES, KINDS, WHYS, block_features
from datapipe.extract.model import BLOCKS, MODELS, PAGE_TYPES, Forest, Learned, choose, load_models, shipped
from datapipe.extract.pagetype import BLOCK_MODEL_FEATURES, page_features, vocabulary
from datapipe.extract.pagetype import FEATURES as PAGE_FEATURES
from datapipe.extract.pagetype import PAGE_TYPES as TYPE_NAMES
from datapipe.extract.scoring import STATS, text_stats
from datapipe.extract.signals import GROUPS, groups_of, mask_of

lgb = pytest.importorskip("lightgbm")


def _data(rows: int, classes: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(rows, 12)).astype(np.float32)
    x[rng.random(x.shape) < 0.05] = np.nan  # missing values go where the split says
    score = np.nan_to_num(x[:, 0]) + 0.5 * np.nan_to_num(x[:, 1]) * np.nan_to_num(x[:, 2])
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1])).astype(float)
    return x, y


@pytest.mark.parametrize("classes", [1, 3])
def test_the_compiled_trees_score_as_lightgbm_predicts(classes: int) -> None:
    x, y = _data(3000, max(2, classes))
    params = {
        "objective": "binary" if classes == 1 else "multiclass",
        "num_leaves": 15,
        "verbose": -1,
        "seed": 1,
    }
    if classes > 1:
        params["num_class"] = classes
    booster = lgb.train(params, lgb.Dataset(x, label=y), num_boost_round=40)
    forest = Forest.from_lightgbm(booster.dump_model())
    assert len(forest.roots) == 40 * classes
    mine = forest.raw(x[:500])
    theirs = booster.predict(x[:500], raw_score=True).reshape(500, classes)
    np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-9)


def test_text_statistics() -> None:
    got = text_stats(["Buy now for $19.99. Free shipping!", "", "ÜBER uns", "3 items_in cart"])
    assert STATS == ("words", "digit_share", "upper_share", "ends_sentence", "currency", "sentences")
    words, digits, upper, ends, currency, sentences = got.T
    assert list(words) == [7, 0, 2, 3]  # \w+ runs, as the metric counts words ("19", "99"; "items_in" is one)
    assert digits[0] == pytest.approx(4 / 25) and upper[0] == pytest.approx(
        2 / 25
    )  # of 25 letters and digits
    assert list(ends) == [1, 0, 0, 0] and list(currency) == [1, 0, 0, 0] and sentences[0] == 1
    assert upper[2] == pytest.approx(4 / 7)


def test_choose_keeps_what_raises_the_expected_f1() -> None:
    p = np.array([0.9, 0.8, 0.05, 0.6, 0.3])
    w = np.array([100.0, 50.0, 100.0, 10.0, 10.0])
    # 0.9 and 0.8 raise the expected F1 (from 0 to 0.76 and 0.89); a 0.6 block of 10 words raises it a little
    # more, one of 0.3 would lower it, and the 0.05 one is under the floor
    assert choose(p, w, 0.1).tolist() == [True, True, False, True, False]
    assert choose(p, w, 0.7).tolist() == [True, True, False, False, False]
    # a page whose blocks all look doubtful still keeps its best
    assert choose(np.array([0.2, 0.15]), np.array([5.0, 5.0]), 0.1).tolist() in ([True, False], [True, True])
    assert choose(np.array([]), np.array([]), 0.1).tolist() == []


PAGE = """<html><head><title>Trail pack</title></head><body>
<nav class="main-menu"><ul><li><a href="/">Home</a></li><li><a href="/shop">Shop</a></li></ul></nav>
<main><h1>Trail pack 25</h1>
<div class="product-price"><p>$89.95</p></div>
<div class="tabs"><div class="tab-panel" hidden><p>A light pack for day hikes, with a rain cover, a hip belt and
room for a water reservoir: everything a long day on the trail asks for.</p></div></div>
<p>Our lightest pack yet, for the trail and the city alike: 25 litres, two side pockets and a padded back.</p>
</main><footer><p>&copy; 2026 Example Outfitters</p></footer></body></html>"""


def test_the_learned_walk_reads_hidden_parts_and_marks_them() -> None:
    a = walked(PAGE)
    texts = [b.text for b in a.blocks]
    hidden = next(b for b in a.blocks if b.text.startswith("A light pack"))
    assert "t:hidden" in groups_of(hidden.mask) and "n:tab" in groups_of(hidden.mask)
    price = next(b for b in a.blocks if b.text == "$89.95")
    assert {"n:product", "n:price"} <= set(groups_of(price.mask))
    assert "Home" in " ".join(texts)  # a menu is walked, not skipped: the model judges it
    rules_only = analyze(PAGE, learned=False)
    assert not any(b.text.startswith("A light pack") for b in rules_only.blocks)


def test_block_features_have_their_named_layout() -> None:
    a = walked(PAGE)
    x = block_features(a.blocks, a.containers, a.why)
    assert x.shape == (len(a.blocks), len(FEATURES)) and x.dtype == np.float32
    col = {name: i for i, name in enumerate(FEATURES)}
    for i, (b, w) in enumerate(zip(a.blocks, a.why, strict=True)):
        assert x[i, col[f"kind:{b.kind}"]] == 1 and x[i, : len(KINDS)].sum() == 1
        assert x[i, len(KINDS) : len(KINDS) + len(WHYS)].sum() == 1
        assert x[i, col["why:kept"]] == (0 if w else 1)
        assert x[i, col["link_share"]] == pytest.approx(b.link_chars / b.chars)
        for g in groups_of(b.mask):
            assert x[i, col[f"group:{g}"]] == 1
    home = next(i for i, b in enumerate(a.blocks) if b.text == "Home")
    assert x[home, col["link_share"]] == 1 and x[home, col["group:n:nav"]] == 1
    assert np.isfinite(x).all()


def test_mask_groups_are_whole_word_tokens() -> None:
    assert groups_of(mask_of("product-price", None)) == ["n:product", "n:price"]
    assert mask_of("canvas-wrapper", None) == mask_of("wrapper", None)  # "canvas" names no "nav"
    assert "t:nav" in groups_of(mask_of(None, "navigation"))
    assert len(set(GROUPS)) == len(GROUPS)


def test_the_shipped_models_match_this_code() -> None:
    models = shipped()
    assert (
        models.blocks.features == BLOCK_MODEL_FEATURES and BLOCK_MODEL_FEATURES[: len(FEATURES)] == FEATURES
    )
    assert models.page_types.features == PAGE_FEATURES and models.page_types.classes == TYPE_NAMES
    assert models.blocks.trained_on == "0,1,2,3,4"
    assert models.blocks.vocabulary == models.page_types.vocabulary == vocabulary()
    assert 0 < models.blocks.floor < 0.5
    a = analyze(PAGE, "https://shop.example.com/products/trail-pack-25")
    assert a.page_type in TYPE_NAMES and 0 < a.page_type_score <= 1
    assert a.scores is not None and len(a.scores) == len(a.blocks)
    assert "Our lightest pack yet" in a.text()


def test_a_damaged_or_other_model_is_refused(tmp_path: Path) -> None:
    import datapipe.extract as pkg

    src = Path(pkg.__file__).parent / MODELS
    for name in (BLOCKS, PAGE_TYPES):
        shutil.copy(src / f"{name}.npz", tmp_path / f"{name}.npz")
        shutil.copy(src / f"{name}.json", tmp_path / f"{name}.json")
    assert load_models(tmp_path).blocks.digest == shipped().blocks.digest
    meta = json.loads((tmp_path / f"{BLOCKS}.json").read_text())
    meta["digest"] = "0" * 16
    (tmp_path / f"{BLOCKS}.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="damaged"):
        load_models(tmp_path)
    other = Learned(shipped().blocks.forest, ("chars",), floor=0.1)
    with pytest.raises(ValueError, match="retrain"):
        other.check(FEATURES, "block")
    # the same columns computed with other word lists (a group's words edited, the model not retrained)
    meta["digest"] = shipped().blocks.digest
    meta["vocabulary"] = "0" * 16
    (tmp_path / f"{BLOCKS}.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="other word lists"):
        load_models(tmp_path)


def test_page_features_read_declared_types_and_url_shape() -> None:
    html = (
        '<html><head><meta property="og:type" content="product"><meta name="generator" content="Shopify">'
        '<script type="application/ld+json">{"@type": "Product", "name": "x"}</script></head><body>'
        '<div itemscope itemtype="https://schema.org/Offer"><p>$5</p></div>'
        '<script type="application/ld+json">{"@type": ["BreadcrumbList"]}</script></body></html>'
    )
    a = walked(html)
    assert a.generators == ("Shopify",)
    assert "og:product" in a.declared and "https://schema.org/Offer" in a.declared
    x = block_features(a.blocks, a.containers, a.why)
    row = page_features("https://store.example.com/products/x-1", list(a.declared), list(a.generators), x)[0]
    col = {name: i for i, name in enumerate(PAGE_FEATURES)}
    assert (
        row[col["schema:product"]] == 1
        and row[col["schema:offer"]] == 1
        and row[col["schema:breadcrumblist"]] == 1
    )
    assert row[col["generator:shopify"]] == 1
    assert row[col["url:products"]] == 1 and row[col["host:store"]] == 1 and row[col["url:depth"]] == 2
    assert row[col["schema:article"]] == 0 and row[col["page:currency"]] > 0
    assert walked(html.encode()).declared == a.declared


def _stats_reference(text: str) -> list[float]:
    """text_stats' row of one text, in Python: what each character is to ``str.isalnum``, ``isdigit`` and
    ``isupper`` (ASCII's ``_`` a word character too), the currency signs and the signs that end a sentence."""
    words = digits = upper = alnum = currency = sentences = 0
    inword, prev = False, ""
    for ch in text:
        word = ch.isalnum() or ch == "_" if ch.isascii() else ch.isalnum()
        if word:
            alnum += 1
            digits += ch.isdigit()
            upper += not ch.isdigit() and ch.isupper()
        words += word and not inword
        inword = word
        currency += ch in "$£¥€₹₽₩"
        sentences += ch == " " and prev in ".!?。！？…" and prev != ""
        prev = ch
    return [
        words,
        digits / alnum if alnum else 0.0,
        upper / alnum if alnum else 0.0,
        1.0 if text and prev in ".!?。！？…" else 0.0,
        currency,
        sentences,
    ]


def test_text_statistics_of_every_character() -> None:
    """The compiled counts (a table of the Basic Multilingual Plane's classes, the Unicode database beyond it) are
    Python's, on every character of the BMP, a sample beyond it, and mixed texts."""
    texts = [
        "".join(chr(c) for c in range(start, start + 256) if not 0xD800 <= c <= 0xDFFF)
        for start in range(0, 0x10000, 256)
    ]
    texts += [
        "".join(chr(c) for c in range(start, start + 4096, 7)) for start in range(0x10000, 0x110000, 0x10000)
    ]
    texts += [
        "Buy now for $19.99. Free shipping!",
        "",
        "ÜBER uns 。 x",
        "Σ ΣΑΣ 123 ٣٤ ½ ² Ⅻ",
        "a_b 𝐀𝐁 𝟏 ！ ？ …",
    ]
    got = text_stats(texts)
    for row, text in zip(got.tolist(), texts, strict=True):
        assert row == pytest.approx(_stats_reference(text), rel=1e-6), text[:20]


# URLs whose parts urlsplit finds in its corners: ports, userinfo, case, empty parts, fragments before and after a
# query, no scheme, schemes of every allowed character, brackets, percent signs, spaces, tabs, non-ASCII
URLS = [
    "",
    "https://www.example.com/",
    "https://www.example.com",
    "http://Forum.Example.CO.uk:8080/Threads/123-title.html?page=2#post-9",
    "https://user:pw@docs.example.org/a/b/",
    "https://docs.example.org/a@b/c",
    "https://shop.example.com/p/?",
    "https://shop.example.com/p/#?x",
    "https://shop.example.com/p?x#y?z",
    "https://shop.example.com?x=1",
    "https://shop.example.com#frag",
    "http:///path/only",
    "//example.com/no/scheme",
    "example.com:8080/x",
    "hard::100noticias.com-millones.html",
    "a+b-c.d://host.example/x",
    "1http://host/x",
    "https://[::1]:8080/x",
    "https://host]/x",
    "https://ho%41st.example/x",
    " https://lead.example/x",
    "https://tab.exa\tmple/x\n",
    "https://bücher.example/kategorie/2024/",
    "https://example.com/caf\u00e9/\u00b2",
    "https://forum.community.example.com/t/42",
    "https://support.help.example/answers",
    "HTTPS://WWW.EXAMPLE.COM/BLOG/2019/05/POST",
    "https://example.com/x.php",
    "mailto:someone@example.com",
    "https://example.com:/x",
]


def _url_part_reference(url: str) -> list[float]:
    """pagetype._url_part as it was written first (urlsplit for every URL, each host word tested in turn)."""
    import math
    from urllib.parse import urlsplit

    from datapipe.extract import pagetype

    words = [0.0] * len(pagetype.URL_WORDS)
    host = [0.0] * len(pagetype._HOST_WORDS)
    if not url:
        return words + host + [0.0] * 6 + [0.0]
    parts = urlsplit(url)
    path = (parts.path or "/").lower()
    segments = [s for s in path.split("/") if s]
    for tok in pagetype._SPLIT.split(path):
        i = pagetype._URL_INDEX.get(tok)
        if i is not None:
            words[i] = 1.0
    labels = (parts.hostname or "").split(".")
    inner = labels[:-2]
    for j, w in enumerate(pagetype._HOST_WORDS):
        if w in inner or (labels and labels[0] == w):
            host[j] = 1.0
    numbers = sum(any(ch.isdigit() for ch in s) for s in segments)
    last = segments[-1] if segments else ""
    end = last.endswith((".html", ".htm", ".php", ".aspx"))
    year = pagetype._YEAR.search(path)
    tail = [float(len(segments)), 1.0 if parts.query else 0.0, float(numbers), 1.0 if year else 0.0]
    return words + host + tail + [1.0 if end else 0.0, math.log1p(len(last)), 1.0]


def test_the_url_features_are_urlsplits() -> None:
    """A URL's parts read by one match where it is plain are urlsplit's (its path, query and host name), and the
    URL features the same as the first version's, on URLs in urlsplit's corners and on the fixture pages'."""
    from urllib.parse import urlsplit

    from datapipe.extract import pagetype

    urls = list(URLS)
    for path in sorted((Path(__file__).parent / "fixtures" / "wcxb").glob("*.json")):
        urls.append(json.loads(path.read_text(encoding="utf-8")).get("url") or "")

    def outcome(f: Callable[[str], object], url: str) -> object:
        try:
            return f(url)
        except ValueError as e:  # urlsplit refuses a bracket without its pair: so must this
            return type(e)

    def split(url: str) -> tuple[str, str, str]:
        parts = urlsplit(url)
        return parts.path, parts.query, parts.hostname or ""

    fast = 0
    for url in urls:
        assert outcome(pagetype._url_part, url) == outcome(_url_part_reference, url), url
        if url:
            assert outcome(pagetype._split_url, url) == outcome(split, url), url
            fast += pagetype._SIMPLE_URL.match(url) is not None
    assert fast >= 15
