"""The ``keep_fraction`` cut-off of the quality stage: an exact global quantile of (score, tie-break), as pure
functions both engines call.

Each shard's keys become one small array (:func:`keys_array`, 16 bytes a document); an engine gathers them (Beam: a
combiner whose accumulator is a list of arrays; datatrove: one file per shard, read by one task) and
:func:`cutoff` sorts them and takes the key at rank ``round((1 - keep_fraction) * (n - 1))``. The cut-off is the
same on every engine and every split into shards, because it depends only on the set of keys: documents at or above
it are kept. (Beam's approximate-quantiles combiner, used before, gave an engine-dependent answer.)
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

KEY = np.dtype([("score", "<f8"), ("tiebreak", "<u8")])


def keys_array(keys: Iterable[tuple[float, int]]) -> np.ndarray:
    """(score, tie-break) pairs as one structured array."""
    return np.array(list(keys), dtype=KEY)


def cutoff(parts: Iterable[np.ndarray], keep_fraction: float) -> tuple[float, int] | None:
    """The smallest key that is kept when the top ``keep_fraction`` of all keys are (None without any key)."""
    keys = np.concatenate([np.asarray(p, dtype=KEY) for p in parts] or [np.zeros(0, dtype=KEY)])
    if not len(keys):
        return None
    keys.sort(order=("score", "tiebreak"))
    index = min(len(keys) - 1, max(0, round((1.0 - keep_fraction) * (len(keys) - 1))))
    return float(keys[index]["score"]), int(keys[index]["tiebreak"])


def cutoff_report(parts: Iterable[np.ndarray], keep_fraction: float) -> dict[str, object]:
    """``global.json`` of the quality stage: the fraction, the cut-off (``[score, tie-break]``, or None when the
    input has no document) and how many documents it was taken over."""
    parts = list(parts)
    cut = cutoff(parts, keep_fraction)
    return {
        "keep_fraction": keep_fraction,
        "cutoff": None if cut is None else list(cut),
        "documents": int(sum(len(p) for p in parts)),
    }
