"""The ``embedding`` quality scorer (issue 41): static token vectors averaged as model2vec averages them, a linear
head trained from a recipe, scored in a build on both engines, and one line for a scorer folder that is wrong."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from datapipe import DatapipeError, load_scorer, read_records
from datapipe.config.recipe import load_recipe
from datapipe.quality.embedding import WORDLLAMA, EmbeddingScorer, StaticEmbeddings, _wordllama_files
from datapipe.quality.scorers import check_scorer
from datapipe.quality.train import train
from tests.conftest import build_on_both_engines, one_source_mixture, write_mixture


def _model2vec_folder(folder: Path, max_length: int | None, dtype: str = "float32") -> Path:
    """wordllama's vectors and tokenizer written as a model2vec folder."""
    from safetensors.numpy import load_file, save_file

    tokenizer, weights = _wordllama_files()
    folder.mkdir(parents=True)
    vectors = load_file(weights)["embedding.weight"].astype(dtype)
    save_file({"embeddings": np.ascontiguousarray(vectors)}, str(folder / "model.safetensors"))
    shutil.copy(tokenizer, folder / "tokenizer.json")
    config = {"model_type": "model2vec", "normalize": True, "max_length": max_length, "hidden_dim": 256}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize("max_length,dtype", [(None, "float32"), (64, "float32"), (512, "float16")])
def test_document_vectors_are_model2vecs_own(tmp_path, fixture_texts, max_length, dtype):
    """Our vectors are ``StaticModel.encode``'s, exactly, on every fixture document (empty and odd texts too), with
    and without truncation, in float32 and float16; the builtin vectors are the same folder's."""
    from model2vec import StaticModel

    folder = _model2vec_folder(tmp_path / "m2v", max_length, dtype)
    texts = fixture_texts[:400] + ["", "   ", "\x00", "naïve café 日本語のテキスト 🙂"]
    ours = StaticEmbeddings(str(folder)).embed(texts)
    theirs = StaticModel.from_pretrained(str(folder)).encode(texts, use_multiprocessing=False)
    assert ours.shape == (len(texts), 256) and ours.dtype == np.float32
    assert np.array_equal(ours, theirs.astype(np.float32))
    if max_length is None and dtype == "float32":
        assert np.array_equal(StaticEmbeddings(WORDLLAMA).embed(texts), ours)


@pytest.fixture(scope="module")
def embedding_scorer(tmp_path_factory):
    out = tmp_path_factory.mktemp("classifiers")
    return train(load_recipe("fixture_quality_embedding"), str(out))


def test_a_recipe_trains_a_head_that_separates_its_held_out_examples(embedding_scorer, tmp_path):
    """The bundled embedding recipe trains a head (deterministic: the same recipe gives the same weights); its
    held-out ROC AUC is well above chance; a second run reuses it."""
    report = embedding_scorer.report
    assert report["kind"] == "embedding" and report["validation"]["roc_auc"] >= 0.85
    folder = Path(embedding_scorer.model_url)
    assert sorted(p.name for p in folder.iterdir()) == ["head.npz", "scorer.json"]
    again = train(load_recipe("fixture_quality_embedding"), str(tmp_path))
    assert np.array_equal(np.load(folder / "head.npz")["w"], np.load(Path(again.model_url) / "head.npz")["w"])
    assert train(load_recipe("fixture_quality_embedding"), str(folder.parent)).reused


def mixture_text(model: str) -> str:
    stages = f'quality:\n  classifiers: [{{name: emb, model: "{model}"}}]\n  select: {{classifier: emb, keep_fraction: 0.5}}'
    return one_source_mixture("qe", "prose", ["prose/pydoc-howto-*.jsonl.gz", "fortunes/*.jsonl.zst"], stages)


def test_a_build_scores_with_it_and_both_engines_write_the_same_bytes(embedding_scorer, tmp_path):
    """A mixture points at the scorer folder: every kept document carries the scorer's own score, the top half is
    kept, and the datatrove engine writes Beam's bytes."""
    mix = write_mixture(tmp_path, mixture_text(embedding_scorer.model_url), "qe.yaml")
    build_on_both_engines(mix, tmp_path)
    (stage,) = (tmp_path / "beam" / "prose").glob("quality-*")
    kept = [d for p in sorted(stage.glob("part-*.jsonl.zst")) for d in read_records(str(p))]
    scorer = EmbeddingScorer(embedding_scorer.model_url, "__label__hq")
    direct = scorer.scores([d["text"] for d in kept])
    assert np.allclose([d["metadata"]["quality"]["emb"] for d in kept], direct, atol=1e-8)
    counts = json.loads((stage / "stage.json").read_text())["counts"]
    assert counts["docs_kept"] == counts["docs_in"] - round(0.5 * (counts["docs_in"] - 1))


def test_a_wrong_scorer_folder_is_one_line(embedding_scorer, tmp_path):
    """A folder with another kind, a head of another width, another label, vectors without their tokenizer: one
    line naming the folder, before any work."""
    good = Path(embedding_scorer.model_url)

    def broken(name: str, edit) -> str:
        folder = tmp_path / name
        shutil.copytree(good, folder)
        edit(folder)
        return str(folder)

    def kind(folder: Path) -> None:
        meta = json.loads((folder / "scorer.json").read_text())
        (folder / "scorer.json").write_text(json.dumps({**meta, "kind": "bert"}))

    def narrow(folder: Path) -> None:
        np.savez(folder / "head.npz", w=np.zeros(8, dtype=np.float32), b=np.float64(0))

    def vectors_only(folder: Path) -> None:
        (folder / "vectors").mkdir()
        shutil.copy(_wordllama_files()[1], folder / "vectors" / "model.safetensors")
        meta = json.loads((folder / "scorer.json").read_text())
        (folder / "scorer.json").write_text(json.dumps({**meta, "embeddings": "vectors"}))

    cases = {
        broken("kind", kind): "unknown scorer kind 'bert'",
        broken("narrow", narrow): "a head of 8 inputs on vectors of 256",
        broken("vectors", vectors_only): "no tokenizer.json",
    }
    for folder, message in cases.items():
        with pytest.raises(DatapipeError) as info:
            check_scorer(folder)
            load_scorer(folder, "__label__hq")
        assert message in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(DatapipeError, match="positive label is '__label__hq', not '__label__good'"):
        load_scorer(str(good), "__label__good")
