"""Run datapipe stages as Beam pipelines: shards -> workers -> per-shard outputs -> stage.json + _SUCCESS.

One stage::

    shards | Reshuffle | ParDo(ProcessShard) | GroupByKey(one key) | ParDo(FinishStage)

A source's stages run as one chain in one pipeline: the next stage's shard list is emitted by the previous stage's
``FinishStage``, so it starts only after that stage's ``_SUCCESS`` is written; a stage with a global phase
(``pipelines/beam_dedup.py``, ``beam_quality.py``) gets it between the two, and its shards wait for the phase's
commit. Every source's chain goes into the same pipeline, so workers start, import and load their models once per
build, which is most of a small build's time on the DirectRunner.

Only shard descriptors travel through the shuffle, never document text; each worker reads its shard from storage
and writes its own part files, so the result is the same on the DirectRunner, Dataflow, Flink or Spark.
"""

from __future__ import annotations

from typing import Any

from datapipe.io.shards import Shard
from datapipe.plan import StagePlan
from datapipe.stage import Stage, finish_stage, run_shard
from datapipe.stats import StageStats
from pipelines.beam_dedup import CC_ROUNDS, build_global
from pipelines.beam_quiet import PipelineOptions, beam
from pipelines.beam_runner import pipeline

NAMESPACE = "datapipe"


class ProcessShard(beam.DoFn):
    """Process (or, if already committed, just report) one shard. Heavy resources load once per worker."""

    def __init__(self, stage: Stage) -> None:
        self.stage = stage

    def setup(self) -> None:
        self.stage.setup()

    def teardown(self) -> None:
        teardown = getattr(self.stage, "teardown", None)
        if teardown is not None:
            teardown()

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

    def __init__(self, stage: Stage, record: dict[str, Any], expected: int) -> None:
        self.stage = stage
        self.record = record
        self.expected = expected  # shards

    def process(self, element: tuple[None, list[tuple[Shard, dict]]]):
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
    return done | f"{label}/Shards" >> beam.FlatMap(lambda _, s=shards: list(s))


def build_stage(
    p: beam.Pipeline,
    stage: Stage,
    plan: StagePlan,
    label: str,
    after: beam.PCollection | None = None,
    cc_rounds: int = CC_ROUNDS,
) -> beam.PCollection:
    """The stage's transforms, its global phase first when it has one still to run; the result holds one element
    once ``_SUCCESS`` is written (none when the global phase must run again)."""
    shards = (
        p | f"{label}/Shards" >> beam.Create(list(plan.shards), reshuffle=False)  # Spread reshuffles
        if after is None
        else _after(after, plan.shards, label)
    )
    committed = build_global(shards, stage, f"{label}/Global", cc_rounds)
    if committed is not None:
        shards = _after(committed, plan.shards, f"{label}/Phase2")
    return (
        shards
        | f"{label}/Spread" >> beam.Reshuffle()
        | f"{label}/Process" >> beam.ParDo(ProcessShard(stage))
        | f"{label}/Gather" >> beam.GroupByKey()
        | f"{label}/Finish" >> beam.ParDo(FinishStage(stage, plan.record(), len(plan.shards)))
    )


def run_chains(
    chains: list[list[tuple[Stage, StagePlan]]],
    options: PipelineOptions,
    cc_rounds: dict[str, int] | None = None,
) -> None:
    """Run every chain (a source's stages, in order) in one pipeline, to completion (blocking). ``cc_rounds``:
    connected-component rounds per dedup stage folder, for one that needs more than the default."""
    rounds = cc_rounds or {}
    with pipeline(options) as p:
        for chain in chains:
            done = None
            for stage, plan in chain:
                done = build_stage(
                    p, stage, plan, f"{plan.source}/{plan.stage}", done, rounds.get(plan.out_dir, CC_ROUNDS)
                )
