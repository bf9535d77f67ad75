"""The stage contract shared by every engine (Beam, datatrove, a plain loop).

A stage processes one input shard at a time into its own output files and returns the shard's statistics; a
finished shard leaves ``part-NNNNN.stats.json`` as its commit marker, written after its outputs, so a rerun skips
it. When all shards are done, :func:`finish_stage` merges their statistics in shard order, lets the stage finalize
(e.g. consolidate caches), writes ``stage.json`` and, last, ``_SUCCESS``.

Nothing here imports Beam: ``pipelines/`` wraps these functions in ``DoFn``s.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from datapipe import __version__
from datapipe.io import fs
from datapipe.io.shards import Shard
from datapipe.runtime.decisions import RemovedLog, removed_url
from datapipe.runtime.heartbeat import SUFFIX as PROGRESS_SUFFIX
from datapipe.runtime.heartbeat import Heartbeat, began
from datapipe.runtime.record import PLAN_FIELDS, StageRecord
from datapipe.runtime.stats import StageStats, merge_all
from datapipe.runtime.watch import Watch

SUCCESS = "_SUCCESS"
STAGE_JSON = "stage.json"
STATS_SUFFIX = ".stats.json"  # a shard's commit marker and statistics
TIMING_SUFFIX = ".timing.json"  # when a shard began and how long it took (wall clock: never compared)


class Stage(Protocol):
    """One stage of one source. Instances are small and picklable; heavy resources load in :meth:`setup`."""

    @property
    def name(self) -> str: ...

    @property
    def source(self) -> str: ...

    @property
    def out_dir(self) -> str: ...

    def setup(self) -> None: ...

    def has_output(self, shard: Shard) -> bool:
        """Whether this shard's outputs are present (a commit marker without them means: redo the shard)."""
        ...

    def process_shard(self, shard: Shard, beat: Heartbeat | None = None) -> StageStats:
        """Write this shard's outputs atomically under ``out_dir`` and return its statistics."""
        ...

    def finalize(self, shards: list[Shard], stats: list[StageStats]) -> dict[str, object]:
        """Called once after every shard is done; returns extra fields for ``stage.json``."""
        ...

    def teardown(self) -> None:
        """Release what :meth:`setup` loaded in this process (a sandbox's child): an engine's worker is done with
        the stage."""
        ...

    def cleanup(self) -> None:
        """Delete the stage's scratch files, once, after :meth:`finalize` and before the commit."""
        ...


class StageBase:
    """The stage lifecycle's no-op defaults: a stage overrides what it needs (heavy resources in ``setup``, their
    release in ``teardown``, scratch files in ``cleanup``), and every engine calls all three without asking."""

    def setup(self) -> None:
        pass

    def teardown(self) -> None:
        pass

    def cleanup(self) -> None:
        pass


@runtime_checkable
class Supervised(Protocol):
    """A stage whose items may hang or kill their process, able to leave their guarding to an engine that watches
    its processes (:mod:`datapipe.runtime.watch`) instead of guarding them itself."""

    @property
    def item_limit_s(self) -> float:
        """The most seconds one item may take (0: its items have no limit and need no watching)."""
        ...

    def supervise(self, watch: Watch, failed: Mapping[int, str]) -> None:
        """Mark each item of the next shard on ``watch``; record the items in ``failed`` (an item's number -> why)
        as failed without running them."""
        ...


# what a stage's ``warm`` runs its own code on: a line that reaches the word splitters' affix and special-case paths
WARM_TEXT = "Warm-up: it's 3.5km away (e.g. a test), don't stop at https://example.org/ - 10% done!"


@runtime_checkable
class Warms(Protocol):
    """A stage whose first shard in a process spends a noticeable time loading before its first document (models,
    a tokenizer's tables, compiled kernels), able to do that loading on its own, so that an engine can have a
    process that would otherwise wait (on a step only one process runs) do it before the stage's shards reach it."""

    def warm(self) -> None:
        """Load what the stage's first shard in this process would load, and nothing that depends on the stage's
        input or on an earlier stage's output (it may run before those exist); write nothing."""
        ...


def stats_path(out_dir: str, shard: Shard) -> str:
    return fs.join(out_dir, f"{shard.part}{STATS_SUFFIX}")


