"""One ``datapipe train`` per run folder at a time.

Two trainers in one folder both ran to the end: ``metrics.jsonl`` got every step twice and both wrote the same
checkpoints. ``<run>/train.lock`` is now held with ``flock`` for the trainer's whole life; it holds the holder's
pid, host and start time (JSON) so that a second trainer refuses with one line naming it. The kernel drops the
lock when its process dies however it dies (SIGKILL included), so a file left behind by a dead trainer is free to
take: it is taken over with a one-line notice. A clean end (or an exception, or Ctrl-C) removes the file.
"""

from __future__ import annotations

import datetime
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

from datapipe.errors import DatapipeError

LOCK = "train.lock"


class RunFolderInUse(DatapipeError):
    pass


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _holder(held: dict[str, Any]) -> str:
    return f"pid {held.get('pid', '?')} on host {held.get('host', '?')} since {held.get('since', '?')}"


class RunLock:
    def __init__(self, run_dir: str, say: Callable[[str], None] = _say) -> None:
        self.run_dir, self.path, self.say = run_dir, os.path.join(run_dir, LOCK), say
        self._fd: int | None = None

    def _same_file(self, fd: int) -> bool:
        """The locked file is still the one at ``path`` (not one its holder removed after we opened it)."""
        try:
            here, ours = os.stat(self.path), os.fstat(fd)
        except FileNotFoundError:
            return False
        return (here.st_dev, here.st_ino) == (ours.st_dev, ours.st_ino)

    def _read(self) -> dict[str, Any]:
        """The holder's record; a holder that has just taken the lock may not have written it yet."""
        for _ in range(20):
            try:
                with open(self.path, encoding="utf-8") as f:
                    held = json.loads(f.read())
                if isinstance(held, dict):
                    return held
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        return {}

    def acquire(self) -> None:
        os.makedirs(self.run_dir, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise RunFolderInUse(
                    f"run folder {self.run_dir} is in use by another datapipe train ({_holder(self._read())}); "
                    "wait for it to end or pass another --run-dir"
                ) from None
            except OSError as e:  # a file system without locks: say so rather than refuse to train
                os.close(fd)
                self.say(
                    f"warning: {self.path}: cannot lock ({e.strerror}); nothing stops a second trainer here"
                )
                return
            if self._same_file(fd):
                break
            os.close(fd)  # its holder removed it between our open and our lock: lock the new one
        left = os.read(fd, 1 << 16)
        if left.strip():
            try:
                held = json.loads(left)
            except ValueError:
                held = {}
            if not isinstance(held, dict):
                held = {}
            self.say(
                f"train: took over the lock of {self.run_dir} left by {_holder(held)} "
                "(that process is gone: its lock was free)"
            )
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        if self._same_file(self._fd):  # removed while still locked: a waiter that opened it retries
            os.unlink(self.path)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
