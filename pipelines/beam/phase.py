"""A global phase's task table (``datapipe.build.registry.phase_tasks``) as a composite transform: the protocol the
datatrove engine runs too, so both engines write the same scratch files, removal lists and ``global.json``.

Each row of the table is a ``ParDo`` over its items (the shards, the partition numbers, an earlier build's
shards, or one), emitted once every task of the row before has finished; Beam's shuffle moves task numbers only,
and every process holds one partition (or one shard's keys) at a time. The data pass through the phase's scratch
folder (``<stage>/_spill/``), which is removed once the phase has committed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from datapipe.dedup.spill import Spill
from datapipe.io import fs
from datapipe.io.shards import Shard
from datapipe.runtime.stage import TwoPhaseStage
from pipelines.beam.quiet import beam

SPILL_DIR = "_spill"  # a phase's scratch folder, inside the stage's folder until it commits


class RunTask(beam.DoFn):
    """One task of a row: the row's function on one item. No eager ``stage.setup()``: a task that needs the stage's
    resources sets them up itself (signing, scoring), so a task that only groups or decides (buckets, the quality
    cut-off) loads no model, as on the datatrove engine."""

    def __init__(self, stage: TwoPhaseStage, spill: Spill, fn: Callable[..., Any]) -> None:
        self.stage, self.spill, self.fn = stage, spill, fn

    def process(self, item):
        self.fn(self.stage, self.spill, item)
        yield None


class TaskTable(beam.PTransform):
    """The phase on a PCollection of the stage's shards; the output holds one element once ``_GLOBAL_SUCCESS`` is
    written."""

    def __init__(self, stage: TwoPhaseStage, shards: tuple[Shard, ...], tasks: tuple) -> None:
        super().__init__()
        self.stage, self.tasks = stage, tasks
        self.spill = Spill.of(fs.join(stage.out_dir, SPILL_DIR), shards, stage)

    def expand(self, shards):
        spill = self.spill
        items: dict[str, list[Any]] = {
            "partitions": list(range(spill.parts)),
            "earlier": list(range(len(spill.earlier))),
            "once": [None],
        }
        done = None
        assert self.tasks[0][2] == "shards", "a phase starts from the stage's shards"
        for name, fn, over in self.tasks:
            if done is None:
                todo = shards
            else:
                todo = (
                    done
                    | f"{name}/After" >> beam.combiners.Count.Globally()
                    | f"{name}/Items" >> beam.FlatMap(lambda _, it=items[over]: it)
                )
            done = (
                todo
                | f"{name}/Spread" >> beam.Reshuffle()
                | name >> beam.ParDo(RunTask(self.stage, spill, fn))
            )
        return done | "Clean" >> beam.Map(lambda _, url=spill.scratch: fs.remove(url))
