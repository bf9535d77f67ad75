"""Run an extraction function in a child process with a per-document time limit.

A pathological page (deeply nested markup, a parser bug) must not stall or kill a worker. Extraction therefore runs
in a long-lived child process; documents are sent in batches and their results come back as one message a batch,
so crossing processes costs per batch, not per page. When a document runs longer than the limit, the child is
killed and restarted, that document is marked as timed out, and the rest of the batch goes to the new child
(documents it had finished but not yet sent are run again: extraction is a pure function). A child that dies (a
crash in native code) marks its current document as failed the same way; one that died while idle (killed from
outside) is replaced before the next batch.

Which document is running, and since when, the parent reads from 16 bytes both processes map (:class:`_Progress`),
written by the child before each document: the parent sleeps until that document's deadline or the batch's
message, whichever comes first. Why: with a message per page the parent woke for every page. Half the e2e
crawl's pages (2,628) through one sandbox, alone on the machine, best of three: 0.07 + 1.37 -> 0.04 + 1.30 CPU s
(parent + child); the whole 1x e2e build, four alternating runs each, 16.47 -> 16.27 CPU s, where four processes
share two cores and each wake-up may also take a core from the other worker.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from datapipe.runtime.child import Child
from datapipe.runtime.watch import CRASH, TIMEOUT


@dataclass(frozen=True)
class Failed:
    """Why a document produced no text: ``timeout``, ``crash`` or ``error``."""

    reason: str
    detail: str = ""

    @classmethod
    def watched(cls, reason: str, timeout_s: float) -> Failed:
        """A document that ran past ``timeout_s`` (:data:`~datapipe.runtime.watch.TIMEOUT`) or died with its process
        (:data:`~datapipe.runtime.watch.CRASH`), as whoever watched it records it: this sandbox or an engine."""
        if reason == TIMEOUT:
            return cls(TIMEOUT, f"> {timeout_s} s")
        return cls(CRASH, "the extraction process died")

    @classmethod
    def raised(cls, e: Exception) -> Failed:
        return cls("error", f"{type(e).__name__}: {e}"[:500])


READY = "ready"
# A fresh child's imports and warm-up may take this long (a busy machine, a cold disk) before its first item: not
# counted against any document's time limit. A restart after a timeout used to spend the next page's 1 s limit on
# importing Trafilatura, and removed a good page as extract/timeout when the machine was busy.
START_S = 120.0


class _Progress:
    """How many documents the child has started, and when it started the last one (``time.monotonic``, one clock
    for every process of the machine), in a file both processes map. Each is one aligned 8-byte store, so a reader
    never sees half of one. The child writes the time before the count; where a processor shows the two stores out
    of order, the parent reads a pair mid-update at worst, and it calls time only when the pair it read before
    sleeping is the pair it reads after."""

    def __init__(self, fd: int) -> None:
        self._map = mmap.mmap(fd, 16)
        self._cells = memoryview(self._map).cast("d")  # [count, started]: native doubles, stored whole

    def start(self, count: int) -> None:
        self._cells[1] = time.monotonic()
        self._cells[0] = count

    def read(self) -> tuple[int, float]:
        return int(self._cells[0]), float(self._cells[1])


def _child(conn, fn: Callable[[object], object], warmup: object, progress_fd: int) -> None:
    # the parent decides when this process ends (it closes the pipe); an interrupt meant for the build is not ours
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    progress = _Progress(progress_fd)
    if warmup is not None:  # what fn loads on its first call (a parser's lazy imports) is loaded before READY
        with contextlib.suppress(Exception):
            fn(warmup)
    conn.send(READY)
    started = 0
    while True:
        try:
            batch = conn.recv()
        except EOFError:
            return
        if batch is None:
            return
        outs: list[object] = []
        for item in batch:
            started += 1
            progress.start(started)
            try:
                out: object = fn(item)
            except Exception as e:  # the document fails, the worker goes on
                out = Failed.raised(e)
            outs.append(out)
        try:
            conn.send(outs)
        except (pickle.PicklingError, TypeError, AttributeError):  # pickling fails before a byte is written
            conn.send([_picklable(out) for out in outs])


def _picklable(out: object) -> object:
    """``out``, or the document's failure when its result cannot cross to the parent."""
    try:
        pickle.dumps(out)
    except (pickle.PicklingError, TypeError, AttributeError) as e:
        return Failed("error", f"the result cannot be pickled: {type(e).__name__}: {e}"[:500])
    return out


