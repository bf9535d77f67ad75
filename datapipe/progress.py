"""Progress of a running stage, read from what it has committed: works the same for every runner.

Workers commit a shard by writing ``part-NNNNN.stats.json``; a thread in the launching process polls those markers
and sums their counts. On a terminal it redraws one line (shards, documents, bytes, docs/s, ETA from the share of
shards done); elsewhere (CI, Dataflow launchers, logs) it prints a plain line every ``interval_s`` seconds. The
same numbers reach Beam's metrics counters from the workers (``pipelines/beam_stage.py``), so they also show in
the Dataflow UI.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import TextIO

from datapipe.io import fs
from datapipe.io.shards import Shard
from datapipe.stage import stats_path


class StageProgress:
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
            text = self.line()
            if self.tty:
                self.stream.write("\r\x1b[2K" + text)
            else:
                self.stream.write(text + "\n")
            self.stream.flush()

    def __enter__(self) -> StageProgress:
        self._thread = threading.Thread(target=self._run, name="datapipe-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.tty:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
