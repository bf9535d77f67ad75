"""datapipe's stages as datatrove pipeline steps, for datatrove's executors (local processes, Slurm).

A stage is one executor whose task ``r`` of ``T`` takes the stage's shards ``r, r+T, ...`` and runs each through
the same ``run_shard`` as the Beam engine, so the outputs are the same bytes and a shard an earlier (killed) run
committed is reported, not redone; a one-task executor after it writes ``stage.json`` and ``_SUCCESS``. Each step
counts what it did in datatrove's stats (``docs_in``, ``docs_kept``, ``removed/<reason>``, ``tokens``) as well.

Global phases follow datatrove's file-based pattern; these steps only move data, and every decision is the function
of ``datapipe.dedup.components`` / ``datapipe.quality.cutoff`` that the Beam engine calls too:

every phase is its task table (``datapipe.orchestrate.registry.phase_tasks``), each row an executor of
:class:`PhaseTask`, partitions spread over ``--buckets`` tasks:

* dedup and paragraphs: the file-shuffled tasks of ``datapipe.dedup.spill`` (keys per shard, then per partition:
  buckets, verification, removal lists; components and the commit once);
* quality cut-off or ensemble buckets: ``datapipe.quality.phase`` (each shard's keys, then the report once).

Intermediate files live under ``<output>/_datatrove/<source>/<stage dir>/``, beside datatrove's logging folders.
"""

from __future__ import annotations

from typing import Any

from datatrove.data import Document
from datatrove.pipeline.base import PipelineStep

from datapipe.dedup import spill
from datapipe.io.jsonl import read_records
from datapipe.io.shards import Shard
from datapipe.runtime.memory import peak_rss_mb
from datapipe.runtime.stage import DocumentStage, Stage, finish_stage, run_shard
from datapipe.runtime.stats import StageStats


def mine(shards: tuple[Shard, ...], rank: int, world_size: int) -> tuple[Shard, ...]:
    """The shards task ``rank`` of ``world_size`` handles."""
    return shards[rank::world_size]


class _Step(PipelineStep):
    """A step over one datapipe stage; ``shards`` and ``scratch`` (the phase files' folder) as the step needs."""

    type = "datapipe"

    def __init__(
        self, stage: Any, shards: tuple[Shard, ...] = (), scratch: str = "", label: str | None = None
    ) -> None:
        self.name = f"{stage.source}/{stage.name} {label or type(self).__name__}"  # names datatrove's stats
        super().__init__()
        self.stage, self.shards, self.scratch = stage, shards, scratch

    def count_peak(self) -> None:
        """The task's peak resident set so far, in datatrove's stats (``peak_rss_mb``; the engine reports the
        largest task of each executor). A local worker process runs several tasks: its peak bounds each."""
        self.stat_update("peak_rss_mb", value=peak_rss_mb())

    def count(self, stats: StageStats) -> None:
        self.stat_update("docs_in", value=stats.docs_in)
        self.stat_update("docs_kept", value=stats.docs_kept)
        for reason, n in sorted(stats.removed.items()):
            self.stat_update(f"removed/{reason}", value=n)
        if stats.tokens:
            self.stat_update("tokens", value=stats.tokens, unit="doc")


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
            self.count_peak()
            self.stage.teardown()


class FinishStage(_Step):
    """One task: every shard's committed statistics -> ``stage.json`` and ``_SUCCESS``."""

    def __init__(self, stage: Stage, shards: tuple[Shard, ...], record: dict[str, object]) -> None:
        super().__init__(stage, shards)
        self.record = record

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        if data:
            yield from data
        stats = [run_shard(self.stage, s) for s in self.shards]  # all committed: read back from the markers
        self.count(finish_stage(self.stage, list(self.shards), stats, self.record))  # consolidates a cache
        self.count_peak()


# ------------------------------------------------------------------------------------------- global phases


class PhaseTask(_Step):
    """One row of a global phase's task table (``datapipe.orchestrate.registry.phase_tasks``): task ``r`` of ``T`` runs
    the row's function on shards ``r, r+T, ...``, on partitions ``r, r+T, ...``, or once."""

    def __init__(
        self, stage: Any, shards: tuple[Shard, ...], scratch: str, task: tuple[str, Any, str]
    ) -> None:
        super().__init__(stage, shards, scratch, label=task[0])
        self.task = task

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        if data:
            yield from data
        _, fn, over = self.task
        plan = spill.Spill.of(self.scratch, self.shards, self.stage)
        for item in plan.items(self.shards)[over][rank::world_size]:
            with self.track_time():
                fn(self.stage, plan, item)
        self.count_peak()
