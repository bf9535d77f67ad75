"""What a process is working on, for another process that may have to stop it: one item under a time limit.

A stage whose items can hang or kill the process running them (a page that sends the HTML parser into a loop, or
crashes it in native code) guards each item itself when it runs on its own (the extraction sandbox,
:mod:`datapipe.extract.sandbox`, a child process per worker), or, where an engine supervises the processes that run
the stages, marks each item here and lets the engine do it (the local engine: :mod:`pipelines.local.engine`). The
supervisor reads the mark, kills a process still on the same item past its limit, and runs the shard again with that
item recorded as failed (:data:`TIMEOUT`, or :data:`CRASH` for a process that died on it), which is what the sandbox
records for it. Why: the sandbox costs each page a trip to its child and back and each worker a second process; on
the e2e benchmark's build, 0.3-0.8 s of 8.3 s and ~0.6 CPU s (2026-12-05, three runs each, the local engine with
the sandbox and with ``timeout_s: 0``); with the watch instead, 0.05-0.45 s less than with the sandbox (four
alternating runs each), the same bytes.

A mark is four doubles in memory both processes map (a slot of a ``multiprocessing`` shared array):
``[sequence, started, item, limit]``. The sequence is odd while the process is on an item: the item and its start
are written before it turns odd, and nothing is written while it stays odd, so a reader that sees the same odd
sequence before and after reading the rest has a whole mark (each double is one aligned store). ``started`` is
``time.monotonic``, one clock for every process of the machine. A supervisor that looks at the watch every tenth of
the stage's limit (:class:`~datapipe.runtime.stage.Supervised`'s ``item_limit_s``) stops an item within a tenth of
its limit after it, without a message per item.
"""

from __future__ import annotations

import time
from collections.abc import MutableSequence
from dataclasses import dataclass

TIMEOUT = "timeout"  # the item ran past its limit and its process was killed
CRASH = "crash"  # the process died while on the item
FIELDS = 4  # doubles per slot


@dataclass(frozen=True)
class Mark:
    """The item a process is on: since when (``time.monotonic``) and for how long it may run."""

    sequence: int
    item: int
    started: float
    limit: float

    @property
    def deadline(self) -> float:
        return self.started + self.limit


class Watch:
    """Slot ``slot`` of ``cells`` (``FIELDS`` doubles a slot, zeroed): :meth:`enter` and :meth:`leave` in the process
    on the items, :meth:`read` in the one watching it."""

    def __init__(self, cells: MutableSequence[float], slot: int = 0) -> None:
        self._cells = cells
        self._at = slot * FIELDS

    def enter(self, item: int, limit: float) -> None:
        """On ``item`` (a number the stage and the supervisor agree on: a record's place in its shard) from now,
        for at most ``limit`` seconds."""
        c, at = self._cells, self._at
        c[at + 1] = time.monotonic()
        c[at + 2] = item
        c[at + 3] = limit
        c[at] += 1  # odd: the mark is whole

    def leave(self) -> None:
        self._cells[self._at] += 1

    def read(self) -> Mark | None:
        """The item the process is on, or None when it is on none (or was between two writes of a new one)."""
        c, at = self._cells, self._at
        sequence = int(c[at])
        if sequence % 2 == 0:
            return None
        mark = Mark(sequence, int(c[at + 2]), c[at + 1], c[at + 3])
        return mark if int(c[at]) == sequence else None

    def clear(self) -> None:
        """Back to no item (for a new process in the slot of one that died on an item)."""
        self._cells[self._at] = 0.0
