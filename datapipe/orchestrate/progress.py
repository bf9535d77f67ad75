"""Progress of running stages, read from what their workers write: works the same for every runner.

A worker commits a shard by writing ``part-NNNNN.stats.json``, and while it works on one it rewrites
``part-NNNNN.progress.json`` every second or so (``datapipe/runtime/heartbeat.py``: documents so far, input bytes read,
when it began). A thread in the launching process reads both and shows, per running stage: shards committed,
documents done, docs/s since the stage's first shard began, the share done and an ETA. The share is measured where
the total is known before the work: the first stage's input bytes read out of its files' sizes; a later stage's
documents out of what the stage before it kept for those shards (exact, once that stage committed them), else
the share of shards.

On a terminal: a live display with one line per running stage (``rich``), finished stages printed above it. Not on
a terminal (CI, logs, Dataflow launchers): the same lines as plain text every ``interval_s`` seconds. The same
counts reach Beam's metrics counters from the workers (``pipelines/beam/stage.py``), so they also show in the
Dataflow UI.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from datapipe.io import fs
from datapipe.io.shards import Shard
from datapipe.runtime.heartbeat import SUFFIX as PROGRESS_SUFFIX
from datapipe.runtime.stage import STATS_SUFFIX, TIMING_SUFFIX, is_done


@dataclass(frozen=True)
class Snapshot:
    """A stage's progress at one poll."""

    committed: int  # shards
    shards: int
    docs: int  # documents read, committed shards and those under way
    bytes_in: int  # input bytes of committed shards (as their stats say)
    share: float | None  # of the stage's work done, when measurable
    started: float | None  # wall-clock time its first shard began
    running: int  # shards under way


def _read_json(url: str) -> dict[str, Any] | None:
    try:
        doc = json.loads(fs.read_text(url))
    except (ValueError, OSError):
        return None  # being replaced right now, or just removed: next poll
    return doc if isinstance(doc, dict) else None


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class StageProgress:
    """The progress of one stage, polled from its folder (and its upstream stage's, for the expected documents)."""

    def __init__(self, label: str, out_dir: str, shards: list[Shard], upstream: str | None = None) -> None:
        self.label, self.out_dir, self.shards, self.upstream = label, out_dir, shards, upstream
        self._committed: dict[str, tuple[int, int]] = {}  # part -> (docs_in, bytes_in)
        self._expected: dict[str, int] = {}  # part -> documents the upstream stage kept for it
        self._sizes: dict[str, int] | None = None  # part -> input file size (first stage)
        self._started: float | None = None
        # shards an earlier run committed: reused, so neither their start nor their documents are this run's time
        # and rate (a resumed build of 20.6 s reported stages of 40.9 s, from the first run's first shard on)
        names = self._listing()
        self.reused = {s.part for s in shards if f"{s.part}{STATS_SUFFIX}" in names}

    def _listing(self) -> set[str]:
        return {u.rstrip("/").split("/")[-1] for u in fs.glob(fs.join(self.out_dir, "part-*.json"))}

    def _size(self, part: str) -> int:
        if self._sizes is None:
            self._sizes = {}
            for s in self.shards:
                try:
                    self._sizes[s.part] = fs.size(s.url)
                except Exception:  # noqa: BLE001 - any file system's failure (an HTTP URL not fetched yet): no size
                    self._sizes[s.part] = 0
        return self._sizes.get(part, 0)

    def _expected_docs(self, part: str) -> int | None:
        if self.upstream is None:
            return None
        if part not in self._expected:
            doc = _read_json(fs.join(self.upstream, f"{part}{STATS_SUFFIX}"))
            if doc is None or "stats" not in doc:
                return None
            self._expected[part] = int(doc["stats"].get("docs_kept", 0))
        return self._expected[part]

    def _began(self, when: float | None) -> None:
        if when is not None and (self._started is None or when < self._started):
            self._started = when

    def poll(self) -> Snapshot:
        names = self._listing()
        under_way: dict[str, dict[str, Any]] = {}
        for shard in self.shards:
            part = shard.part
            if part not in self._committed and f"{part}{STATS_SUFFIX}" in names:
                doc = _read_json(fs.join(self.out_dir, f"{part}{STATS_SUFFIX}"))
                if doc is not None and "stats" in doc:
                    stats = doc["stats"]
                    self._committed[part] = (int(stats["docs_in"]), int(stats.get("bytes_in", 0)))
                    if part not in self.reused and f"{part}{TIMING_SUFFIX}" in names:
                        timing = _read_json(fs.join(self.out_dir, f"{part}{TIMING_SUFFIX}")) or {}
                        self._began(timing.get("started"))
                    continue
            if part not in self._committed and f"{part}{PROGRESS_SUFFIX}" in names:
                beat = _read_json(fs.join(self.out_dir, f"{part}{PROGRESS_SUFFIX}"))
                if beat is not None:
                    under_way[part] = beat
                    self._began(beat.get("started"))
        docs = sum(d for p, (d, _) in self._committed.items() if p not in self.reused) + sum(
            int(b.get("docs", 0)) for b in under_way.values()
        )
        return Snapshot(
            committed=len(self._committed),
            shards=len(self.shards),
            docs=docs,
            bytes_in=sum(b for _, b in self._committed.values()),
            share=self._share(under_way),
            started=self._started,
            running=len(under_way),
        )

    def _share(self, under_way: dict[str, dict[str, Any]]) -> float | None:
        total = len(self.shards)
        if not total:
            return None
        if self.upstream is None:  # the first stage: input bytes read
            sizes = sum(self._size(s.part) for s in self.shards)
            if sizes <= 0:
                return len(self._committed) / total
            done = sum(self._size(p) for p in self._committed)
            for part, beat in under_way.items():
                read = beat.get("bytes")
                if isinstance(read, int):
                    done += min(read, self._size(part))
            return min(1.0, done / sizes)
        expected = [self._expected_docs(s.part) for s in self.shards]
        if any(e is None for e in expected):
            return len(self._committed) / total
        want = sum(e for e in expected if e is not None)
        if want <= 0:
            return len(self._committed) / total
        done = sum(d for d, _ in self._committed.values())
        done += sum(min(int(b.get("docs", 0)), self._expected[p]) for p, b in under_way.items())
        return min(1.0, done / want)

    def _reused_share(self) -> float:
        """The share of the stage's work an earlier run committed (measured as :meth:`_share` measures)."""
        if not self.reused or not self.shards:
            return 0.0
        if self.upstream is None:
            sizes = sum(self._size(s.part) for s in self.shards)
            if sizes > 0:
                return sum(self._size(p) for p in self.reused) / sizes
        else:
            expected = [self._expected_docs(s.part) for s in self.shards]
            want = sum(e for e in expected if e is not None)
            if want > 0 and all(e is not None for e in expected):
                return sum(self._expected[p] for p in self.reused) / want
        return len(self.reused) / len(self.shards)

    def line(self, snap: Snapshot | None = None, now: float | None = None) -> str:
        snap = snap or self.poll()
        now = time.time() if now is None else now
        elapsed = now - snap.started if snap.started is not None else None
        rate = f"{snap.docs / elapsed:,.0f} docs/s" if elapsed and elapsed > 0 else "- docs/s"
        ours = snap.share - self._reused_share() if snap.share is not None else None  # this run's part
        if snap.share is not None and ours is not None and elapsed and ours > 0 and snap.share < 1:
            eta = f"ETA {_duration(elapsed * (1 - snap.share) / ours)}"
        else:
            eta = "ETA ?" if snap.committed < snap.shards else "done"
        share = f"{100 * snap.share:5.1f}%" if snap.share is not None else "    ?"
        return (
            f"{self.label} {snap.committed}/{snap.shards} shards  {snap.docs:,} docs  {rate}  {share}  {eta}"
            + (f"  ({snap.running} under way)" if snap.running else "")
            + (f"  ({len(self.reused)} reused)" if self.reused else "")
        )

    def own_seconds(self, now: float | None = None) -> float | None:
        """Seconds since the stage's first shard began: its own time, not the pipeline's or the stage before it."""
        self.poll()
        if self._started is None:
            return None
        return max(0.0, (time.time() if now is None else now) - self._started)


