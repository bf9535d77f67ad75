"""The Beam engine's task table (``pipelines/beam/phase.py``): which rows run as which Beam steps."""

from __future__ import annotations

from datapipe.dedup.spill import DEDUP_TASKS, LINE_TASKS
from pipelines.beam.phase import task_groups


def _names(groups):
    return [[row[0] for row in group] for group in groups]


def test_rows_of_one_task_each_run_together_and_rows_without_items_not_at_all():
    """Over few shards (one partition, no earlier builds) dedup's five rows after the signatures are one task each
    and run as one Beam step, in the table's order; with more partitions each such row keeps its own step (its
    tasks run in parallel), the single rows between them still join; an earlier build's shards are a row of
    their own. The first row, over the shards, is never joined."""
    few = {"partitions": [0], "earlier": [], "once": [None]}
    assert _names(task_groups(DEDUP_TASKS, few)) == [
        ["signatures"],
        ["buckets", "verify", "components", "removals", "commit"],
    ]
    many = {"partitions": [0, 1, 2], "earlier": [], "once": [None]}
    assert _names(task_groups(DEDUP_TASKS, many)) == [
        ["signatures"],
        ["buckets"],
        ["verify"],
        ["components"],
        ["removals"],
        ["commit"],
    ]
    against = {"partitions": [0], "earlier": [0, 1], "once": [None]}
    assert _names(task_groups(DEDUP_TASKS, against)) == [
        ["signatures"],
        ["earlier"],
        ["buckets", "verify", "components", "removals", "commit"],
    ]
    assert _names(task_groups(LINE_TASKS, few)) == [["lines"], ["line-buckets", "removals", "commit"]]
    # the order of every row is kept, whatever is joined
    for items in (few, many, against):
        flat = [row for group in task_groups(DEDUP_TASKS, items) for row in group]
        assert flat == [row for row in DEDUP_TASKS if row[2] == "shards" or items[row[2]]]