def run_shard(stage: Stage, shard: Shard) -> StageStats:
    """Process a shard unless an earlier run already committed it; either way return its statistics."""
    marker = stats_path(stage.out_dir, shard)
    if fs.exists(marker) and stage.has_output(shard):
        Heartbeat(stage.out_dir, shard.part).end()  # one a first phase wrote (dedup's signing), if any
        return StageStats.from_dict(json.loads(fs.read_text(marker))["stats"])
    t0 = time.perf_counter()
    # a two-phase stage's shard began with its first phase, before the global one: its time counts from there,
    # so that the stage's own time ("ran in") holds its global phase
    started = began(stage.out_dir, shard.part) or time.time()
    beat = Heartbeat(stage.out_dir, shard.part, started=started)
    beat.tick(0)
    stats = stage.process_shard(shard, beat)
    if not stats.balanced:
        raise AssertionError(
            f"{stage.source}/{stage.name} {shard.url}: accounting does not balance: "
            f"in={stats.docs_in} kept={stats.docs_kept} removed={dict(stats.removed)}"
        )
    record = {"shard": shard.name, "index": shard.index, "stats": stats.to_dict()}
    fs.write_text_atomic(marker, json.dumps(record, sort_keys=True) + "\n")
    fs.write_text_atomic(
        fs.join(stage.out_dir, f"{shard.part}{TIMING_SUFFIX}"),
        json.dumps({"seconds": time.perf_counter() - t0, "started": started}) + "\n",
    )
    beat.end()
    release_freed_memory()
    return stats


def release_freed_memory() -> None:
    """Hand the heap a finished shard freed back to the operating system.

    A shard's documents are large strings, which CPython allocates with malloc; glibc keeps freed blocks for reuse,
    so a worker that runs one stage after another would stay near the sum of their high-water marks (on the e2e
    benchmark's build: 596 -> 549 MiB per worker). Elsewhere than glibc it does nothing."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim():
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def finish_stage(
    stage: Stage, shards: list[Shard], stats: list[StageStats], plan: dict[str, Any]
) -> StageStats:
    """Merge shard statistics (in shard order), finalize, write ``stage.json`` then ``_SUCCESS``.

    ``stage.json`` holds no wall-clock times, so a rerun after a kill writes the same bytes as an uninterrupted run.
    """
    order = sorted(range(len(shards)), key=lambda i: shards[i].index)
    shards = [shards[i] for i in order]
    stats = [stats[i] for i in order]
    total = merge_all(stats)
    extra = stage.finalize(shards, stats)
    stage.cleanup()  # before the commit: a kill after it must not leave scratch files in a finished stage
    # a worker killed mid-write while the build went on (its shard ran again elsewhere: a Ray node, a datatrove
    # task) left its half-written file; every shard is committed now, so no writer of this stage is left
    remove_temporaries(stage.out_dir)
    record = StageRecord(
        datapipe_version=__version__,
        source=stage.source,
        stage=stage.name,
        counts=total.to_dict(),
        shards=[
            {"index": s.index, "name": s.name, **st.to_dict(detail=False)}
            for s, st in zip(shards, stats, strict=True)
        ],
        **{k: plan[k] for k in PLAN_FIELDS if k in plan},
        extra={**{k: v for k, v in plan.items() if k not in PLAN_FIELDS}, **extra},
    )
    fs.write_text_atomic(fs.join(stage.out_dir, STAGE_JSON), record.to_json())
    fs.write_text_atomic(fs.join(stage.out_dir, SUCCESS), "")
    return total


def remove_temporaries(out_dir: str) -> int:
    """Delete the ``.tmp-*`` files a killed atomic write left in a stage folder, and a killed worker's progress
    files (before the stage runs again)."""
    if not fs.is_local(out_dir) or not os.path.isdir(fs.local_path(out_dir)):
        return 0  # object stores write whole objects: nothing half-written to clean
    n = 0
    for root, _dirs, files in os.walk(fs.local_path(out_dir)):
        for name in files:
            if name.startswith(".tmp-") or name.endswith(PROGRESS_SUFFIX):
                os.unlink(os.path.join(root, name))
                n += 1
    return n


def is_done(out_dir: str) -> bool:
    return fs.exists(fs.join(out_dir, SUCCESS))


def read_stage_json(out_dir: str) -> dict[str, Any]:
    return json.loads(fs.read_text(fs.join(out_dir, STAGE_JSON)))


def read_stage_record(out_dir: str) -> StageRecord:
    """A finished stage's ``stage.json`` as its typed record (one line naming the file when it is not one)."""
    url = fs.join(out_dir, STAGE_JSON)
    return StageRecord.from_json(fs.read_text(url), url)


