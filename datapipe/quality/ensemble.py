"""Ensembles of quality scorers, as pure functions both engines call: each scorer's score becomes a percentile
bucket of that scorer's scores over the whole input, and the buckets are combined (Nemotron-CC ranks documents
under several classifiers this way: scores of different models are not comparable, their ranks are).

The global phase gathers every document's scores (one structured array per shard, a float64 field per scorer:
8 bytes a document and scorer) and :func:`ensemble_report` takes each scorer's exact quantiles at ``1/B, 2/B, ...,
(B-1)/B`` as its bucket boundaries, written to the quality stage's ``global.json``. The shard phase then gives each
document, per scorer, the bucket ``0..B-1`` its score falls in (:func:`bucket_of`: the boundaries at or below it)
and combines them by weighted mean or max (:func:`combine`). The boundaries depend only on the set of scores, so
the buckets are the same on every engine and every split into shards.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

ENSEMBLE = "ensemble"  # the name a selection uses for the combined bucket


def scores_array(names: Sequence[str], scores: Mapping[str, Sequence[float]]) -> np.ndarray:
    """One shard's scores, a float64 field per scorer."""
    n = len(scores[names[0]]) if names else 0
    out = np.zeros(n, dtype=[(name, "<f8") for name in names])
    for name in names:
        out[name] = scores[name]
    return out


def boundaries(values: np.ndarray, buckets: int) -> list[float]:
    """The exact quantiles at ``k / buckets`` for ``k = 1 .. buckets - 1`` (rank ``round(k / buckets * (n - 1))`` of
    the sorted values); empty without values."""
    if not len(values):
        return []
    ordered = np.sort(values)
    n = len(ordered)
    return [float(ordered[round(k / buckets * (n - 1))]) for k in range(1, buckets)]


def ensemble_report(parts: Iterable[np.ndarray], names: Sequence[str], buckets: int) -> dict[str, object]:
    """``global.json`` of an ensemble: per scorer its bucket boundaries, and how many documents they were taken
    over."""
    parts = [p for p in parts if len(p)]
    out: dict[str, Any] = {"buckets": buckets, "boundaries": {}, "documents": int(sum(len(p) for p in parts))}
    for name in names:
        values = np.concatenate([p[name] for p in parts]) if parts else np.zeros(0)
        out["boundaries"][name] = boundaries(values, buckets)
    return out


def bucket_of(score: float, bounds: Sequence[float]) -> int:
    """The bucket of a score: how many boundaries lie at or below it (0 = the lowest, ``len(bounds)`` the top)."""
    return int(np.searchsorted(np.asarray(bounds, dtype=np.float64), score, side="right"))


def combine(buckets: Mapping[str, float], weights: Mapping[str, float], how: str) -> float:
    """The ensemble's bucket: the weighted mean of the scorers' buckets (rounded to 4 decimals, so that every
    engine writes the same number), or their maximum."""
    if how == "max":
        return float(max(buckets[name] for name in weights))
    total = sum(weights.values())
    return round(sum(buckets[name] * w for name, w in weights.items()) / total, 4)
