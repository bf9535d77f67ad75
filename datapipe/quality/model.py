"""Load a fastText classifier safely and score texts with it, preprocessed the way DCLM trains and applies them."""

from __future__ import annotations

import os
import struct
from typing import Any

import numpy as np

from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.io.models import load_fasttext
from datapipe.quality.softmax import read_softmax

FASTTEXT_MAGIC = 793712314  # first int32 of every fastText .bin / .ftz file


def preprocess(text: str, lowercase: bool = False) -> str:
    """DCLM's preprocessing: newlines become spaces and runs of whitespace one space (fastText reads one line)."""
    text = " ".join(text.split())
    return text.lower() if lowercase else text


def _expected_size(f, total: int) -> int | None:
    """Walk a non-quantized fastText .bin layout (header, args, dictionary, two matrices) and return the size it
    implies; None for a quantized model, whose layout is not walked."""
    f.seek(8)
    f.read(12 * 4 + 8)  # args: 12 int32 and one double
    size, _nwords, _nlabels = struct.unpack("<iii", f.read(12))
    _ntokens, prune = struct.unpack("<qq", f.read(16))
    prune = max(prune, 0)  # -1: the dictionary was not pruned
    if size < 0 or size > total:
        raise ValueError("dictionary header out of range")
    buf = b""
    pos = 0
    for _ in range(size):  # entries: word, NUL, int64 count, int8 type
        while True:
            end = buf.find(b"\0", pos)
            if end >= 0 and len(buf) >= end + 10:
                break
            chunk = f.read(1 << 20)
            if not chunk:
                raise ValueError("dictionary cut short")
            buf, pos = buf[pos:] + chunk, 0
        pos = end + 10
    offset = f.tell() - (len(buf) - pos) + prune * 8
    f.seek(offset)
    if f.read(1) != b"\0":
        return None  # quantized input matrix
    rows, cols = struct.unpack("<qq", f.read(16))
    offset += 1 + 16 + rows * cols * 4
    f.seek(offset)
    if f.read(1) != b"\0":
        return None
    rows, cols = struct.unpack("<qq", f.read(16))
    return offset + 1 + 16 + rows * cols * 4


def check_model(url: str) -> None:
    """A clear error, before any work, for a model that is missing, empty, truncated or not a fastText file.

    fastText's own loader trusts the sizes in the file and can run for minutes or exhaust memory on a damaged one,
    so a .bin model's layout is walked and its size checked first.
    """
    if not fs.exists(url):
        raise DatapipeError(f"{url}: quality model not found")
    total = fs.size(url)
    with fs.open_binary(url) as f:
        head = f.read(8)
        if len(head) < 8:
            raise DatapipeError(f"{url}: not a fastText model (file too short)")
        magic, version = struct.unpack("<ii", head)
        if magic != FASTTEXT_MAGIC:
            raise DatapipeError(f"{url}: not a fastText model (bad magic number)")
        if version > 12:
            raise DatapipeError(
                f"{url}: fastText file version {version} is newer than this fastText supports"
            )
        try:
            expected = _expected_size(f, total)
        except (ValueError, struct.error) as e:
            raise DatapipeError(f"{url}: damaged fastText model ({e})") from None
    if expected is not None and expected != total:
        raise DatapipeError(
            f"{url}: damaged fastText model (its layout needs {expected:,} bytes, the file has {total:,})"
        )


class QualityModel:
    """A loaded classifier: ``scores(texts)`` is the probability of ``positive_label`` for each text."""

    def __init__(self, url: str, positive_label: str, lowercase: bool = False) -> None:
        # the same scores in compiled code where the model is one it computes exactly (datapipe/quality/softmax.py):
        # its reading checks the file whole, and fastText's own loader (0.09 s) then waits for a text it is needed
        # for (none, or one with a lone surrogate)
        self._fast = read_softmax(fs.local_copy(url)) if fs.exists(url) else None
        self._model: object = None
        self.url = url
        if self._fast is None:
            check_model(url)
            self._load()
        labels = self._fast.labels if self._fast is not None else self._load().get_labels()
        if positive_label not in labels:
            raise DatapipeError(
                f"{url}: the model has no label {positive_label!r} (labels: {', '.join(labels)})"
            )
        self.positive_label = positive_label
        self.lowercase = lowercase
        self.k = len(labels)
        self._positive = labels.index(positive_label)

    def _load(self) -> Any:
        if self._model is None:
            try:
                self._model = load_fasttext(self.url)
            except (ValueError, RuntimeError, MemoryError) as e:
                raise DatapipeError(f"{self.url}: fastText could not load this model ({e})") from None
        return self._model

    def scores(self, texts: list[str]) -> np.ndarray:
        """The positive label's probability per text: compiled where the model allows, else fastText's batched
        ``predict`` over all labels."""
        out = np.zeros(len(texts))
        rest = list(range(len(texts)))  # the texts fastText scores
        if self._fast is not None:
            rest = []
            for i, text in enumerate(texts):
                probs = self._fast.probabilities(text, self.lowercase)
                if probs is None:
                    rest.append(i)
                else:
                    out[i] = probs[self._positive]
        self._fasttext_scores(texts, rest, out)
        return out

    def scores_by_fasttext(self, texts: list[str]) -> np.ndarray:
        """:meth:`scores` through fastText's own ``predict`` for every text (what the compiled path must equal)."""
        out = np.zeros(len(texts))
        self._fasttext_scores(texts, list(range(len(texts))), out)
        return out

    def _fasttext_scores(self, texts: list[str], which: list[int], out: np.ndarray) -> None:
        """``out[i]`` for each ``i`` of ``which``: the positive label's probability from one batched ``predict``."""
        if not which:
            return
        labels, probs = self._load().predict([preprocess(texts[i], self.lowercase) for i in which], k=self.k)
        for i, ls, ps in zip(which, labels, probs, strict=True):
            for label, p in zip(ls, ps, strict=True):
                if label == self.positive_label:
                    out[i] = float(p)  # as fastText gives it (its smoothing can exceed 1 by ~1e-5)
                    break


def model_size(url: str) -> int:
    return os.path.getsize(fs.local_copy(url)) if fs.is_local(url) else fs.size(url)