class DocumentStage(StageBase):
    """Base for stages that read the upstream stage's ``part-NNNNN.jsonl.zst`` and write their own.

    Subclasses implement :meth:`keep`, which decides one document (by its position in the shard; it may rewrite the
    document) and returns its removal or None. :meth:`begin_shard` loads per-shard context (a removal list) and
    :meth:`documents` may annotate documents as they stream (scores in batches). This class does the reading,
    writing and the ``docs_in``/``docs_kept`` accounting.
    """

    name: str
    source: str
    input_dir: str
    out_dir: str
    keep_removed = (
        False  # a source's keep_removed: the removed documents are written too (set by the planner)
    )

    def upstream(self, shard: Shard) -> str:
        return fs.join(self.input_dir, shard.records)

    def part_url(self, shard: Shard) -> str:
        return fs.join(self.out_dir, shard.records)

    def has_output(self, shard: Shard) -> bool:
        return fs.exists(self.part_url(shard))

    def begin_shard(self, shard: Shard) -> None:
        pass

    def documents(self, shard: Shard) -> Iterator[dict[str, Any]]:
        from datapipe.io.jsonl import read_records

        return read_records(self.upstream(shard))

    def keep(self, index: int, doc: dict[str, object], stats: StageStats) -> str | None:
        """Decide one document (it may rewrite it): None keeps it, else its removal, a
        :class:`~datapipe.runtime.evidence.Removal` with its evidence (or a plain reason), which the base counts,
        samples and records, as datatrove's filters return theirs. ``stats`` is for the stage's own counters."""
        raise NotImplementedError

    def process_shard(self, shard: Shard, beat: Heartbeat | None = None) -> StageStats:
        from datapipe.io.jsonl import write_records_atomic

        self.setup()
        self.begin_shard(shard)
        stats = StageStats()
        kept = []
        removed = RemovedLog(self.keep_removed)
        for i, doc in enumerate(self.documents(shard)):
            if beat is not None:
                beat.tick(i)
            stats.docs_in += 1
            why = self.keep(i, doc, stats)
            if why is None:
                stats.docs_kept += 1
                stats.chars_out += len(doc["text"])
                stats.observe("kept_chars", len(doc["text"]))
                stats.sample("kept", doc)
                stats.count_language(doc, None)
                kept.append(doc)
            else:
                stats.remove(why)
                stats.sample(why, doc)
                stats.count_language(doc, why)
                removed.add(i, doc, why)
        write_records_atomic(self.part_url(shard), kept)
        removed.write(removed_url(self.out_dir, shard))
        removed.write_documents(self.out_dir, shard)
        return stats

    def finalize(self, shards: list[Shard], stats: list[StageStats]) -> dict[str, object]:
        return {"parts": [s.records for s in shards]}


ConfigT = TypeVar("ConfigT")


@dataclass
class ConfiguredStage(DocumentStage, Generic[ConfigT]):
    """A document stage made from its source's config: what every such stage's constructor takes, in this order
    (``datapipe.orchestrate.registry`` makes each one so), declared once. A subclass adds its ``name`` and its own
    fields, all with defaults."""

    source: str
    config: ConfigT
    input_dir: str
    out_dir: str


GLOBAL_REPORT = "global.json"
GLOBAL_SUCCESS = "_GLOBAL_SUCCESS"


class TwoPhaseStage(DocumentStage):
    """A document stage that needs one pass over all shards first (dedup groups, a global quantile).

    The global phase (run by the engine glue) ends with :meth:`write_global_report`, which writes
    ``global.json`` and then ``_GLOBAL_SUCCESS``; the shard phase then runs like any other stage.
    """

    needs_global = True

    def global_done(self) -> bool:
        return not self.needs_global or fs.exists(fs.join(self.out_dir, GLOBAL_SUCCESS))

    def reset_global(self) -> None:
        """Before a global phase runs (again): drop the decisions an unfinished attempt left, which may be those of
        a components graph that had not converged, so that a shard the new attempt gives no list has none."""
        if not self.global_done():
            fs.remove(fs.join(self.out_dir, "removals"))

    def write_global_report(self, report: dict[str, object]) -> None:
        fs.write_text_atomic(
            fs.join(self.out_dir, GLOBAL_REPORT), json.dumps(report, indent=2, sort_keys=True) + "\n"
        )
        fs.write_text_atomic(fs.join(self.out_dir, GLOBAL_SUCCESS), "")

    def read_global_report(self) -> dict[str, Any]:
        return json.loads(fs.read_text(fs.join(self.out_dir, GLOBAL_REPORT)))
