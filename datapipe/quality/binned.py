"""The scorer kind ``fasttext-bins``: a fastText student of a teacher's scores cut into classes
(:mod:`datapipe.quality.distill` trains it). Its own module so that the table of kinds
(:mod:`datapipe.quality.scorers`) does not import the trainer that imports the table.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.io.models import load_fasttext
from datapipe.quality.embedding import SCORER_FILE
from datapipe.quality.model import check_model, preprocess

BINS_MODEL = "model.bin"


class BinnedFastText:
    """A fastText student of binned teacher scores: ``scores(texts)`` is the expected bin over ``bins - 1``."""

    def __init__(self, url: str) -> None:
        folder = fs.local_path(url)
        try:
            meta = json.loads(Path(folder, SCORER_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise DatapipeError(f"{url}: not a readable fastText student ({e})") from None
        self.bins = int(meta["bins"])
        model = os.path.join(folder, meta.get("model", BINS_MODEL))
        check_model(model)  # a damaged file is one line, before fastText trusts its sizes
        self._model = load_fasttext(model)
        self.url = url

    def scores(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0)
        labels, probs = self._model.predict([preprocess(t) for t in texts], k=self.bins)
        out = np.zeros(len(texts))
        for i, (ls, ps) in enumerate(zip(labels, probs, strict=True)):
            out[i] = sum(int(label[len("__label__b") :]) * p for label, p in zip(ls, ps, strict=True))
        return np.clip(out / max(1, self.bins - 1), 0.0, 1.0)
