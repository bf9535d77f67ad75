"""The ``substrings`` stage's global phase as a task table (:mod:`datapipe.runtime.phase`), which every engine runs
as it runs dedup's: one row over the stage's input shards (each writes its documents' text into the work folder),
then one task that freezes the layout and runs the suffix-array units (:func:`datapipe.substrings.schedule.run`),
then writes ``global.json``.

Why one task for the units and not a row per unit kind: the stage's memory budget is the whole stage's (every
process), and the units' sizes follow from the corpus, which is known only once the text is written (Beam
builds its graph before that). The one task runs the pair merges on threads; a killed task resumes from the units
already committed (each renames its output into place last), so a rerun does only what is left.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Protocol

from datapipe.io.jsonl import read_records
from datapipe.io.shards import Shard
from datapipe.runtime.phase import TaskRow
from datapipe.substrings.budget import plan
from datapipe.substrings.schedule import run
from datapipe.substrings.work import freeze, read_layout, write_part

if TYPE_CHECKING:
    from datapipe.substrings.stage import SubstringsStage


class Plan(Protocol):
    """What the phase's tasks read of the engine's plan (:class:`datapipe.dedup.spill.Spill`): the stage's input
    shards, whose indices are the work folder's parts."""

    shards: tuple[int, ...]


MAX_THREADS = 4  # the pair merges' threads (numba and libdivsufsort release the GIL)


def threads() -> int:
    return max(1, min(MAX_THREADS, os.cpu_count() or 1))


def write_text(stage: SubstringsStage, spill: Plan, shard: Shard) -> None:
    """One input shard's documents, their text in order, as the work folder's part ``shard.index``."""
    write_part(stage.work, shard.index, (str(d["text"]) for d in read_records(stage.upstream(shard))))


def run_units(stage: SubstringsStage, spill: Plan, _: None = None) -> None:
    """Freeze the layout (chunk size from the budget), run every unit not yet done, and commit the report."""
    cfg = stage.config
    sizes = [read_layout(p).total_bytes for p in stage.priors]
    corpus = sum(
        os.path.getsize(os.path.join(stage.work, "parts", f"part-{i:05d}.bin")) for i in spill.shards
    )
    sized = plan(corpus, cfg.budget_mb, cfg.min_bytes, threads(), prior_bytes=sum(sizes))
    layout = freeze(stage.work, len(spill.shards), cfg.min_bytes, sized.chunk_bytes, stage.priors)
    run(stage.work, (cfg.keep,), threads=sized.threads)  # as many as the budget holds
    stage.write_global_report(
        {
            "bytes": layout.total_bytes,
            "documents": layout.docs,
            "chunks": layout.chunks,
            "chunk_bytes": layout.chunk_bytes,
            "prior_bytes": sum(sizes),
            "pairs": sized.pairs,
            "budget_mb": cfg.budget_mb,
            "planned_peak_mb": sized.peak_mb,
            "threads": sized.threads,
        }
    )


SUBSTRINGS_TASKS: tuple[TaskRow, ...] = (
    ("text", write_text, "shards"),
    ("units", run_units, "once"),
)
