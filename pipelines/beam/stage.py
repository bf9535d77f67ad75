"""Run datapipe stages as Beam pipelines: shards -> workers -> per-shard outputs -> stage.json + _SUCCESS.

One stage (:class:`RunStage`, a composite transform)::

    shards | [global phase] | Reshuffle | ParDo(ProcessShard) | GroupByKey(one key) | ParDo(FinishStage)

A source's stages run as one chain (:class:`RunChain`) in one pipeline: the next stage's shard list is emitted by
the previous stage's ``FinishStage``, so it starts only after that stage's ``_SUCCESS`` is written; a stage with a
global phase (its task table, ``pipelines/beam/phase.py``, or for dedup and paragraphs on a distributed runner the
GroupByKey transforms of ``pipelines/beam/dedup.py``: :func:`global_transform`) gets it between the two, and its shards wait for the phase's commit. Every source's chain goes
into the same pipeline, so workers start, import and load their models once per build, which is most of a small
build's time on the DirectRunner.

Only shard descriptors travel through the shuffle, never document text; each worker reads its shard from storage
and writes its own part files, so the result is the same on the DirectRunner, Dataflow, Flink or Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from datapipe.dedup.spill import SCRATCH
from datapipe.io import fs
from datapipe.io.shards import Shard
from datapipe.orchestrate.plan import StagePlan
from datapipe.orchestrate.registry import DEDUP, PARAGRAPHS, phase_tasks
from datapipe.runtime.phase import pending
from datapipe.runtime.stage import Stage, finish_stage, run_shard
from datapipe.runtime.stats import StageStats
from pipelines.beam.dedup import CC_ROUNDS, DedupGlobal, ParagraphsGlobal
from pipelines.beam.phase import TaskTable
from pipelines.beam.quiet import PipelineOptions, beam
from pipelines.beam.runner import pipeline
from pipelines.beam.zygote import WarmWorkers

NAMESPACE = "datapipe"


class ProcessShard(beam.DoFn):
    """Process (or, if already committed, just report) one shard. Heavy resources load once per worker."""

    def __init__(self, stage: Stage) -> None:
        self.stage = stage

    def setup(self) -> None:
        self.stage.setup()

    def teardown(self) -> None:
        self.stage.teardown()

    def process(self, shard: Shard):
        stats = run_shard(self.stage, shard)
        prefix = f"{self.stage.source}.{self.stage.name}"
        beam.metrics.Metrics.counter(NAMESPACE, f"{prefix}.docs_in").inc(stats.docs_in)
        beam.metrics.Metrics.counter(NAMESPACE, f"{prefix}.docs_kept").inc(stats.docs_kept)
        for reason, n in stats.removed.items():
            beam.metrics.Metrics.counter(NAMESPACE, f"{prefix}.removed.{reason}").inc(n)
        if stats.tokens:
            beam.metrics.Metrics.counter(NAMESPACE, f"{prefix}.tokens").inc(stats.tokens)
        yield None, (shard, stats.to_dict())  # one key: every shard's result reaches FinishStage


class FinishStage(beam.DoFn):
    """Runs once with every shard's statistics: finalize, then stage.json and _SUCCESS. A stage whose shards did not
    run (a global phase before it must run again) sends it nothing, and stays unfinished."""

    def __init__(self, stage: Stage, record: dict[str, object], expected: int) -> None:
        self.stage = stage
        self.record = record
        self.expected = expected  # shards

    def process(
        self, element: tuple[None, Iterable[tuple[Shard, dict]]]
    ):  # GroupByKey's one key, every result
        results = list(element[1])
        if len(results) != self.expected:
            raise RuntimeError(
                f"{self.stage.out_dir}: {len(results)} shard results for {self.expected} shards"
            )
        shards = [r[0] for r in results]
        stats = [StageStats.from_dict(r[1]) for r in results]
        total = finish_stage(self.stage, shards, stats, self.record)
        yield total.to_dict()


def _after(done: beam.PCollection, shards: tuple[Shard, ...], label: str) -> beam.PCollection:
    """The shard list, emitted once ``done`` (the previous stage's one finishing element) exists."""
    return done | label >> beam.FlatMap(lambda _, s=shards: list(s))


# the phases that may instead group their keys with Beam's GroupByKey (``--global-shuffle beam``), made from (stage,
# component rounds): on a distributed runner the components are then large-star/small-star rounds over the shuffle
# service, so no worker holds every edge (docs/running-on-beam.md); every other phase, and these on the DirectRunner,
# run their task table
GROUP_BY_KEY: dict[str, Callable[[Any, int], beam.PTransform]] = {
    DEDUP: lambda stage, rounds: DedupGlobal(stage, rounds),
    PARAGRAPHS: lambda stage, rounds: ParagraphsGlobal(stage),
}


def global_transform(
    phase: str, stage: Any, shards: tuple[Shard, ...], rounds: int, files: bool
) -> beam.PTransform:
    """The composite transform of a global phase the registry names (``datapipe.orchestrate.registry.PHASES``)."""
    if not files and phase in GROUP_BY_KEY:
        return GROUP_BY_KEY[phase](stage, rounds)
    return TaskTable(stage, shards, phase_tasks(phase))


class RunStage(beam.PTransform):
    """One stage on a PCollection of its shards (emitted once the stage before is done): its global phase first
    when it has one still to run, then its shards, then ``stage.json`` and ``_SUCCESS``. The output holds one
    element once ``_SUCCESS`` is written (none when the global phase must run again)."""

    def __init__(
        self,
        stage: Stage,
        plan: StagePlan,
        phase: str | None,
        cc_rounds: int = CC_ROUNDS,
        files: bool = False,
    ) -> None:
        super().__init__()
        self.stage, self.plan, self.phase, self.cc_rounds, self.files = stage, plan, phase, cc_rounds, files

    def expand(self, shards):
        stage, plan = self.stage, self.plan
        if self.phase is not None and pending(self.phase, stage):
            # dedup.against reads the earlier builds' stored keys: only the task table does
            files = self.files or bool(getattr(getattr(stage, "config", None), "against", ()))
            transform = global_transform(self.phase, stage, tuple(plan.shards), self.cc_rounds, files)
            committed = shards | "Global" >> transform
            shards = _after(committed, plan.shards, "Phase2/Shards")
        elif self.phase is not None:
            fs.remove(fs.join(stage.out_dir, SCRATCH))  # left by a run killed after its commit
        return (
            shards
            | "Spread" >> beam.Reshuffle()
            | "Process" >> beam.ParDo(ProcessShard(stage))
            | "Gather" >> beam.GroupByKey()
            | "Finish" >> beam.ParDo(FinishStage(stage, plan.record(), len(plan.shards)))
        )


class RunChain(beam.PTransform):
    """A source's stages in order on the pipeline's root, each stage's shard list emitted once the stage before it
    is done (the first one's from ``Create``); the output holds one element once the last stage is done."""

    def __init__(
        self, chain: list[tuple[Stage, StagePlan, str | None]], rounds: dict[str, int], files: bool = False
    ) -> None:
        super().__init__()
        self.chain, self.rounds, self.files = chain, rounds, files

    def expand(self, root):
        done = None
        for stage, plan, phase in self.chain:
            shards = (
                root
                | f"{plan.stage}/Shards"
                >> beam.Create(list(plan.shards), reshuffle=False)  # Spread reshuffles
                if done is None
                else _after(done, plan.shards, f"{plan.stage}/Shards")
            )
            done = shards | plan.stage >> RunStage(
                stage, plan, phase, self.rounds.get(plan.out_dir, CC_ROUNDS), self.files
            )
        return done


def run_chains(
    chains: list[list[tuple[Stage, StagePlan, str | None]]],
    options: PipelineOptions,
    cc_rounds: dict[str, int] | None = None,
    files: bool = False,
    workers: WarmWorkers | None = None,
) -> None:
    """Run every chain (a source's stages with their global phases, in order) in one pipeline, to completion
    (blocking). ``cc_rounds``: connected-component rounds per dedup stage folder, for one that needs more than the
    default; ``files``: dedup and paragraph phases shuffle through files instead of ``GroupByKey``; ``workers``:
    the build's warm parent for local worker processes, if it started one."""
    with pipeline(options, workers) as p:
        for chain in chains:
            _ = p | chain[0][1].source >> RunChain(chain, cc_rounds or {}, files)
