"""A global phase's task table (``datapipe.orchestrate.registry.phase_tasks``) as a composite transform: the protocol the
datatrove engine runs too, so both engines write the same scratch files, removal lists and ``global.json``.

Each row of the table is a ``ParDo`` over its items (the shards, the partition numbers, an earlier build's
shards, or one), emitted once every task of the row before has finished; Beam's shuffle moves task numbers only,
and every process holds one partition (or one shard's keys) at a time. The data pass through the phase's scratch
folder (``<stage>/_spill/``), which is removed once the phase has committed.

A row with no items (``earlier`` without ``dedup.against``) is left out, and consecutive rows of one task each (a
phase over few shards has one partition: buckets, verify, components, removals and commit) run as one task, the
rows in order: on the DirectRunner each row's barrier (a count, a reshuffle, a bundle) cost 0.05-0.1 s, the empty
row's 0.35 s, more than such a task's work on the e2e build's 2,841 documents (docs/benchmarks.md). Every task
still runs after every task of the row before it, so what is written is the same.
"""

from __future__ import annotations

from collections.abc import Callable

from datapipe.dedup.spill import SCRATCH, Spill
from datapipe.io import fs
from datapipe.io.shards import Shard
from datapipe.runtime.stage import TwoPhaseStage
from pipelines.beam.quiet import beam


class RunTask(beam.DoFn):
    """One task of a row: the row's function on one item. No eager ``stage.setup()``: a task that needs the stage's
    resources sets them up itself (signing, scoring), so a task that only groups or decides (buckets, the quality
    cut-off) loads no model, as on the datatrove engine."""

    def __init__(self, stage: TwoPhaseStage, spill: Spill, fn: Callable[..., object]) -> None:
        self.stage, self.spill, self.fn = stage, spill, fn

    def process(self, item):
        self.fn(self.stage, self.spill, item)
        yield None


class RunRows(beam.DoFn):
    """Consecutive rows of one task each, as one task: each row's function on its one item, in the table's order."""

    def __init__(
        self, stage: TwoPhaseStage, spill: Spill, rows: list[tuple[Callable[..., object], object]]
    ) -> None:
        self.stage, self.spill, self.rows = stage, spill, rows

    def process(self, _):
        for fn, item in self.rows:
            fn(self.stage, self.spill, item)
        yield None


Row = tuple[str, Callable[..., object], str]


def task_groups(tasks: tuple[Row, ...], items: dict[str, list[object]]) -> list[list[Row]]:
    """The table's rows as the transform runs them: rows without items left out (the first, over the shards, is
    always run), consecutive rows of one item each together."""
    groups: list[list[Row]] = []
    joining = False  # the last group is of single-task rows
    for row in tasks:
        over = row[2]
        if over != "shards" and not items[over]:
            continue
        single = over != "shards" and len(items[over]) == 1
        if single and joining:
            groups[-1].append(row)
        else:
            groups.append([row])
        joining = single
    return groups


class TaskTable(beam.PTransform):
    """The phase on a PCollection of the stage's shards; the output holds one element once ``_GLOBAL_SUCCESS`` is
    written."""

    def __init__(self, stage: TwoPhaseStage, shards: tuple[Shard, ...], tasks: tuple) -> None:
        super().__init__()
        self.stage, self.tasks = stage, tasks
        self.spill = Spill.of(fs.join(stage.out_dir, SCRATCH), shards, stage)

    def expand(self, shards):
        spill = self.spill
        items = spill.items(())  # the shards' row runs over the PCollection
        done = None
        assert self.tasks[0][2] == "shards", "a phase starts from the stage's shards"
        for group in task_groups(self.tasks, items):
            name, fn, over = group[0]
            if len(group) > 1:
                name = "+".join(row[0] for row in group)
                step: beam.DoFn = RunRows(self.stage, spill, [(row[1], items[row[2]][0]) for row in group])
            else:
                step = RunTask(self.stage, spill, fn)
            if done is None:
                todo = shards
            else:
                todo = (
                    done
                    | f"{name}/After" >> beam.combiners.Count.Globally()
                    | f"{name}/Items" >> beam.FlatMap(lambda _, it=items[over]: it)
                )
            done = todo | f"{name}/Spread" >> beam.Reshuffle() | name >> beam.ParDo(step)
        return done | "Clean" >> beam.Map(lambda _, url=spill.scratch: fs.remove(url))
