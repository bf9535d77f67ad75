"""Run one datapipe stage as a Beam pipeline: shards -> workers -> per-shard outputs -> stage.json + _SUCCESS.

    shards | Reshuffle | ParDo(ProcessShard) | ToList | ParDo(FinishStage)

Only shard descriptors travel through the shuffle, never document text; each worker reads its shard from storage
and writes its own part files, so the result is the same on the DirectRunner, Dataflow, Flink or Spark.
"""

from __future__ import annotations

from typing import Any

from datapipe.io.shards import Shard
from datapipe.plan import StagePlan
from datapipe.stage import Stage, finish_stage, run_shard
from datapipe.stats import StageStats
from pipelines.beam_quiet import PipelineOptions, beam

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
        yield shard, stats.to_dict()


class FinishStage(beam.DoFn):
    """Runs once with every shard's statistics: finalize, then stage.json and _SUCCESS."""

    def __init__(self, stage: Stage, record: dict[str, Any]) -> None:
        self.stage = stage
        self.record = record

    def process(self, results: list[tuple[Shard, dict]]):
        shards = [r[0] for r in results]
        stats = [StageStats.from_dict(r[1]) for r in results]
        total = finish_stage(self.stage, shards, stats, self.record)
        yield total.to_dict()


def build_stage(p: beam.Pipeline, stage: Stage, plan: StagePlan, label: str) -> beam.PCollection:
    return (
        p
        | f"{label}/Shards" >> beam.Create(list(plan.shards))
        | f"{label}/Spread" >> beam.Reshuffle()
        | f"{label}/Process" >> beam.ParDo(ProcessShard(stage))
        | f"{label}/Gather" >> beam.combiners.ToList()
        | f"{label}/Finish" >> beam.ParDo(FinishStage(stage, plan.record()))
    )


def run_stage(stage: Stage, plan: StagePlan, options: PipelineOptions) -> None:
    """Run the stage's pipeline to completion (blocking)."""
    with beam.Pipeline(options=options) as p:
        build_stage(p, stage, plan, f"{plan.source}/{plan.stage}")
