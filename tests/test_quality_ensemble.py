"""Ensembles of quality scorers (issue 41 item 3): per-scorer percentile buckets from the whole input's scores,
combined by weighted mean or max, selected by bucket, the same bytes on both engines, each document's buckets its
evidence."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from datapipe import ConfigError, load_mixture, read_records, read_removed
from datapipe.config.recipe import load_recipe
from datapipe.quality.ensemble import boundaries, bucket_of, combine, ensemble_report, scores_array
from datapipe.quality.train import train
from tests.conftest import build_on_both_engines, one_source_mixture, write_mixture


@given(st.lists(st.floats(0, 1), min_size=1, max_size=300), st.integers(2, 20))
def test_buckets_split_the_scores_into_near_equal_parts(values, buckets):
    """Every score falls in one bucket 0..B-1; the boundaries are exact quantiles of the scores, so a bucket holds
    about n/B of them (ties aside); the report does not depend on how the scores are split into shards."""
    arr = np.array(values)
    bounds = boundaries(arr, buckets)
    assert len(bounds) == buckets - 1 and bounds == sorted(bounds)
    got = [bucket_of(v, bounds) for v in values]
    assert all(0 <= b <= buckets - 1 for b in got)
    assert bucket_of(min(values), bounds) == min(got) and bucket_of(max(values), bounds) == max(got)
    parts = [scores_array(["a"], {"a": values[:k]}) for k in (len(values) // 2,)] + [
        scores_array(["a"], {"a": values[len(values) // 2 :]})
    ]
    whole = ensemble_report([scores_array(["a"], {"a": values})], ["a"], buckets)
    assert ensemble_report(parts, ["a"], buckets) == whole


def test_buckets_combine_by_weighted_mean_or_max():
    assert combine({"a": 9, "b": 3}, {"a": 1.0, "b": 1.0}, "mean") == 6.0
    assert combine({"a": 9, "b": 3}, {"a": 3.0, "b": 1.0}, "mean") == 7.5
    assert combine({"a": 9, "b": 3}, {"a": 1.0, "b": 1.0}, "max") == 9.0
    assert bucket_of(0.5, [0.2, 0.5, 0.7]) == 2 and bucket_of(0.1, [0.2, 0.5, 0.7]) == 0
    assert bucket_of(0.9, [0.2, 0.5, 0.7]) == 3 and boundaries(np.zeros(0), 4) == []


@pytest.fixture(scope="module")
def scorers(tmp_path_factory):
    out = tmp_path_factory.mktemp("classifiers")
    fasttext = train(load_recipe("fixture_quality"), str(out))
    embedding = train(load_recipe("fixture_quality_embedding"), str(out))
    return fasttext.model_url, embedding.model_url


def mixture_text(ft: str, emb: str) -> str:
    stages = (
        f'quality:\n  classifiers: [{{name: ft, model: "{ft}"}}, {{name: emb, model: "{emb}"}}]\n'
        "  ensemble: {buckets: 10, combine: mean, weights: {ft: 2}}\n"
        "  select: {classifier: ensemble, min_bucket: 4, repeat: {7: 2, 8.5: 3}}"
    )
    paths = ["prose/pydoc-howto-*.jsonl.gz", "prose/pydoc-faq-*.jsonl", "fortunes/*.jsonl.zst"]
    return one_source_mixture("qx", "prose", paths, stages)


def test_an_ensemble_selects_by_bucket_the_same_on_both_engines(scorers, tmp_path):
    ft, emb = scorers
    mix = write_mixture(tmp_path, mixture_text(ft, emb), "qx.yaml")
    build_on_both_engines(mix, tmp_path)
    (stage,) = (tmp_path / "beam" / "prose").glob("quality-*")
    doc = json.loads((stage / "stage.json").read_text())
    report = doc["quality"]
    assert report["buckets"] == 10 and sorted(report["boundaries"]) == ["emb", "ft"]
    kept = [d for p in sorted(stage.glob("part-*.jsonl.zst")) for d in read_records(str(p))]
    for d in kept:  # each document's evidence: its scores, each scorer's bucket and the weighted mean
        q, b = d["metadata"]["quality"], d["metadata"]["quality_buckets"]
        assert b["ft"] == bucket_of(q["ft"], report["boundaries"]["ft"])
        assert b["emb"] == bucket_of(q["emb"], report["boundaries"]["emb"])
        assert b["ensemble"] == round((2 * b["ft"] + b["emb"]) / 3, 4) >= 4
    # the top buckets go two or three times into the token cache
    copies = [
        3
        if d["metadata"]["quality_buckets"]["ensemble"] >= 8.5
        else 2
        if d["metadata"]["quality_buckets"]["ensemble"] >= 7
        else 1
        for d in kept
    ]
    assert [d["metadata"].get("quality_repeats", 1) for d in kept] == copies and max(copies) > 1
    (tok,) = (tmp_path / "beam" / "prose").glob("tokenize-*")
    cache = json.loads((tok / "stage.json").read_text())["cache"]
    assert cache["rows"] == sum(copies) and cache["repeats"] == sum(copies) - len(copies)
    _browser_shows_the_buckets(tmp_path / "beam", tmp_path / "index", kept)
    removed = read_removed(str(stage)).to_pylist()
    assert removed and all(r["reason"] == "quality/below_bucket" and r["value"] < 4 for r in removed)
    assert doc["counts"]["docs_kept"] == len(kept) and 0.3 < len(kept) / doc["counts"]["docs_in"] < 0.8


def _browser_shows_the_buckets(out, index, kept) -> None:
    """The browser's index: at the quality stage the quality column is the combined bucket, and a kept document's
    evidence names each classifier's score and bucket (a removed one's: its removal, with each bucket)."""
    import duckdb

    from datapipe.browse.index import build_index, index_path
    from datapipe.report.collect import mixture_chains

    _, chains = mixture_chains(str(out))
    build_index(chains, str(index))
    (rec,) = [r for r in chains["prose"] if r.stage == "quality"]
    rows = (
        duckdb.connect()
        .execute(f"SELECT id, outcome, quality, evidence FROM read_parquet('{index_path(str(index), rec)}')")
        .fetchall()
    )
    by_id = {d["id"]: d["metadata"] for d in kept}
    for doc_id, outcome, quality, evidence in rows:
        if outcome == "kept":
            buckets = by_id[doc_id]["quality_buckets"]
            assert quality == buckets["ensemble"] and f"(bucket {buckets['ft']})" in evidence, evidence
        else:
            assert quality < 4 and "ft " in evidence, evidence


def test_an_ensemble_selection_needs_its_ensemble(tmp_path, scorers):
    ft, emb = scorers
    text = mixture_text(ft, emb)
    no_ensemble = text.replace("      ensemble: {buckets: 10, combine: mean, weights: {ft: 2}}\n", "")
    with pytest.raises(ConfigError, match="select an ensemble with"):
        load_mixture(str(write_mixture(tmp_path, no_ensemble, "a.yaml")))
    with pytest.raises(ConfigError, match="a bucket from 0 to 9"):
        load_mixture(str(write_mixture(tmp_path, text.replace("min_bucket: 4", "min_bucket: 12"), "b.yaml")))
    with pytest.raises(ConfigError, match="bucket 2: a bucket from min_bucket to 9"):
        load_mixture(str(write_mixture(tmp_path, text.replace("7: 2,", "2: 2,"), "d.yaml")))
    with pytest.raises(ConfigError, match="no classifier named 'bert'"):
        load_mixture(str(write_mixture(tmp_path, text.replace("{ft: 2}", "{bert: 2}"), "c.yaml")))


class _Counting:
    """A real scorer, and the documents it was asked to score."""

    def __init__(self, scorer) -> None:
        self.scorer, self.url, self.scored = scorer, scorer.url, 0

    def scores(self, texts: list[str]) -> np.ndarray:
        self.scored += len(texts)
        return self.scorer.scores(texts)


@pytest.mark.parametrize("ensemble", [True, False])
def test_the_shard_pass_reads_the_first_passs_scores(scorers, tmp_path, fixture_texts, ensemble):
    """Each document is scored once, not once per pass (a transformers scorer would cost twice): the shard pass
    reads the scores the first pass kept, which the commit removes; the selection is the one scoring again gives."""
    from datapipe import Shard
    from datapipe.config.stages import ClassifierRef, EnsembleConfig, QualityConfig
    from datapipe.io.jsonl import write_records_atomic
    from datapipe.quality.stage import QualityStage
    from datapipe.runtime.stage import finish_stage, run_shard

    docs = [{"id": str(i), "text": t, "metadata": {}} for i, t in enumerate(fixture_texts[:1100])]
    (tmp_path / "in").mkdir()
    write_records_atomic(str(tmp_path / "in" / "part-00000.jsonl.zst"), docs)
    ft, emb = scorers  # the fixture recipe's fastText and embedding scorers
    refs = (ClassifierRef("a", ft), ClassifierRef("b", emb))
    config = (
        QualityConfig(
            refs, "ensemble", ensemble=EnsembleConfig(4, "mean", (("a", 1.0), ("b", 1.0))), min_bucket=2
        )
        if ensemble
        else QualityConfig(refs, "a", keep_fraction=0.5)
    )
    shard = Shard(0, "in", "in")
    outs = {}
    for cached in (True, False):
        stage = QualityStage("s", config, str(tmp_path / "in"), str(tmp_path / f"out{cached}"))
        stage.setup()
        assert stage._models is not None
        stage._models = {name: _Counting(m) for name, m in stage._models.items()}
        parts = [stage.selection_array(shard)]
        stage.write_global_report(stage.selection_report(parts))
        if not cached:  # as a build whose first pass kept nothing: the shard pass scores again
            shutil.rmtree(tmp_path / f"out{cached}" / "scores")
        finish_stage(stage, [shard], [run_shard(stage, shard)], {})
        scored = {n: m.scored for n, m in stage._models.items()}
        if cached:  # every document scored once by each scorer, in one pass or the other
            assert scored == {"a": len(docs), "b": len(docs)}
        else:
            assert scored["a"] == 2 * len(docs)
        assert not (tmp_path / f"out{cached}" / "scores").exists()
        outs[cached] = (tmp_path / f"out{cached}" / "part-00000.jsonl.zst").read_bytes()
    assert outs[True] == outs[False]
