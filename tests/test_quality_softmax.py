"""The compiled softmax scorer (``datapipe/quality/softmax.py``) against fastText's own ``predict``, bit for bit:
every fixture page and generated texts, on the bundled recipe's model and on models with longer word n-grams,
subwords, a pruned dictionary and a quantized input matrix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import fasttext
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from datapipe.quality.model import QualityModel, preprocess
from datapipe.quality.softmax import SoftmaxModel, read_softmax
from tests.test_quality import trained  # noqa: F401 - a fixture, used by name


def _fasttext(model, text: str, lowercase: bool = False) -> np.ndarray:
    """Every label's probability from fastText's predict on the preprocessed text (0 for none predicted)."""
    labels = model.get_labels()
    got, probs = model.predict(preprocess(text, lowercase), k=len(labels))
    out = np.zeros(len(labels))
    for label, p in zip(got, probs, strict=True):
        out[labels.index(label)] = float(p)
    return out


TRAIN = """
import json, sys
import fasttext
source, path, hyper, quantize = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4] == "1"
model = fasttext.train_supervised(source, thread=1, seed=0, verbose=0, **hyper)
if quantize:
    model.quantize(input=source, cutoff=500, retrain=False, qnorm=True, dsub=2)
model.save_model(path)
"""


def _train(source: Path, path: Path, quantize: bool = False, **hyper) -> str:
    """fastText training in a fresh process with its allocations zeroed, as ``datapipe.quality.train`` trains
    (``FASTTEXT_CHILD_ENV``: fastText reads uninitialized memory, so reused heap changes its models)."""
    from datapipe.quality.train import FASTTEXT_CHILD_ENV

    args = [str(source), str(path), json.dumps(hyper), "1" if quantize else "0"]
    env = {**os.environ, **FASTTEXT_CHILD_ENV}
    subprocess.run(
        [sys.executable, "-c", TRAIN, *args], check=True, capture_output=True, timeout=300, env=env
    )
    return str(path)


@pytest.fixture(scope="module")
def models(trained, fixture_texts, tmp_path_factory):  # noqa: F811 - the fixture
    """(ours, fastText's) for the recipe's model and three more kinds trained here on the fixture pages."""
    folder = tmp_path_factory.mktemp("softmax")
    pages = [preprocess(t) for t in fixture_texts[:400] if t.split()][:300]  # a line without words trains NaN
    train_file = folder / "train.txt"
    train_file.write_text("".join(f"__label__{'a' if i % 3 else 'b'} {t}\n" for i, t in enumerate(pages)))
    three = folder / "three.txt"
    three.write_text(train_file.read_text().replace("__label__b ", "__label__c ", 40))
    paths = {
        "recipe": trained[0].model_url,
        "trigrams+subwords": _train(
            train_file, folder / "tri.bin", wordNgrams=3, minn=2, maxn=4, bucket=20000, dim=16, epoch=5
        ),
        "three labels": _train(three, folder / "three.bin", wordNgrams=1, dim=8, epoch=5),
        "pruned+quantized": _train(train_file, folder / "pq.ftz", True, wordNgrams=2, dim=16, epoch=5),
    }
    out = {}
    for name, path in paths.items():
        ours = read_softmax(path)
        assert ours is not None, f"{name}: a softmax model this module computes"
        out[name] = (ours, fasttext.load_model(path))
    return out


def test_every_fixture_page_gets_fasttexts_probabilities(models, fixture_texts):
    assert len(fixture_texts) > 1000
    for name, (ours, theirs) in models.items():
        for lowercase in (False, True):
            diffs = [
                i
                for i, t in enumerate(fixture_texts)
                if not np.array_equal(ours.probabilities(t, lowercase), _fasttext(theirs, t, lowercase))
            ]
            assert not diffs, (name, lowercase, diffs[:5])


_PIECES = st.sampled_from(
    [
        "the", "cat", "Katze", "кошка", "猫", "🙂", "e\u0301", "__label__hq", "__label__a", "__label__", "</s>",
        "<s>", "\0", "a\0b", " ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\xa0", "\u3000", "\u2028", "\x1c", "\x85",
        "\u200b", "2024", "e.g.", "'s", "a" * 40, "日本語のテキスト", "İstanbul", "ǅ",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES | st.text(max_size=10), max_size=40).map(" ".join), st.booleans())
@example("the cat </s> sat on the mat", False)  # fastText's line ends at a literal </s>
@example("__label__hq the __label__zz cat", False)
@example("", False)
@example("\0\0 \u3000", True)
def test_generated_text_gets_fasttexts_probabilities(models, text, lowercase):
    for name, (ours, theirs) in models.items():
        assert np.array_equal(ours.probabilities(text, lowercase), _fasttext(theirs, text, lowercase)), name


def test_the_quality_model_uses_it_and_falls_back_to_fasttext(trained, fixture_texts, monkeypatch):  # noqa: F811
    import datapipe.quality.softmax as softmax

    model = QualityModel(trained[0].model_url, "__label__hq")
    assert (
        model._fast is not None and model._model is None
    )  # fastText's loader waits for a text that needs it
    texts = fixture_texts[:60]
    monkeypatch.setattr(softmax, "MAX_CHARS", 200)  # longer texts go to fastText
    assert any(len(t) > 200 for t in texts) and any(len(t) <= 200 for t in texts)
    assert np.array_equal(model.scores(texts), model.scores_by_fasttext(texts))
    assert model._model is not None
    with pytest.raises(TypeError):  # a lone surrogate has no UTF-8: fastText's binding refuses it, as before
        model.scores(["a lone surrogate \ud800 here"])


def test_a_small_memo_starts_over_without_changing_answers(models, fixture_texts):
    ours, theirs = models["trigrams+subwords"]
    small = SoftmaxModel.__new__(SoftmaxModel)
    small.__dict__.update(ours.__dict__)
    small.memo_size = 50
    from datapipe.kernels.interned import Interned

    small._memo = Interned()
    small._token_hash = np.zeros(0, dtype=np.int64)
    for t in fixture_texts[:200]:
        assert np.array_equal(small.probabilities(t), _fasttext(theirs, t))
