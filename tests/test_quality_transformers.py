"""The ``transformers`` quality scorer (issue 41): a Hugging Face sequence-classification folder scores as
transformers' own forward does, in bounded batches; a folder that is missing, of another architecture or without a
classification head is one line naming it; it teaches a fastText student, and a build scores with it on both engines.

The folder checks need no torch and run in ``make test``; the rest build small BERTs here (``tests/hf_classifier.py``,
random weights, ``save_pretrained``) and are marked slow: ``make test-all`` installs torch and transformers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from datapipe import DatapipeError, load_scorer, read_records
from datapipe.quality.scorers import check_scorer, kind_of
from datapipe.quality.transformer import length_batches, positive_column, read_config
from tests.conftest import build_on_both_engines, one_source_mixture, write_mixture

BERT_CONFIG = {"architectures": ["BertForSequenceClassification"], "model_type": "bert", "num_labels": 1}


def _folder(tmp_path: Path, name: str, config: object | None, files: tuple[str, ...]) -> str:
    folder = tmp_path / name
    folder.mkdir()
    if config is not None:
        (folder / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    for f in files:
        (folder / f).write_text("{}")
    return str(folder)


@pytest.mark.parametrize(
    "config,files,said",
    [
        (
            {**BERT_CONFIG, "architectures": ["BertModel"]},
            ("model.safetensors", "tokenizer.json"),
            "BertModel",
        ),
        ({"model_type": "model2vec"}, ("model.safetensors", "tokenizer.json"), "'model2vec'"),
        (BERT_CONFIG, ("tokenizer.json",), "no weights"),
        (BERT_CONFIG, ("pytorch_model.bin", "tokenizer.json"), "its weights are a pickle"),
        (BERT_CONFIG, ("model.safetensors",), "no tokenizer"),
        ("{not json", ("model.safetensors", "tokenizer.json"), "not readable JSON"),
        ("[1, 2]", ("model.safetensors", "tokenizer.json"), "not a JSON object"),
    ],
)
def test_a_wrong_model_folder_is_one_line_without_torch(tmp_path, config, files, said):
    """Checked from config.json and the file names alone, before any work (no torch needed): another architecture,
    no weights, no tokenizer, a damaged config; the line names the folder or the file."""
    folder = _folder(tmp_path, "m", config, files)
    assert kind_of(folder) == "transformers"
    with pytest.raises(DatapipeError) as e:
        check_scorer(folder)
    assert said in str(e.value) and folder in str(e.value) and "\n" not in str(e.value)


def test_a_missing_folder_is_one_line(tmp_path):
    with pytest.raises(DatapipeError, match="no-such-model"):
        check_scorer(str(tmp_path / "no-such-model"), "__label__hq")
    with pytest.raises(DatapipeError, match="no such model folder"):
        read_config(str(tmp_path / "no-such-model"))


def test_the_positive_label_is_named_as_the_folder_names_it(tmp_path):
    """One output is a regression (no label); several: the label by its id2label name, ``__label__`` optional; an
    unknown label is one line listing the folder's."""
    config = {**BERT_CONFIG, "num_labels": 3, "id2label": {"0": "low", "1": "mid", "2": "high"}}
    assert positive_column("m", BERT_CONFIG, "__label__hq") is None
    assert positive_column("m", config, "__label__high") == 2
    assert positive_column("m", config, "mid") == 1
    with pytest.raises(DatapipeError, match=r"no label 'hq' among its 3 outputs \(high, low, mid\)"):
        positive_column("m", config, "hq")


def test_batches_hold_at_most_the_token_budget():
    """Every batch pads to its longest text and stays within the budget (a text over it alone); every index once;
    shortest first, so that little is padding."""
    rng = np.random.default_rng(0)
    lengths = [int(x) for x in rng.integers(1, 513, size=500)] + [512] * 3
    batches = length_batches(lengths, 2048)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert all(len(b) * max(lengths[i] for i in b) <= 2048 for b in batches)
    assert [lengths[b[0]] for b in batches] == sorted(lengths[b[0]] for b in batches)
    assert length_batches([5000, 3], 1024) == [[1], [0]]
    assert length_batches([], 1024) == []


# --- against transformers (slow: torch) ------------------------------------------------------------------------

TORCH = "make test-all installs torch and transformers"


@pytest.fixture(scope="module")
def regressor(tmp_path_factory, fixture_texts):
    pytest.importorskip("torch", reason=TORCH)
    pytest.importorskip("transformers", reason=TORCH)
    from tests.hf_classifier import bert_classifier

    folder = tmp_path_factory.mktemp("hf") / "edu"
    model = bert_classifier(folder, fixture_texts[:300])
    return folder, model


def _forward_one_by_one(model, folder: Path, texts: list[str]) -> np.ndarray:
    """transformers' forward on each text alone, as FineWeb-Edu's model card runs it."""
    import torch
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    out = []
    with torch.inference_mode():
        for t in texts:
            inputs = tokenizer(t, return_tensors="pt", padding="longest", truncation=True)
            out.append(model(**inputs).logits.float()[0, 0].item())
    return np.array(out)


@pytest.mark.slow
def test_scores_are_transformers_own_forward(regressor, fixture_texts):
    """Batched, padded and sorted, the scores are transformers' forward on each text alone (1e-5), for short texts,
    texts past 512 tokens (truncated as transformers truncates), empty and odd ones; a small token budget (many
    batches) gives the same scores."""
    folder, model = regressor
    long = " ".join(fixture_texts[:200])
    texts = fixture_texts[:120] + [long, long[:5000], "", "   ", "\x00", "naïve café 日本語のテキスト 🙂"]
    scorer = load_scorer(str(folder), "__label__hq")
    assert kind_of(str(folder)) == "transformers"
    ours = scorer.scores(texts)
    theirs = _forward_one_by_one(model, folder, texts)
    assert np.abs(ours - theirs).max() <= 1e-5
    small = type(scorer)(str(folder), "__label__hq", batch_tokens=600)
    assert np.abs(small.scores(texts) - ours).max() <= 1e-5
    assert scorer.scores([]).shape == (0,)


