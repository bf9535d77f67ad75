"""The quality stage's global phase as a task table, in the form of the dedup phases' (``datapipe/dedup/spill.py``).

A kept fraction's cut-off and an ensemble's bucket boundaries are taken over every document of the source, so the
stage gathers one small array per shard (:meth:`QualityStage.selection_array`: 16 bytes a document) and decides
once (:meth:`QualityStage.selection_report`). Both engines run these two rows as they are, through the same
executor they run the dedup tables with, so ``global.json`` is the same bytes on either: an engine only schedules
the rows (every task of a row after every task of the row before) and moves no data itself; the arrays pass
through the phase's scratch folder.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from datapipe.io import fs
from datapipe.io.shards import Shard
from datapipe.runtime.heartbeat import Heartbeat


def _keys_url(scratch: str, shard_index: int) -> str:
    return fs.join(scratch, "keys", f"{shard_index:05d}.npy")


def shard_keys(stage: Any, plan: Any, shard: Shard) -> None:
    """One task per input shard: the shard's selection array, to the scratch folder. Its heartbeat marks the
    shard's start for the progress display and the stage's time, as dedup's signing does."""
    Heartbeat(stage.out_dir, shard.part).tick(0)
    buf = io.BytesIO()
    np.save(buf, stage.selection_array(shard), allow_pickle=False)
    fs.write_bytes_atomic(_keys_url(plan.scratch, shard.index), buf.getvalue())


def cutoff(stage: Any, plan: Any, _: None = None) -> None:
    """One task: every shard's array -> the stage's report -> ``global.json`` (and ``_GLOBAL_SUCCESS``)."""
    parts = [
        np.load(io.BytesIO(fs.read_bytes(_keys_url(plan.scratch, s))), allow_pickle=False)
        for s in plan.shards
    ]
    stage.write_global_report(stage.selection_report(parts))


# (task, function(stage, plan, item), what its tasks share out): see datapipe.dedup.spill.DEDUP_TASKS
QUALITY_TASKS = (
    ("keys", shard_keys, "shards"),
    ("cutoff", cutoff, "once"),
)
