"""Warm worker processes for a local multi-process build: one parent imports the workers' stack once, and every
worker Beam asks for is forked from it.

Why: each of the DirectRunner's worker processes (``python -m pipelines.beam.worker``) started cold, after the
launcher had built and translated its graph, and imported Beam's harness, our stages and, in their setup, spaCy,
scipy and numba's lazily loaded parts: 2.3 s of one idle core per worker (1.1 s for ``datapipe``'s and
``pipelines``' modules with what they import, 1.2 s for the rest; measured 2026-12-04 from the modules a worker of
e2e's build holds at its end), and more on a busy machine, on the build's critical path. Here the launcher starts
one parent (the *zygote*) before it builds its graph, while the second core idles; the parent imports the stack
once (:func:`warm`) and waits. Beam still starts its workers with the command line it is given, ``python -m
pipelines.beam.worker --zygote=PATH``; that process (the *client*, a bare interpreter, ~20 ms) hands the parent
its environment, its working folder, its arguments and its standard streams over a Unix socket, and the parent
forks a child that runs Beam's harness with exactly those. The client waits for the child's exit status and exits
with it, so Beam's view of a worker (a process that ends when the harness ends, non-zero on failure) is unchanged.

Lifetimes, so that nothing outlives the build and nothing is lost:

- The launcher binds the socket before it starts the parent and passes it down: a worker that connects while the
  parent is still importing waits in the socket's backlog, never on a timer.
- The parent reads its standard input, a pipe from the launcher; at end of file (the build is over, or the
  launcher died) it accepts no more workers and exits once its children have been reaped.
- A child watches its connection to its client: when the client is gone (killed), the child ends too.
- SIGTERM and SIGHUP sent to a client are passed to its child. Ctrl-C reaches the child the way it reached a
  worker before: the child is in the terminal's process group with Python's own SIGINT handler; the parent and the
  client ignore SIGINT (the launcher handles Ctrl-C for the build).
- Anything that fails on the way (no socket, a parent that closes the connection) and the client runs the harness
  itself, as before: the parent only ever saves time.

Forking a process that has imported Beam: no gRPC channel or server exists in the parent (only the harness in the
child opens one); the parent's other threads are native pools (OpenBLAS, jemalloc) that re-create themselves
after a fork. ``gc.freeze`` keeps the imported objects out of the children's collections, so that their pages stay
shared.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import selectors
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from typing import NoReturn

_INT = struct.Struct("!i")

# the runners that run a pipeline on this machine (the DirectRunner is always the FnApiRunner here:
# pipelines/beam/runner.py); kept here, where the launcher reads it before Beam is imported
LOCAL = ("DirectRunner", "SwitchingDirectRunner")

# what a worker imports, in the order it imports it; a name that does not import is left to the worker (only time
# is at stake)
WARM = (
    "pipelines.beam.quiet",  # Beam without its import-time warning, which would land among the build's lines
    "apache_beam.runners.worker.sdk_worker_main",
    "pipelines.beam.stage",
    "pipelines.beam.dedup",
)


def warm() -> None:
    """Import what the workers of a build import: Beam's harness and the stages' DoFns (and with them ``datapipe``),
    then what every engine's workers load (:func:`datapipe.orchestrate.warm.warm_stack`: TensorStore among them)."""
    from datapipe.orchestrate.warm import warm_stack

    warm_stack(WARM)


# --- the launcher's side ------------------------------------------------------------------------------------------


def wanted(flags: list[str]) -> bool:
    """Whether Beam flags ask for the DirectRunner with worker processes (``--direct_running_mode=
    multi_processing``, no other ``--runner``): read before Beam is imported, so that the parent can start first.
    Only whether the parent starts depends on it; :func:`pipelines.beam.runner.local_runner` decides from Beam's
    own parsing whether the workers are processes, and only then are they forked from it."""
    import argparse

    ap = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    ap.add_argument("--runner")
    ap.add_argument("--direct_running_mode")
    known, _ = ap.parse_known_args(flags)
    local = known.runner is None or known.runner.rsplit(".", 1)[-1] in LOCAL
    return local and known.direct_running_mode == "multi_processing"