class WaveProgress:
    """Several stages running in one pipeline (a wave): a line per stage under way, and ``on_done(i, seconds)``
    called as each stage's ``_SUCCESS`` appears, in the order they finish, with the stage's own time (from its
    first shard's start; since the previous stage finished when no start was seen). Stages a wave finished but this
    thread did not see in time are reported, in their listed order, when the wave ends.
    """

    def __init__(
        self,
        stages: list[tuple[str, str, list[Shard]]] | list[tuple[str, str, list[Shard], str | None]],
        on_done: Callable[[int, float], None],
        stream: TextIO | None = None,
        interval_s: float | None = None,
        tick_s: float = 0.2,
    ) -> None:
        self.progress = [StageProgress(*s) for s in stages]
        self.on_done = on_done
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty()
        default = 0.5 if self.tty else float(os.environ.get("DATAPIPE_PROGRESS_S", "30"))
        self.interval_s = interval_s if interval_s is not None else default
        self.tick_s = tick_s
        self._pending = list(range(len(self.progress)))
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last = time.monotonic()
        self._live: Any = None
        self.shown = threading.Event()  # set after each display: tests wait on it, not on a sleep

    def check(self) -> None:
        """Report every stage that has finished since the last check."""
        with self._lock:
            for i in [i for i in self._pending if is_done(self.progress[i].out_dir)]:
                now = time.monotonic()
                self._pending.remove(i)
                own = self.progress[i].own_seconds()
                self.on_done(i, own if own is not None else now - self._last)
                self._last = now

    def lines(self) -> list[str]:
        """A line per stage under way (a shard begun or committed, not finished)."""
        out = []
        for i in self._pending:
            snap = self.progress[i].poll()
            if snap.started is not None or snap.committed or snap.running:
                out.append(self.progress[i].line(snap))
        return out

    def _show(self) -> None:
        lines = self.lines()
        with self._lock:
            if self._live is not None:
                from rich.text import Text

                self._live.update(Text("\n".join(lines)), refresh=True)
            else:
                for line in lines:
                    self.stream.write(line + "\n")
                self.stream.flush()
        self.shown.set()

    def _run(self) -> None:
        next_line = time.monotonic() + self.interval_s
        while not self._stop.wait(self.tick_s):
            self.check()
            if time.monotonic() >= next_line:
                next_line = time.monotonic() + self.interval_s
                self._show()

    def __enter__(self) -> WaveProgress:
        self._last = time.monotonic()
        if self.tty:
            from rich.console import Console
            from rich.live import Live

            # what the build prints meanwhile (a stage's "ran in" line) goes above the live lines
            self._live = Live(console=Console(file=self.stream), auto_refresh=False, transient=True)
            self._live.start()
        self._thread = threading.Thread(target=self._run, name="datapipe-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.check()
        if self._live is not None:
            self._live.stop()
            self._live = None
