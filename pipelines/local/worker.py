"""A local engine's worker process: it receives tasks over its pipe and runs each with the functions every engine
calls (``run_shard``, ``finish_stage``, a global phase's task table rows), until the pipe closes.

A task is ``(number, kind, arguments, retired)``: ``kind`` one of :data:`KINDS`; ``retired`` the folders of
stages the build has finished, whose resources this process lets go (an extraction sandbox, models). A stage's
resources load once per process and stage (``Stage.setup``), as a Beam ``DoFn``'s do: the process keeps the
stage object of its first task for the stage and runs later tasks of that kind on it, or the one a ``warm`` task
(a warm-up, :class:`~datapipe.runtime.stage.Warms`) left for them. The answer is
``(number, True, result, peak)`` or ``(number, False, error, peak)`` (``peak``: the process's largest resident
set so far, MiB, for the build log), where ``error`` is a :class:`DatapipeError` as it was
raised (re-made from its message: its class may not pickle) or the failed task's traceback as text.

A shard of a stage that lets the engine guard its items (:class:`~datapipe.runtime.stage.Supervised`: extraction's
pages) marks each item on this process's slot of the launcher's watch (:mod:`datapipe.runtime.watch`); a shard
task run again after its process hung or died on an item carries those items as a third argument.

Ctrl-C is the launcher's: this process ignores SIGINT, and the launcher ends it (SIGTERM) when the build stops.
"""

from __future__ import annotations

import signal
import traceback
from collections.abc import Callable, Mapping, MutableSequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, cast

from datapipe.errors import DatapipeError
from datapipe.runtime.memory import peak_rss_mb
from datapipe.runtime.stage import Stage, Supervised, Warms, finish_stage, run_shard
from datapipe.runtime.watch import Watch

Held = dict[tuple[str, str], Stage]


@dataclass
class _Here:
    """This process's state between tasks: its stages and its slot of the watch."""

    watch: Watch
    held: Held = field(default_factory=dict)


def _held(held: Held, kind: str, stage: Stage) -> Stage:
    """This process's instance of ``stage`` for tasks of ``kind``. A global phase's tasks and the shards' have
    instances of their own, as Beam's two DoFns do: a shard's stage sets itself up after the phase has committed
    (dedup's removal lists), the phase's before."""
    return held.setdefault((stage.out_dir, kind), stage)


def _shard(here: _Here, stage: Stage, shard: Any, failed: Mapping[int, str] | None = None) -> Any:
    stage = _held(here.held, "shard", stage)
    if isinstance(stage, Supervised):
        stage.supervise(here.watch, failed or {})
    stage.setup()
    return run_shard(stage, shard)


def _phase(here: _Here, stage: Stage, spill: object, fn: Callable[..., object], item: object) -> None:
    # no eager setup: a task that needs the stage's resources (signing, scoring) sets them up itself
    fn(_held(here.held, "phase", stage), spill, item)


def _finish(here: _Here, stage: Stage, shards: list[Any], stats: list[Any], record: dict[str, Any]) -> Any:
    return finish_stage(stage, shards, stats, record)


def _warm(here: _Here, stage: Warms, kind: str) -> None:
    """Load, in the instance this process will run the stage's ``kind`` tasks on, what their first would load."""
    held = _held(here.held, kind, cast(Stage, stage))
    cast(Warms, held).warm()


KINDS: dict[str, Callable[..., object]] = {"shard": _shard, "phase": _phase, "finish": _finish, "warm": _warm}


def _release(held: Held, retired: frozenset[str]) -> None:
    for key in [k for k in held if k[0] in retired]:
        held.pop(key).teardown()


def serve(conn: Connection, cells: MutableSequence[float], slot: int) -> None:
    """The worker's loop (the target of its process); ``cells``: the launcher's watch, of which ``slot`` is its."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    here = _Here(Watch(cells, slot))
    held = here.held
    try:
        while True:
            try:
                task = conn.recv()
            except EOFError:  # the launcher is gone
                return
            if task is None:
                return
            number, kind, args, retired = task
            _release(held, retired)
            try:
                result: object = KINDS[kind](here, *args)
                answer = (number, True, result)
            except DatapipeError as e:
                answer = (number, False, DatapipeError(str(e)))
            except BaseException:  # noqa: BLE001 - any failure is the task's answer, the launcher decides
                answer = (number, False, traceback.format_exc())
            conn.send((*answer, peak_rss_mb()))
    finally:
        _release(held, frozenset(key[0] for key in held))