@pytest.mark.slow
def test_a_classifier_scores_the_positive_labels_probability(tmp_path, fixture_texts):
    import torch

    from tests.hf_classifier import bert_classifier

    folder = tmp_path / "three"
    model = bert_classifier(folder, fixture_texts[:300], num_labels=3, seed=1)
    texts = fixture_texts[:20]
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    with torch.inference_mode():
        probs = [
            torch.softmax(model(**tokenizer(t, return_tensors="pt", truncation=True)).logits, -1)[0, 2].item()
            for t in texts
        ]
    assert np.abs(load_scorer(str(folder), "class2").scores(texts) - probs).max() <= 1e-6
    with pytest.raises(DatapipeError, match="no label '__label__hq' among its 3 outputs"):
        check_scorer(str(folder), "__label__hq")


@pytest.mark.slow
def test_weights_without_a_head_are_one_line(tmp_path, fixture_texts):
    """An encoder's weights under a classifier's config: transformers would start the head at random and only warn;
    we refuse, naming the folder and the missing weights."""
    from tests.hf_classifier import bert_classifier

    folder = tmp_path / "headless"
    bert_classifier(folder, fixture_texts[:300], head=False)
    with pytest.raises(DatapipeError) as e:
        check_scorer(str(folder), "__label__hq")
    assert (
        str(folder) in str(e.value) and "classifier.weight" in str(e.value) and "no trained" in str(e.value)
    )


@pytest.mark.slow
def test_it_teaches_a_fasttext_student(regressor, tmp_path, fixture_texts):
    """``datapipe classifier distill`` with a transformers teacher: the student folder loads as a scorer, and the
    report gives its Spearman correlation and both speeds."""
    from datapipe.quality.distill import distill

    folder, _ = regressor
    teacher = load_scorer(str(folder), "__label__hq")
    sample = [(str(i), t) for i, t in enumerate(fixture_texts[:400])]
    result = distill(sample, teacher.scores([t for _, t in sample]), teacher, "fasttext", str(tmp_path / "s"))
    assert kind_of(result.student_url) == "fasttext-bins"
    assert set(result.report) >= {"spearman", "student_docs_per_cpu_s", "teacher_docs_per_cpu_s", "speedup"}


def mixture_text(model: str) -> str:
    stages = f'quality:\n  classifiers: [{{name: edu, model: "{model}"}}]\n  select: {{classifier: edu, keep_fraction: 0.5}}'
    return one_source_mixture("qt", "prose", ["prose/pydoc-howto-*.jsonl.gz", "fortunes/*.jsonl.zst"], stages)


@pytest.mark.slow
def test_a_build_scores_with_it_and_both_engines_write_the_same_bytes(regressor, tmp_path):
    """A mixture names the model folder as a classifier: every kept document carries transformers' score, the top
    half is kept, and the datatrove engine writes Beam's bytes."""
    folder, model = regressor
    mix = write_mixture(tmp_path, mixture_text(str(folder)), "qt.yaml")
    build_on_both_engines(mix, tmp_path)
    (stage,) = (tmp_path / "beam" / "prose").glob("quality-*")
    kept = [d for p in sorted(stage.glob("part-*.jsonl.zst")) for d in read_records(str(p))]
    theirs = _forward_one_by_one(model, folder, [d["text"] for d in kept])
    assert np.abs(np.array([d["metadata"]["quality"]["edu"] for d in kept]) - theirs).max() <= 1e-5
    counts = json.loads((stage / "stage.json").read_text())["counts"]
    assert counts["docs_kept"] == counts["docs_in"] - round(0.5 * (counts["docs_in"] - 1))


@pytest.mark.slow
def test_a_build_refuses_a_headless_folder_before_any_work(tmp_path, fixture_texts):
    from tests.conftest import run_build
    from tests.hf_classifier import bert_classifier

    folder = tmp_path / "headless"
    bert_classifier(folder, fixture_texts[:300], head=False)
    shutil.rmtree(tmp_path / "out", ignore_errors=True)
    mix = write_mixture(tmp_path, mixture_text(str(folder)), "qt.yaml")
    proc = run_build("--mixture", str(mix), "--output", str(tmp_path / "out"))
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert str(folder) in last and "classification head" in last
    assert not list((tmp_path / "out").glob("prose/*/part-*"))


def test_a_model_folders_files_name_it_in_the_stage_hash(tmp_path):
    """An unpinned folder is named by its files' names and sizes: new weights in the same folder are a new stage (a
    folder's own size never changes); a file keeps its size identity; a pin on a folder is one line."""
    from datapipe.orchestrate.classifiers import check_pinned, model_identity

    folder = Path(_folder(tmp_path, "m", BERT_CONFIG, ("tokenizer.json",)))
    (folder / "model.safetensors").write_bytes(b"x" * 100)
    before = model_identity(str(folder))
    (folder / "model.safetensors").write_bytes(b"x" * 101)
    assert before.startswith("files:") and model_identity(str(folder)) != before
    assert model_identity(str(folder / "config.json")) == f"size:{(folder / 'config.json').stat().st_size}"
    with pytest.raises(DatapipeError, match="a folder, but q.sha256 pins one file"):
        check_pinned(str(folder), "0" * 64, "q.sha256")
