"""datapipe's stages as datatrove pipeline steps, for datatrove's executors (local processes, Slurm).

A stage is one executor whose task ``r`` of ``T`` takes the stage's shards ``r, r+T, ...`` and runs each through
the same ``run_shard`` as the Beam engine, so the outputs are the same bytes and a shard an earlier (killed) run
committed is reported, not redone; a one-task executor after it writes ``stage.json`` and ``_SUCCESS``. Each step
counts what it did in datatrove's stats (``docs_in``, ``docs_kept``, ``removed/<reason>``, ``tokens``) as well.

Global phases follow datatrove's file-based pattern; these steps only move data, and every decision is the function
of ``datapipe.dedup.components`` / ``datapipe.quality.cutoff`` that the Beam engine calls too:

* dedup: ``DedupSignatures`` (per shard: exact and band keys, shingle sets) -> ``DedupBuckets`` (task ``b`` of ``B``:
  keys with ``key % B == b``; exact groups and verified LSH edges) -> ``DedupClusters`` (one task: union-find over
  the edges, the roots it finds being the ones large/small-star finds under Beam; removal lists per shard).
* paragraphs: ``LineKeys`` (per shard) -> ``LineBuckets`` (task ``b``: every occurrence of a line hash but the
  first) -> ``LineRemovals`` (one task: the buckets' removals grouped per shard).
* quality cut-off (``keep_fraction``): ``QualityKeys`` (per shard: (score, tie-break) of every document) ->
  ``QualityCutoff`` (one task: the exact quantile over every shard's keys).

Intermediate files live under ``<output>/_datatrove/<source>/<stage dir>/``, beside datatrove's logging folders.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from datatrove.data import Document
from datatrove.pipeline.base import PipelineStep

from datapipe.dedup import components
from datapipe.dedup.graph import bucket_pairs, local_components
from datapipe.dedup.minhash import jaccard
from datapipe.dedup.store import ShingleStore, write_components, write_edges, write_removals
from datapipe.io import fs
from datapipe.io.jsonl import read_records
from datapipe.io.shards import Shard
from datapipe.quality.cutoff import KEY, cutoff_report, keys_array
from datapipe.stage import DocumentStage, Stage, finish_stage, run_shard
from datapipe.stats import StageStats

_U64 = (1 << 64) - 1


def mine(shards: tuple[Shard, ...], rank: int, world_size: int) -> tuple[Shard, ...]:
    """The shards task ``rank`` of ``world_size`` handles."""
    return shards[rank::world_size]


def _save(url: str, **arrays: np.ndarray) -> None:
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds as its allow_pickle flag
    fs.write_bytes_atomic(url, buf.getvalue())


def _load(url: str) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(fs.read_bytes(url))) as z:
        return {k: z[k] for k in z.files}


def _split128(values: list[int]) -> np.ndarray:
    """128-bit hashes as (high, low) uint64 columns."""
    return np.array([(v >> 64, v & _U64) for v in values], dtype=np.uint64).reshape(-1, 2)


class _Step(PipelineStep):
    """A step over one datapipe stage; ``shards`` and ``scratch`` (the phase files' folder) as the step needs."""

    type = "datapipe"

    def __init__(self, stage: Any, shards: tuple[Shard, ...] = (), scratch: str = "") -> None:
        self.name = f"{stage.source}/{stage.name} {type(self).__name__}"  # names datatrove's stats
        super().__init__()
        self.stage, self.shards, self.scratch = stage, shards, scratch

    def count(self, stats: StageStats) -> None:
        self.stat_update("docs_in", value=stats.docs_in)
        self.stat_update("docs_kept", value=stats.docs_kept)
        for reason, n in sorted(stats.removed.items()):
            self.stat_update(f"removed/{reason}", value=n)
        if stats.tokens:
            self.stat_update("tokens", value=stats.tokens, unit="doc")


class _ShardStep(_Step):
    """A step that runs :meth:`shard` on each of this task's shards, timed."""

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        if data:
            yield from data
        for shard in mine(self.shards, rank, world_size):
            with self.track_time():
                self.shard(shard)

    def shard(self, shard: Shard) -> None:
        raise NotImplementedError


class StageShards(_Step):
    """The stage's per-shard work for this task's shards (heavy resources load once per task).

    With ``emit_documents`` it also yields each shard's kept documents as datatrove ``Document``s (read back from
    the committed part file), so datatrove steps can follow it (a writer, a datatrove filter) in the same pipeline.
    """

    def __init__(self, stage: Stage, shards: tuple[Shard, ...], emit_documents: bool = False) -> None:
        super().__init__(stage, shards)
        self.emit_documents = emit_documents

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        if data:
            yield from data
        self.stage.setup()
        try:
            for shard in mine(self.shards, rank, world_size):
                with self.track_time():
                    self.count(run_shard(self.stage, shard))
                if self.emit_documents and isinstance(self.stage, DocumentStage):
                    for rec in read_records(self.stage.part_url(shard)):
                        yield Document(text=rec["text"], id=rec["id"], metadata=rec.get("metadata") or {})
        finally:
            teardown = getattr(self.stage, "teardown", None)
            if teardown is not None:
                teardown()


class FinishStage(_Step):
    """One task: every shard's committed statistics -> ``stage.json`` and ``_SUCCESS``."""

    def __init__(self, stage: Stage, shards: tuple[Shard, ...], record: dict[str, Any]) -> None:
        super().__init__(stage, shards)
        self.record = record

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        if data:
            yield from data
        stats = [run_shard(self.stage, s) for s in self.shards]  # all committed: read back from the markers
        self.count(finish_stage(self.stage, list(self.shards), stats, self.record))


# ------------------------------------------------------------------------------------------- document dedup


class DedupSignatures(_ShardStep):
    """Per shard: ``(text hash, ref)`` and ``(band, key, ref)`` arrays, and the shingle sets for verification."""

    def shard(self, shard: Shard) -> None:
        exact, bands, n = self.stage.sign_shard(shard)
        self.stat_update("documents", value=n)
        _save(
            fs.join(self.scratch, "signatures", f"{shard.index:05d}.npz"),
            exact_hash=_split128([h for h, _ in exact]),
            exact_ref=np.array([r for _, r in exact], dtype=np.int64).reshape(-1, 2),
            band=np.array([[b, k] for (b, k), _ in bands], dtype=np.uint64).reshape(-1, 2),
            band_ref=np.array([r for _, (r, _) in bands], dtype=np.int64).reshape(-1, 2),
            band_content=np.array([c for _, (_, c) in bands], dtype=np.int64),
        )


class DedupBuckets(_Step):
    """Task ``b`` of ``B``: exact groups and LSH buckets whose key falls to it; candidate pairs verified."""

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        if data:
            yield from data
        exact: dict[tuple[int, int], list[tuple[int, int]]] = {}
        buckets: dict[tuple[int, int], list[tuple[tuple[int, int], int]]] = {}
        for shard in self.shards:
            z = _load(fs.join(self.scratch, "signatures", f"{shard.index:05d}.npz"))
            for (hi, lo), ref in zip(z["exact_hash"].tolist(), z["exact_ref"].tolist(), strict=True):
                if lo % world_size == rank:
                    exact.setdefault((hi, lo), []).append(tuple(ref))
            banded = zip(z["band"].tolist(), z["band_ref"].tolist(), z["band_content"].tolist(), strict=True)
            for (band, key), ref, content in banded:
                if key % world_size == rank:
                    buckets.setdefault((band, key), []).append((tuple(ref), content))
        removals: list[tuple[int, ...]] = []
        for refs in exact.values():
            removals.extend((shard, doc, *keep) for shard, (doc, _, keep) in components.exact_removals(refs))
        mh = self.stage.config.minhash
        edges: list[tuple[int, int, int, int, float]] = []
        if mh is not None:
            pairs: set[tuple[tuple[int, int], tuple[int, int]]] = set()
            held = 0
            for bucket in buckets.values():
                held = max(held, len(set(bucket)))
                pairs.update(bucket_pairs(bucket, mh.max_bucket_pairs))
            self.stat_update("largest_bucket", value=held)
            store = ShingleStore(self.stage.out_dir) if mh.verify else None
            for a, b in sorted(pairs):  # unverified (verify off): every candidate is an edge, weight -1
                weight = (
                    -1.0
                    if store is None
                    else components.edge_weight(jaccard(store.get(a), store.get(b)), mh.threshold)
                )
                if weight is not None:
                    self.stat_update("pairs_verified")
                    edges.append((*a, *b, weight))
                else:
                    self.stat_update("pairs_rejected")
        _save(
            fs.join(self.scratch, "buckets", f"{rank:05d}.npz"),
            exact=np.array(removals, dtype=np.int64).reshape(-1, 4),
            edges=np.array([e[:4] for e in edges], dtype=np.int64).reshape(-1, 4),
            jaccard=np.array([e[4] for e in edges], dtype=np.float64),
        )


class DedupClusters(_Step):
    """One task: components over every bucket's edges; removal lists, ``components.json``, ``global.json``."""

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        if data:
            yield from data
        stage = self.stage
        edges: dict[tuple, float | None] = {}
        decisions: dict[int, list[tuple]] = {}
        for url in fs.glob(fs.join(self.scratch, "buckets", "*.npz")):
            z = _load(url)
            for s, d, ks, kd in z["exact"].tolist():
                decisions.setdefault(s, []).append((d, "dedup/exact", (ks, kd)))
            for (sa, da, sb, db), j in zip(z["edges"].tolist(), z["jaccard"].tolist(), strict=True):
                edges[((sa, da), (sb, db))] = None if j < 0 else j
        roots = local_components(edges)
        members: dict[tuple, list[tuple]] = {}
        for node, root in roots.items():
            members.setdefault(root, []).append(node)
            if node != root:
                shard, decision = components.minhash_removal(node, root)
                decisions.setdefault(shard, []).append(decision)
        removed = 0
        for s, items in sorted(decisions.items()):
            merged = [
                (d, reason, list(survivor)) for d, reason, survivor in components.merge_decisions(items)
            ]
            removed += len(merged)
            write_removals(stage.out_dir, s, merged)
        tally = components.ComponentTally()
        if stage.config.minhash is not None:
            if stage.config.minhash.keep_edges:
                blocks: dict[tuple[int, int], list] = {}
                for (a, b), j in edges.items():
                    blocks.setdefault(components.edge_block(a, b), []).append((a, b, j))
                for (shard, block), items in blocks.items():
                    write_edges(stage.out_dir, shard, block, items)
            for m in members.values():
                tally.add(components.component_entry(m))
            write_components(stage.out_dir, tally.to_dict())
        doc = tally.to_dict()
        held = max((len(m) for m in members.values()), default=0)
        report = components.component_report(doc["histogram"], doc["largest"], held, {})
        report["counters"] = {"removed": removed}
        report["engine"] = "datatrove"
        stage.write_global_report(report)


# -------------------------------------------------------------------------------------------- paragraph dedup


class LineKeys(_ShardStep):
    """Per shard: ``(hash of the normalized line, ref)`` for every line with text."""

    def shard(self, shard: Shard) -> None:
        keys, n = self.stage.line_keys(shard)
        self.stat_update("documents", value=n)
        self.stat_update("lines", value=len(keys))
        _save(
            fs.join(self.scratch, "lines", f"{shard.index:05d}.npz"),
            hash=_split128([h for h, _ in keys]),
            ref=np.array([r for _, r in keys], dtype=np.int64).reshape(-1, 3),
        )


class LineBuckets(_Step):
    """Task ``b``: of each line hash falling to it, every occurrence but the first is removed."""

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        if data:
            yield from data
        seen: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
        for shard in self.shards:
            z = _load(fs.join(self.scratch, "lines", f"{shard.index:05d}.npz"))
            for (hi, lo), ref in zip(z["hash"].tolist(), z["ref"].tolist(), strict=True):
                if lo % world_size == rank:
                    seen.setdefault((hi, lo), []).append(tuple(ref))
        out = [(s, *decision) for refs in seen.values() for s, decision in components.line_removals(refs)]
        self.stat_update("lines_removed", value=len(out))
        _save(
            fs.join(self.scratch, "line-buckets", f"{rank:05d}.npz"),
            removed=np.array(sorted(out), dtype=np.int64).reshape(-1, 3),
        )


class LineRemovals(_Step):
    """One task: every bucket's removed lines, written as one removal list per shard."""

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        if data:
            yield from data
        by_shard: dict[int, list[tuple[int, int]]] = {}
        for url in fs.glob(fs.join(self.scratch, "line-buckets", "*.npz")):
            for s, d, line in _load(url)["removed"].tolist():
                by_shard.setdefault(s, []).append((d, line))
        for s, items in sorted(by_shard.items()):
            write_removals(self.stage.out_dir, s, items)
        report = components.component_report({}, [], 0, {})
        report["counters"] = {"lines_removed": sum(len(v) for v in by_shard.values())}
        report["engine"] = "datatrove"
        self.stage.write_global_report(report)


# ------------------------------------------------------------------------------------------- quality cut-off


class QualityKeys(_ShardStep):
    """Per shard: ``(score, tie-break)`` of every document, for the cut-off."""

    def shard(self, shard: Shard) -> None:
        keys = keys_array(self.stage.selection_keys(shard))
        self.stat_update("documents", value=len(keys))
        _save(fs.join(self.scratch, "keys", f"{shard.index:05d}.npz"), keys=keys)


class QualityCutoff(_Step):
    """One task: the cut-off over every shard's keys -> ``global.json``."""

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        if data:
            yield from data
        parts = [
            _load(fs.join(self.scratch, "keys", f"{shard.index:05d}.npz"))["keys"].astype(KEY)
            for shard in self.shards
        ]
        self.stage.write_global_report(cutoff_report(parts, self.stage.config.keep_fraction))
