"""How far a worker is into a shard it has not committed yet: ``part-NNNNN.progress.json`` in the stage folder.

The launcher's progress display (``datapipe/orchestrate/progress.py``) reads committed shards from their
``part-NNNNN.stats.json``; a shard of 10^4 web pages takes minutes, so without word from inside a shard the display
would stand still and then jump. A worker therefore rewrites this small file (atomically) at most every
``interval_s`` seconds while it works: documents so far, input bytes read so far (where the reader can tell) and
the wall-clock time it began. It is a file, not a message, so that it works for every runner whose workers share
the output's file system (local, Slurm, Dataflow's workers writing to GCS: at the default 5 s there, a write every
5 s per worker). ``run_shard`` removes it when the shard commits, and a killed worker's leftover is removed as a
temporary on the rerun; it never reaches a finished stage folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable

from datapipe.io import fs

SUFFIX = ".progress.json"


def interval_s(url: str) -> float:
    """Seconds between a worker's writes: ``DATAPIPE_HEARTBEAT_S``, else 1 s on a local disk and 5 s elsewhere."""
    raw = os.environ.get("DATAPIPE_HEARTBEAT_S")
    if raw:
        return float(raw)
    return 1.0 if fs.is_local(url) else 5.0


def progress_url(out_dir: str, part: str) -> str:
    return fs.join(out_dir, f"{part}{SUFFIX}")


class Heartbeat:
    """A shard's progress, written now and then from the worker's own loop (no thread: a tick is one clock read
    unless a write is due)."""

    def __init__(
        self,
        out_dir: str,
        part: str,
        position: Callable[[], int] | None = None,
        started: float | None = None,
    ) -> None:
        self.url = progress_url(out_dir, part)
        self.every = interval_s(out_dir)
        self.position = position  # input bytes read so far, when the reader can tell
        self.started = time.time() if started is None else started
        self.next = time.monotonic()  # the first tick writes: the display sees the shard start

    def tick(self, docs: int) -> None:
        now = time.monotonic()
        if now < self.next:
            return
        self.next = now + self.every
        record = {"started": self.started, "docs": docs, "bytes": self._bytes(), "at": time.time()}
        with contextlib.suppress(
            OSError
        ):  # progress is a courtesy: a full disk must not fail the shard over it
            fs.write_text_atomic(self.url, json.dumps(record) + "\n")

    def _bytes(self) -> int | None:
        if self.position is None:
            return None
        try:
            return int(self.position())
        except (OSError, ValueError):  # a stream closed or not seekable
            return None

    def end(self) -> None:
        """The shard committed: its ``stats.json`` says the rest."""
        with contextlib.suppress(OSError):
            fs.remove(self.url)


def began(out_dir: str, part: str) -> float | None:
    """When a shard's work began according to a heartbeat already there: a first phase's (dedup's signing, the
    quality cut-off's scoring), which ran before the global phase; None when there is none."""
    with contextlib.suppress(OSError, ValueError, TypeError):
        return float(json.loads(fs.read_text(progress_url(out_dir, part)))["started"])
    return None
