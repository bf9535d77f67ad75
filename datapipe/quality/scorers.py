"""The quality scorers, by kind: one table instead of a switch in every caller.

A scorer is anything with ``scores(texts) -> np.ndarray`` (the probability of the positive label per text) and a
``url``. A model file is fastText's (DCLM's classifiers, :mod:`datapipe.quality.model`); a folder with
``scorer.json`` is the kind it names (``embedding``: :mod:`datapipe.quality.embedding`); any other folder with a
``config.json`` is a Hugging Face sequence classifier (``transformers``: :mod:`datapipe.quality.transformer`). The stage, the trainer's
report and the build's plan-time check all load through :func:`load_scorer` and :func:`check_scorer`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Protocol

import numpy as np

from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.quality.binned import BinnedFastText
from datapipe.quality.embedding import SCORER_FILE, EmbeddingScorer
from datapipe.quality.model import QualityModel, check_model
from datapipe.quality.transformer import TransformersScorer, is_model_folder, read_config


class Scorer(Protocol):
    url: str

    def scores(self, texts: list[str]) -> np.ndarray: ...


# kind -> (load(url, positive label, lowercase), what the kind is): a folder's ``scorer.json`` names its kind
KINDS: dict[str, Callable[[str, str, bool], Scorer]] = {
    "fasttext": lambda url, label, lowercase: QualityModel(url, label, lowercase),
    "embedding": lambda url, label, _lowercase: EmbeddingScorer(url, label),
    "fasttext-bins": lambda url, _label, _lowercase: BinnedFastText(url),  # a distilled student
    "transformers": lambda url, label, _lowercase: TransformersScorer(url, label),
}


def kind_of(url: str) -> str:
    """``fasttext`` for a model file; the kind a scorer folder's ``scorer.json`` names; ``transformers`` for a
    Hugging Face model folder (a ``config.json`` and no ``scorer.json``)."""
    meta_url = fs.join(url, SCORER_FILE)
    if not fs.exists(meta_url):
        return "transformers" if is_model_folder(url) else "fasttext"
    try:
        kind = json.loads(fs.read_text(meta_url)).get("kind")
    except ValueError as e:
        raise DatapipeError(f"{meta_url}: not JSON ({e})") from None
    if kind not in KINDS:
        raise DatapipeError(f"{meta_url}: unknown scorer kind {kind!r} (kinds: {', '.join(KINDS)})")
    return str(kind)


def load_scorer(url: str, positive_label: str, lowercase: bool = False) -> Scorer:
    return KINDS[kind_of(url)](url, positive_label, lowercase)


def check_scorer(url: str, positive_label: str | None = None) -> None:
    """A clear one-line error before any work for a scorer that is missing or damaged: a fastText file's layout is
    walked without loading it; a transformers folder's files are checked, then it is loaded (which finds weights
    without a classification head); any other kind is loaded (a folder's vectors: under a second)."""
    kind = kind_of(url)
    if kind == "fasttext":
        check_model(url)
    elif kind == "transformers" and positive_label is None:
        read_config(url)
    elif positive_label is not None:
        KINDS[kind](url, positive_label, False)
