"""Dedup keys of a corpus of any size with planted duplicate clusters, for the dedup global phase alone.

Document ``g`` of ``N`` (``docs_per_shard`` to a shard) is decided by hashes of ``(seed, g)`` alone, so any shard is
made in any process, in any order, and the truth is known without storing it:

* 70% ``unique``: its own 112-value MinHash signature (14 bands x 8 rows, the ``fineweb`` preset's shape), its own
  text hash and content key.
* 10% ``exact``: the copy of an earlier document's original (the text hash, signature and content key of the unique
  document at the end of the chain of originals).
* 20% ``near``: that original's signature with each value replaced with probability ``1 - j``, ``j`` uniform in
  0.88-0.98 per document (a MinHash signature of a document with Jaccard ``j`` to its original), its own text hash
  and content key. Two such documents are candidates with probability ``1 - (1 - j**8)**14`` (>= 0.998).

What a correct dedup removes is every ``exact`` and ``near`` document and nothing else: its recall is the share of
them removed, a false merge any ``unique`` one removed. The signatures are random 64-bit values (no text: 10^7
documents' shingle sets would be ~30 GB), so the stage runs with ``verify: false``, and band keys are a splitmix64
fold of each band's rows (vectorized; the real stage's xxh3 keys cost 1.4e8 Python calls at 10^7 documents). Every
other step is the real global phase of ``datapipe.dedup.spill``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from datapipe import DEDUP_BAND as BAND
from datapipe import DEDUP_KEY as KEY
from datapipe import DedupConfig, DedupStage, MinHashConfig, Shard

BANDS, ROWS = 14, 8
PERM = BANDS * ROWS
UNIQUE, EXACT, NEAR = 0, 1, 2
_GOLD = np.uint64(0x9E3779B97F4A7C15)


def mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 over uint64 arrays (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + _GOLD
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _salted(g: np.ndarray, seed: int, salt: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        return mix(g.astype(np.uint64) * _GOLD ^ np.uint64((seed * 1_000_003 + salt) & ((1 << 64) - 1)))


def kinds(g: np.ndarray, seed: int) -> np.ndarray:
    pct = _salted(g, seed, 1) % np.uint64(100)
    out = np.where(pct < 70, UNIQUE, np.where(pct < 80, EXACT, NEAR))
    return np.where(g == 0, UNIQUE, out)


def roots(g: np.ndarray, seed: int) -> np.ndarray:
    """The unique document at the end of each document's chain of originals (itself when unique)."""
    r = g.astype(np.int64).copy()
    todo = kinds(r, seed) != UNIQUE
    while todo.any():
        r[todo] = (_salted(r[todo], seed, 2) % r[todo].astype(np.uint64)).astype(np.int64)
        todo[todo] = kinds(r[todo], seed) != UNIQUE
    return r


def signatures(g: np.ndarray, seed: int) -> np.ndarray:
    """(len(g), PERM) uint64 signatures."""
    kind, root = kinds(g, seed), roots(g, seed)
    cell = root.astype(np.uint64)[:, None] * np.uint64(PERM) + np.arange(PERM, dtype=np.uint64)[None, :]
    sig = _salted(cell, seed, 3)
    near = np.flatnonzero(kind == NEAR)
    if len(near):
        j = 0.88 + 0.10 * (_salted(g[near], seed, 4) >> np.uint64(11)).astype(np.float64) / float(1 << 53)
        own = g[near].astype(np.uint64)[:, None] * np.uint64(PERM) + np.arange(PERM, dtype=np.uint64)[None, :]
        draw = (_salted(own, seed, 5) >> np.uint64(11)).astype(np.float64) / float(1 << 53)
        replace = draw >= j[:, None]
        sig[near] = np.where(replace, _salted(own, seed, 6), sig[near])
    return sig


def band_keys(sig: np.ndarray) -> np.ndarray:
    """(n, BANDS) uint64 keys: a splitmix64 fold of each band's rows, seeded by the band."""
    out = np.empty((len(sig), BANDS), dtype=np.uint64)
    for b in range(BANDS):
        h = np.full(len(sig), b, dtype=np.uint64)
        for r in range(ROWS):
            h = mix(h ^ sig[:, b * ROWS + r])
        out[:, b] = h
    return out


def config() -> DedupConfig:
    return DedupConfig(exact=True, minhash=MinHashConfig(bands=BANDS, rows=ROWS, verify=False))


@dataclass
class PlantedStage(DedupStage):
    """A dedup stage whose shard ``s`` holds documents ``s * docs_per_shard`` onward, keys computed, not read."""

    total: int = 0
    docs_per_shard: int = 10_000
    seed: int = 0

    def docs(self, shard_index: int) -> np.ndarray:
        lo = shard_index * self.docs_per_shard
        return np.arange(lo, min(self.total, lo + self.docs_per_shard), dtype=np.int64)

    def sign_records(self, shard: Shard) -> tuple[np.ndarray, np.ndarray, int]:
        g = self.docs(shard.index)
        n = len(g)
        kind, root = kinds(g, self.seed), roots(g, self.seed)
        text = np.where(kind == EXACT, root, g)  # an exact copy has its original's text
        keys = np.zeros(n, dtype=KEY)
        keys["hi"], keys["lo"] = _salted(text, self.seed, 7), _salted(text, self.seed, 8)
        keys["shard"], keys["doc"] = shard.index, np.arange(n)
        sig = signatures(g, self.seed)
        content = (_salted(np.where(kind == NEAR, g, root), self.seed, 9) >> np.uint64(1)).astype(np.int64)
        banded = np.zeros((n, BANDS), dtype=BAND)
        banded["band"] = np.arange(BANDS, dtype=np.uint64)[None, :]
        banded["key"] = band_keys(sig)
        banded["shard"], banded["doc"] = shard.index, np.arange(n)[:, None]
        banded["content"] = content[:, None]
        return keys, banded.reshape(-1), n

    def shards(self) -> tuple[Shard, ...]:
        count = -(-self.total // self.docs_per_shard)
        return tuple(Shard(i, f"planted://{i}", f"planted-{i:05d}") for i in range(count))


def make_stage(out_dir: str, total: int, docs_per_shard: int = 10_000, seed: int = 0) -> PlantedStage:
    return PlantedStage(
        "planted", config(), "", out_dir, total=total, docs_per_shard=docs_per_shard, seed=seed
    )


def check(stage: PlantedStage) -> dict[str, int]:
    """The removal lists against the planted truth, shard by shard: copies, removed copies, removed uniques."""
    from datapipe import read_removals

    out = {"copies": 0, "found": 0, "false": 0}
    for shard in stage.shards():
        kind = kinds(stage.docs(shard.index), stage.seed)
        removed = np.zeros(len(kind), dtype=bool)
        docs = [r[0] for r in read_removals(stage.out_dir, shard.index)]
        removed[docs] = True
        out["copies"] += int((kind != UNIQUE).sum())
        out["found"] += int((removed & (kind != UNIQUE)).sum())
        out["false"] += int((removed & (kind == UNIQUE)).sum())
    return out
