"""Per-shard files the dedup stages write and read: shingle sets (for verification) and removal lists.

Shingles: ``shingles/part-NNNNN.npz`` with ``hashes`` (all documents' sorted shingle hashes, concatenated),
``offsets`` (document i's are ``hashes[offsets[i]:offsets[i+1]]``) and ``ids`` (document i's id, so the report
can name documents without reading the shard again). The verification step reads them back by
document reference, keeping a few shards in memory, so pairs are verified without moving any text.

Edges (kept on request, for inspection): ``edges/part-SSSSS-BBBBB.json``, the verified edges ``[a, b, jaccard]``
whose smaller end is in block BBBBB of shard SSSSS (``datapipe.dedup.components.edge_block``). Components:
``components.json``, the size histogram and the largest components.

Removals: ``removals/part-NNNNN.json``: the sorted decisions for one input shard, written once by the global phase
and read by that shard's filter pass: ``[doc, reason, [survivor shard, survivor doc]]`` for documents,
``[doc, line]`` for paragraphs.
"""

from __future__ import annotations

import io
import json
from collections import OrderedDict

import numpy as np

from datapipe.io import fs


def shingles_url(stage_dir: str, shard_index: int) -> str:
    return fs.join(stage_dir, "shingles", f"part-{shard_index:05d}.npz")


def write_shingles(stage_dir: str, shard_index: int, sets: list[np.ndarray], ids: list[str]) -> None:
    offsets = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sets], out=offsets[1:])
    hashes = np.concatenate(sets) if sets else np.zeros(0, dtype=np.uint64)
    buf = io.BytesIO()
    np.savez(buf, hashes=hashes.astype(np.uint64), offsets=offsets, ids=np.array(ids, dtype=np.str_))
    fs.write_bytes_atomic(shingles_url(stage_dir, shard_index), buf.getvalue())


def read_shingle_ids(stage_dir: str, shard_index: int) -> list[str] | None:
    """The document ids stored beside a shard's shingles (None for a file written before they were)."""
    with np.load(io.BytesIO(fs.read_bytes(shingles_url(stage_dir, shard_index)))) as z:
        return z["ids"].tolist() if "ids" in z.files else None


class ShingleStore:
    """Shingle sets by document reference, with the last ``cache_shards`` shards' arrays kept in memory."""

    def __init__(self, stage_dir: str, cache_shards: int = 8) -> None:
        self.stage_dir = stage_dir
        self.cache_shards = cache_shards
        self._cache: OrderedDict[int, tuple[np.ndarray, np.ndarray]] = OrderedDict()

    def _shard(self, shard: int) -> tuple[np.ndarray, np.ndarray]:
        got = self._cache.get(shard)
        if got is None:
            with np.load(io.BytesIO(fs.read_bytes(shingles_url(self.stage_dir, shard)))) as z:
                got = (z["hashes"], z["offsets"])
            self._cache[shard] = got
            if len(self._cache) > self.cache_shards:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(shard)
        return got

    def get(self, ref: tuple[int, int]) -> np.ndarray:
        hashes, offsets = self._shard(ref[0])
        return hashes[offsets[ref[1]] : offsets[ref[1] + 1]]


def removals_url(stage_dir: str, shard_index: int) -> str:
    return fs.join(stage_dir, "removals", f"part-{shard_index:05d}.json")


def write_removals(stage_dir: str, shard_index: int, removals: list) -> None:
    fs.write_text_atomic(removals_url(stage_dir, shard_index), json.dumps(sorted(removals)) + "\n")


def read_removals(stage_dir: str, shard_index: int) -> list:
    url = removals_url(stage_dir, shard_index)
    return [tuple(r) for r in json.loads(fs.read_text(url))] if fs.exists(url) else []


def write_edges(stage_dir: str, shard: int, block: int, edges: list) -> None:
    """One block's edges ``(a, b, jaccard)``, sorted."""
    items = sorted([list(a), list(b), j] for a, b, j in edges)
    fs.write_text_atomic(
        fs.join(stage_dir, "edges", f"part-{shard:05d}-{block:05d}.json"), json.dumps(items) + "\n"
    )


def write_components(stage_dir: str, doc: dict) -> None:
    """``components.json``: what :meth:`datapipe.dedup.components.ComponentTally.to_dict` returns."""
    fs.write_text_atomic(fs.join(stage_dir, "components.json"), json.dumps(doc) + "\n")


def read_edges(stage_dir: str) -> list[tuple]:
    """All verified edges ``(a, b, jaccard)`` a dedup stage wrote (for inspection and tests; small by design)."""
    out: list[tuple] = []
    for url in fs.glob(fs.join(stage_dir, "edges", "part-*.json")):
        out.extend((tuple(a), tuple(b), j) for a, b, j in json.loads(fs.read_text(url)))
    return out
