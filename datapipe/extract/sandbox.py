"""Run an extraction function in a child process with a per-document time limit.

A pathological page (deeply nested markup, a parser bug) must not stall or kill a worker. Extraction therefore runs
in a long-lived child process; documents are sent in batches (so the cost of crossing processes is paid per batch,
not per page) and results come back one by one. When a result takes longer than the limit, the child is killed
and restarted, that document is marked as timed out, and the rest of the batch goes to the new child. A child that
dies (a crash in native code) marks its current document as failed the same way; one that died while idle (killed
from outside) is replaced before the next batch.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from datapipe.runtime.child import Child


@dataclass(frozen=True)
class Failed:
    """Why a document produced no text: ``timeout``, ``crash`` or ``error``."""

    reason: str
    detail: str = ""


READY = "ready"
# A fresh child's imports and warm-up may take this long (a busy machine, a cold disk) before its first item: not
# counted against any document's time limit. A restart after a timeout used to spend the next page's 1 s limit on
# importing Trafilatura, and removed a good page as extract/timeout when the machine was busy.
START_S = 120.0


def _child(conn, fn: Callable[[Any], Any], warmup: Any) -> None:
    # the parent decides when this process ends (it closes the pipe); an interrupt meant for the build is not ours
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if warmup is not None:  # what fn loads on its first call (a parser's lazy imports) is loaded before READY
        with contextlib.suppress(Exception):
            fn(warmup)
    conn.send(READY)
    while True:
        try:
            batch = conn.recv()
        except EOFError:
            return
        if batch is None:
            return
        for item in batch:
            try:
                out: Any = fn(item)
            except Exception as e:  # the document fails, the worker goes on
                out = Failed("error", f"{type(e).__name__}: {e}"[:500])
            conn.send(out)


class Sandbox:
    """``run(items)`` returns ``fn(item)`` or a :class:`Failed` for each item, in order."""

    def __init__(self, fn: Callable[[Any], Any], timeout_s: float, warmup: Any = None) -> None:
        self.fn = fn
        self.timeout_s = timeout_s
        self.warmup = warmup  # an item fn is called on once in each new child, before its time limits apply
        self._starting = False  # a child started whose READY has not been read
        self._proc: Child | None = None
        self._conn: Connection | None = None
        self.restarts = 0

    def start(self) -> None:
        """Start the child now (it is started on the first batch otherwise): its imports then overlap whatever the
        caller does before that batch, and are not counted against the first document's time limit."""
        if self._proc is None:
            self._start()

    def _start(self) -> None:
        # a process group of its own: a Ctrl-C at the terminal reaches the build, never this child (datapipe.runtime.child)
        self._proc = Child(_child, (self.fn, self.warmup))
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
        self._proc = self._conn = None
        self._starting = False
        self.restarts += 1

    def run(self, items: list[Any]) -> list[Any]:
        results: list[Any] = []
        pending = list(items)
        while pending:
            fresh = self._proc is None
            if fresh:
                self._start()
            assert self._conn is not None
            try:
                if self._starting and not self._ready():
                    raise OSError("the extraction process did not start")
                self._conn.send(pending)
            except OSError:  # the process died while idle (the OOM killer, say), or could not start
                self._kill()
                # a new process that cannot take a batch: fail one document rather than loop forever
                if fresh:
                    results.append(Failed("crash", "the extraction process did not start"))
                    pending = pending[1:]
                continue
            for k in range(len(pending)):
                try:
                    ready = self._conn.poll(self.timeout_s)
                    out = self._conn.recv() if ready else Failed("timeout", f"> {self.timeout_s} s")
                except (EOFError, OSError):
                    out = Failed("crash", "the extraction process died")
                    ready = False
                results.append(out)
                if not ready:
                    self._kill()
                    pending = pending[k + 1 :]
                    break
            else:
                pending = []
        return results

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
        self._proc = self._conn = None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
