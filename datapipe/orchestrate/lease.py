"""One build per output folder at a time: a lease file with a heartbeat (as Marin's executor does for its steps).

``<output>/_LEASE.json`` names the holder (host, pid, run id) and the time of its last heartbeat; a background
thread refreshes it every ``heartbeat_s``. A second build finds a fresh lease and either waits for it to go
(``wait_s``) or refuses with a message naming the holder. A lease whose heartbeat is older than ``ttl_s`` belongs to
a build that died without cleaning up (SIGKILL, a lost machine): it is taken over, with a warning.

Creating the lease is atomic on local disks (``O_EXCL``). On object stores it is write-then-read-back, which
narrows the race to the store's consistency window; the per-shard commit protocol keeps outputs correct even then,
the lease only keeps two builds from doing the same work side by side.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from typing import Any

from datapipe.errors import DatapipeError
from datapipe.io import fs

LEASE = "_LEASE.json"
log = logging.getLogger("datapipe.orchestrate.lease")


class LeaseHeld(DatapipeError):
    pass


def _dead_here(held: dict[str, Any]) -> bool:
    """The holder ran on this machine and its process is gone (killed): no need to wait out its TTL."""
    if held.get("host") != socket.gethostname() or not isinstance(held.get("pid"), int):
        return False
    try:
        os.kill(held["pid"], 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class OutputLease:
    def __init__(
        self, output: str, *, wait_s: float = 0.0, ttl_s: float = 60.0, heartbeat_s: float = 10.0
    ) -> None:
        if heartbeat_s >= ttl_s:
            raise ValueError("the heartbeat must be shorter than the lease's time to live")
        self.output, self.url = output, fs.join(output, LEASE)
        self.wait_s, self.ttl_s, self.heartbeat_s = wait_s, ttl_s, heartbeat_s
        self.run_id = uuid.uuid4().hex
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- the lease record ----------------------------------------------------------------------------------
    def _record(self) -> dict[str, object]:
        return {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "run_id": self.run_id,
            "heartbeat": time.time(),
            "ttl_s": self.ttl_s,
        }

    def _read(self) -> dict[str, Any] | None:
        try:
            return json.loads(fs.read_text(self.url))
        except FileNotFoundError:
            return None
        except (ValueError, OSError):  # half-written by a holder killed mid-write: treat as stale
            return {"heartbeat": 0.0}

    def _create(self) -> bool:
        """Create the lease if there is none; True when this run now holds it."""
        data = json.dumps(self._record()).encode()
        if fs.is_local(self.url):
            path = fs.local_path(self.url)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            return True
        if fs.exists(self.url):
            return False
        fs.write_bytes_atomic(self.url, data)
        return (self._read() or {}).get("run_id") == self.run_id

    def _take_over(self, stale: dict[str, Any]) -> bool:
        age = time.time() - float(stale.get("heartbeat", 0.0))
        log.warning(
            "%s: taking over a stale lease (pid %s on %s, no heartbeat for %.0fs)",
            self.output,
            stale.get("pid", "?"),
            stale.get("host", "?"),
            age,
        )
        fs.write_bytes_atomic(self.url, json.dumps(self._record()).encode())
        time.sleep(0.05)
        return (self._read() or {}).get("run_id") == self.run_id

    # --- acquire / release ---------------------------------------------------------------------------------
    def acquire(self) -> None:
        deadline = time.monotonic() + self.wait_s
        announced = False
        while True:
            if self._create():
                break
            held = self._read()
            if held is None:
                continue  # released between our two looks
            age = time.time() - float(held.get("heartbeat", 0.0))
            if (age > float(held.get("ttl_s", self.ttl_s)) or _dead_here(held)) and self._take_over(held):
                break
            holder = f"pid {held.get('pid', '?')} on {held.get('host', '?')}, last heartbeat {age:.0f}s ago"
            if time.monotonic() >= deadline:
                raise LeaseHeld(
                    f"{self.output}: another build is writing here ({holder}); wait for it to finish or pass "
                    f"--wait-lease SECONDS (a lease with no heartbeat for {self.ttl_s:.0f}s is taken over)"
                )
            if not announced:
                print(f"waiting for another build to release {self.output} ({holder})", flush=True)
                announced = True
            time.sleep(min(1.0, max(0.05, deadline - time.monotonic())))
        if fs.is_local(self.url):  # a heartbeat write cut short by a kill leaves its temporary file
            folder = os.path.dirname(fs.local_path(self.url))
            for name in os.listdir(folder):
                if name.startswith(f".tmp-{LEASE}."):
                    os.unlink(os.path.join(folder, name))
        self._thread = threading.Thread(target=self._beat, name="datapipe-lease", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            held = self._read()
            if held is not None and held.get("run_id") not in (None, self.run_id):
                log.error(
                    "%s: the lease was taken over by pid %s; stopping heartbeats",
                    self.output,
                    held.get("pid"),
                )
                return
            fs.write_bytes_atomic(self.url, json.dumps(self._record()).encode())

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        held = self._read()
        if held is not None and held.get("run_id") == self.run_id:
            fs.remove(self.url)

    def __enter__(self) -> OutputLease:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
