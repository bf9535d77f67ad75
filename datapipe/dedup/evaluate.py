"""Measure a dedup stage's decisions against ground truth (exact Jaccard of the same shingles over all pairs)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from datapipe.dedup.minhash import Shingler, jaccard
from datapipe.dedup.store import read_edges, read_removals


def all_pairs_jaccard(texts: list[str], ngram: int = 5) -> dict[tuple[int, int], float]:
    shingler = Shingler(ngram)
    sets = [shingler(t) for t in texts]
    return {(i, j): jaccard(sets[i], sets[j]) for i, j in itertools.combinations(range(len(texts)), 2)}


def _ordered(a: int, b: int) -> tuple[int, int]:
    """``(a, b)`` smaller first, as ``tuple(sorted((a, b)))``."""
    return (a, b) if a <= b else (b, a)


@dataclass(frozen=True)
class PairMetrics:
    recall: float  # pairs with J >= recall_at that end in one component
    precision: float  # verified edges with J >= precision_at
    positives: int
    edges: int
    low_edges: int  # edges below precision_at


def pair_metrics(
    stage_dir: str,
    truth: dict[tuple[int, int], float],
    shard_sizes: list[int],
    recall_at: float = 0.85,
    precision_at: float = 0.8,
) -> PairMetrics:
    """``truth`` is keyed by document positions in shard order (shard 0's documents first)."""
    offsets = np.cumsum([0, *shard_sizes])

    def flat(ref: tuple[int, int]) -> int:
        return int(offsets[ref[0]] + ref[1])

    root: dict[int, int] = {}
    for shard in range(len(shard_sizes)):
        for removed in read_removals(stage_dir, shard):
            root[flat((shard, removed.doc))] = flat(removed.kept)
    positives = [p for p, j in truth.items() if j >= recall_at]
    found = sum(root.get(a, a) == root.get(b, b) for a, b in positives)
    edges = [_ordered(flat(a), flat(b)) for a, b, _ in read_edges(stage_dir)]
    low = sum(truth[e] < precision_at for e in edges)
    return PairMetrics(
        recall=found / max(1, len(positives)),
        precision=(len(edges) - low) / max(1, len(edges)),
        positives=len(positives),
        edges=len(edges),
        low_edges=low,
    )
