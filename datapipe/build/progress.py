"""Progress of a running stage, read from what it has committed: works the same for every runner.

Workers commit a shard by writing ``part-NNNNN.stats.json``; a thread in the launching process polls those markers
and sums their counts. On a terminal it redraws one line (shards, documents, bytes, docs/s, ETA from the share of
shards done); elsewhere (CI, Dataflow launchers, logs) it prints a plain line every ``interval_s`` seconds. The
same numbers reach Beam's metrics counters from the workers (``pipelines/beam/stage.py``), so they also show in
the Dataflow UI.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

from datapipe.io import fs
from datapipe.io.shards import Shard
from datapipe.stage import is_done, stats_path


def _show(stream: TextIO, tty: bool, text: str) -> None:
    """Redraw the one progress line on a terminal; elsewhere, print it as a line of its own."""
    stream.write("\r\x1b[2K" + text if tty else text + "\n")
    stream.flush()


class _Ticker:
    """A daemon thread that runs ``self._run`` from ``_launch`` until ``_halt`` (both progress views use it)."""

    _stop: threading.Event
    _thread: threading.Thread | None

    def _run(self) -> None:
        raise NotImplementedError

    def _launch(self) -> None:
        self._thread = threading.Thread(target=self._run, name="datapipe-progress", daemon=True)
        self._thread.start()

    def _halt(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


class StageProgress(_Ticker):
    def __init__(
        self,
        label: str,
        out_dir: str,
        shards: list[Shard],
        stream: TextIO | None = None,
        interval_s: float | None = None,
    ) -> None:
        self.label, self.out_dir, self.shards = label, out_dir, shards
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty()
        default = 0.5 if self.tty else float(os.environ.get("DATAPIPE_PROGRESS_S", "30"))
        self.interval_s = interval_s if interval_s is not None else default
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seen: dict[str, tuple[int, int]] = {}  # marker -> (docs_in, bytes_in)
        self.t0 = time.monotonic()

    def poll(self) -> tuple[int, int, int]:
        """(shards committed, documents in, bytes in) so far."""
        for shard in self.shards:
            marker = stats_path(self.out_dir, shard)
            if marker in self._seen or not fs.exists(marker):
                continue
            try:
                stats = json.loads(fs.read_text(marker))["stats"]
            except (ValueError, KeyError, OSError):
                continue  # being replaced right now: next poll
            self._seen[marker] = (int(stats["docs_in"]), int(stats.get("bytes_in", 0)))
        docs = sum(d for d, _ in self._seen.values())
        size = sum(b for _, b in self._seen.values())
        return len(self._seen), docs, size

    def line(self) -> str:
        done, docs, size = self.poll()
        elapsed = max(time.monotonic() - self.t0, 1e-6)
        total = len(self.shards)
        eta = f"ETA {elapsed / done * (total - done):.0f}s" if 0 < done < total else "ETA ?"
        return (
            f"{self.label} {done}/{total} shards  {docs:,} docs  {size / 2**20:,.1f} MiB  "
            f"{docs / elapsed:,.0f} docs/s  {eta}"
        )

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            _show(self.stream, self.tty, self.line())

    def __enter__(self) -> StageProgress:
        self._launch()
        return self

    def __exit__(self, *exc) -> None:
        self._halt()
        if self.tty:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()


class WaveProgress(_Ticker):
    """Several stages running in one pipeline (a wave): one progress line for those under way, and ``on_done``
    called as each stage's ``_SUCCESS`` appears, in the order they finish, with the seconds since the previous one
    finished (the first also carries the pipeline's start-up). Stages a wave finished but this thread did not see
    in time are reported, in their listed order, when the wave ends.
    """

    def __init__(
        self,
        stages: list[tuple[str, str, list[Shard]]],
        on_done: Callable[[int, float], None],
        stream: TextIO | None = None,
        interval_s: float | None = None,
        tick_s: float = 0.2,
    ) -> None:
        self.progress = [
            StageProgress(label, out, shards, stream, interval_s) for label, out, shards in stages
        ]
        self.on_done = on_done
        self.stream = self.progress[0].stream if self.progress else (stream or sys.stdout)
        self.tty = self.stream.isatty()
        self.interval_s = self.progress[0].interval_s if self.progress else 1.0
        self.tick_s = tick_s
        self._pending = list(range(len(stages)))
        self._started: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last = time.monotonic()
        self._drawn = False

    def _clear(self) -> None:
        if self.tty and self._drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self._drawn = False

    def check(self) -> None:
        """Report every stage that has finished since the last check."""
        with self._lock:
            for i in [i for i in self._pending if is_done(self.progress[i].out_dir)]:
                now = time.monotonic()
                self._pending.remove(i)
                self._clear()
                self.on_done(i, now - self._last)
                self._last = now

    def _running(self) -> str:
        parts = []
        for i in self._pending:
            p = self.progress[i]
            if i not in self._started and p.poll()[0]:  # a shard committed: under way since the last finish
                self._started.add(i)
                p.t0 = self._last
            if i in self._started:
                parts.append(p.line())
        return "  |  ".join(parts)

    def _run(self) -> None:
        next_line = time.monotonic() + self.interval_s
        while not self._stop.wait(self.tick_s):
            self.check()
            if time.monotonic() < next_line:
                continue
            next_line = time.monotonic() + self.interval_s
            text = self._running()
            if not text:
                continue
            with self._lock:
                _show(self.stream, self.tty, text)
                self._drawn = self.tty

    def __enter__(self) -> WaveProgress:
        self._last = time.monotonic()
        self._launch()
        return self

    def __exit__(self, *exc) -> None:
        self._halt()
        self.check()
        with self._lock:
            self._clear()