def _shared_memory(size: int) -> int:
    """A descriptor of ``size`` zeroed bytes a child can map: anonymous memory where the system has it (Linux),
    else an unnamed temporary file."""
    if hasattr(os, "memfd_create"):
        with contextlib.suppress(OSError):
            fd = os.memfd_create("datapipe-sandbox-progress", os.MFD_CLOEXEC)
            os.ftruncate(fd, size)
            return fd
    with tempfile.TemporaryFile() as f:
        f.truncate(size)
        return os.dup(f.fileno())


class Sandbox:
    """``run(items)`` returns ``fn(item)`` or a :class:`Failed` for each item, in order."""

    def __init__(self, fn: Callable[[Any], Any], timeout_s: float, warmup: Any = None) -> None:
        self.fn = fn
        self.timeout_s = timeout_s
        self.warmup = warmup  # an item fn is called on once in each new child, before its time limits apply
        self._starting = False  # a child started whose READY has not been read
        self._proc: Child | None = None
        self._conn: Connection | None = None
        self._progress: _Progress | None = None
        self.restarts = 0

    def start(self) -> None:
        """Start the child now (it is started on the first batch otherwise): its imports then overlap whatever the
        caller does before that batch, and are not counted against the first document's time limit."""
        if self._proc is None:
            self._start()

    def _start(self) -> None:
        fd = _shared_memory(16)
        try:
            self._progress = _Progress(fd)
            # a process group of its own: a Ctrl-C at the terminal reaches the build, never this child
            # (datapipe.runtime.child)
            self._proc = Child(_child, (self.fn, self.warmup, fd), pass_fds=(fd,))
        finally:
            os.close(fd)  # each side's map holds its own reference
        self._conn = self._proc.conn
        self._starting = True

    def _ready(self) -> bool:
        """Wait for a new child's READY (its imports and warm-up done); False if it died or hung first."""
        assert self._conn is not None
        self._starting = False
        try:
            return bool(self._conn.poll(START_S)) and self._conn.recv() == READY
        except (EOFError, OSError):
            return False

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join()
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = self._progress = None
        self._starting = False
        self.restarts += 1

    def run(self, items: list[Any]) -> list[Any]:
        results: list[object] = [None] * len(items)
        todo = list(range(len(items)))  # the items without a result, in order
        while todo:
            fresh = self._proc is None
            if fresh:
                self._start()
            assert self._conn is not None and self._progress is not None
            try:
                if self._starting and not self._ready():
                    raise OSError("the extraction process did not start")
                before, _ = self._progress.read()
                self._conn.send([items[i] for i in todo])
            except OSError:  # the process died while idle (the OOM killer, say), or could not start
                self._kill()
                # a new process that cannot take a batch: fail one document rather than loop forever
                if fresh:
                    results[todo.pop(0)] = Failed("crash", "the extraction process did not start")
                continue
            outs, failed_at, why = self._wait(len(todo), before)
            if outs is not None:
                for i, out in zip(todo, outs, strict=True):
                    results[i] = out
                todo = []
            else:  # the results the child had not sent are lost with it: those items go to the next child
                self._kill()
                results[todo.pop(failed_at)] = why
        return results

    def _wait(self, n: int, before: int) -> tuple[list[object] | None, int, Failed | None]:
        """The batch's results, or (None, the index of the item that ran out of time or died with the child, why)."""
        assert self._conn is not None and self._progress is not None
        sent = time.monotonic()
        while True:
            count, started = self._progress.read()
            current = max(count - before - 1, 0)  # the item the child is on (the first, until it starts it)
            since = started if count > before else sent
            try:
                if self._conn.poll(max(since + self.timeout_s - time.monotonic(), 0.0)):
                    outs = self._conn.recv()
                    return outs, 0, None
            except (EOFError, OSError):
                current = max(self._progress.read()[0] - before - 1, 0)
                return None, min(current, n - 1), Failed.watched(CRASH, self.timeout_s)
            unchanged = self._progress.read() == (count, started)
            if unchanged:  # no new item began while we waited: this one is over time
                return None, current, Failed.watched(TIMEOUT, self.timeout_s)

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.send(None)
        if self._proc is not None:
            self._proc.join(timeout=5)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join()
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = self._progress = None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