class WarmWorkers:
    """The parent, started: :attr:`command` is the worker command line to give Beam; :meth:`close` lets the
    parent go once the build is over and waits for it (its children, Beam's workers, have ended by then). A parent
    never closed (the launcher stopped at a bad input) ends when the launcher does: its standard input closes."""

    def __init__(self, python: str = sys.executable) -> None:
        self._folder = tempfile.mkdtemp(prefix="datapipe-workers-")
        path = os.path.join(self._folder, "zygote.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(path)
            listener.listen(128)
            self._proc = subprocess.Popen(
                [python, "-m", "pipelines.beam.zygote", str(listener.fileno())],
                stdin=subprocess.PIPE,
                pass_fds=(listener.fileno(),),
            )
        except BaseException:
            shutil.rmtree(self._folder, ignore_errors=True)
            raise
        finally:
            listener.close()
        self.command = f"{shlex.quote(python)} -m pipelines.beam.worker --zygote={shlex.quote(path)}"

    def close(self) -> None:
        proc = self._proc
        if proc.stdin is not None and not proc.stdin.closed:
            proc.stdin.close()
            try:
                proc.wait(timeout=60)  # a bound, not a pause: the parent exits once its last child is reaped
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(self._folder, ignore_errors=True)


# --- the client: what Beam starts as a worker ----------------------------------------------------------------------


def _recv_exactly(sock: socket.socket, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


_FORWARDED = (signal.SIGTERM, signal.SIGHUP)


def run_in_zygote(path: str, argv: list[str]) -> int | None:
    """Have the parent at ``path`` fork a worker with this process's environment, folder, ``argv`` and standard
    streams; its exit status (a signal ``n`` as ``128 + n``), or None when no child was started (the caller then
    runs the harness itself). SIGTERM and SIGHUP are passed on from the moment this starts: one that comes before
    the child's pid is known is held, then sent."""
    child: list[int] = []  # the child's pid, once known
    held: list[int] = []

    def forward(signum: int, frame: object) -> None:
        if not child:
            held.append(signum)
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(child[0], signum)

    def unforward() -> None:  # no child: as a worker that runs the harness itself, held signals act now
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for s in _FORWARDED:
            signal.signal(s, signal.SIG_DFL)
        for signum in held:
            signal.raise_signal(signum)

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the child gets the terminal's SIGINT itself
    for s in _FORWARDED:
        signal.signal(s, forward)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        payload = json.dumps({"env": dict(os.environ), "cwd": os.getcwd(), "argv": argv}).encode()
        socket.send_fds(sock, [_INT.pack(len(payload))], [0, 1, 2])
        sock.sendall(payload)
        got = _recv_exactly(sock, _INT.size)
    except OSError:
        got = None
    if got is None:
        sock.close()
        unforward()
        return None
    child.append(_INT.unpack(got)[0])
    for signum in held:
        forward(signum, None)
    try:
        status = _recv_exactly(sock, _INT.size)
    finally:
        sock.close()
    if status is None:
        return 1  # the parent went away before its child ended
    code = _INT.unpack(status)[0]
    return code if code >= 0 else 128 - code


# --- the parent ----------------------------------------------------------------------------------------------------


def _start_child(conn: socket.socket, close: list[int], harness: Callable[[], NoReturn]) -> int | None:
    """Read one request from ``conn`` and fork its worker; the child's pid, or None for a bad request."""
    conn.settimeout(30)
    try:
        header, fds, _, _ = socket.recv_fds(conn, _INT.size, 3)
        body = _recv_exactly(conn, _INT.unpack(header)[0]) if len(header) == _INT.size else None
        request = json.loads(body) if body is not None and len(fds) == 3 else None
    except (OSError, ValueError):
        request, fds = None, []
    if request is None:
        for fd in fds:
            os.close(fd)
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        return pid
    try:  # the child: become the worker the client would have been
        signal.set_wakeup_fd(-1)
        for s in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for fd in close:
            with contextlib.suppress(OSError):
                os.close(fd)
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.argv = list(request["argv"])
        conn.settimeout(None)

        def die_with_client() -> None:
            with contextlib.suppress(OSError):
                conn.recv(1)  # nothing is ever sent: this returns when the client is gone
            os._exit(1)

        threading.Thread(target=die_with_client, name="client-watch", daemon=True).start()
    except BaseException:
        os._exit(1)
    harness()


def serve(listener: socket.socket, control: int, harness: Callable[[], NoReturn]) -> None:
    """Fork a worker per connection until ``control`` reads end of file, then reap the children and return."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, "accept")
    sel.register(control, selectors.EVENT_READ, "control")
    sel.register(wake_r, selectors.EVENT_READ, "wake")
    children: dict[int, socket.socket] = {}
    accepting = True
    while accepting or children:
        for key, _ in sel.select():
            if key.data == "accept":
                conn, _ = listener.accept()
                close = [listener.fileno(), control, wake_r, wake_w, *(c.fileno() for c in children.values())]
                pid = _start_child(conn, close, harness)
                if pid is None:
                    conn.close()
                else:
                    conn.sendall(_INT.pack(pid))
                    children[pid] = conn
            elif key.data == "control":
                if not os.read(control, 4096):
                    accepting = False
                    sel.unregister(listener)
                    sel.unregister(control)
                    listener.close()
            else:
                with contextlib.suppress(BlockingIOError):
                    while os.read(wake_r, 4096):
                        pass
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            if pid in children:
                conn = children.pop(pid)
                with contextlib.suppress(OSError):
                    conn.sendall(_INT.pack(os.waitstatus_to_exitcode(status)))
                conn.close()


def main() -> None:
    # Ctrl-C is the launcher's to handle; stdin tells us when to go
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    listener = socket.socket(fileno=int(sys.argv[1]))
    # no collection while importing and none before freezing, as CPython's gc.freeze documentation advises for a
    # process that forks: the few cycles the imports leave stay frozen with the rest. The full collection this
    # parent made before freezing took 0.1 s, and the workers waited for it (2026-12-05)
    gc.disable()
    warm()
    from pipelines.beam.harness import harness

    gc.freeze()
    gc.enable()  # for what is made from now on, here and in the children (collections skip frozen objects)
    serve(listener, sys.stdin.fileno(), harness)
    # nothing to flush or write: freeing the imported heap object by object would only delay the build
    os._exit(0)


if __name__ == "__main__":
    main()
