"""Python child processes in a process group of their own, so that Ctrl-C at the terminal never reaches them.

A terminal sends SIGINT to every process of its foreground process group. A child started by ``multiprocessing``
is in that group, and one still importing when the signal lands prints its own ``KeyboardInterrupt`` traceback
above the build's one ``interrupted:`` line. Blocking SIGINT around the start did not cover it: a child spawned from
a Beam worker thread began with an empty signal mask, and 3 of 12 random Ctrl-C moments in a build printed a
child's traceback. A child started here runs in a new process group (``process_group=0``): the signal never reaches
it, and its parent, which gets it, ends the child (or the child sees its pipe close and returns).

The child is ``python -c`` with the parent's ``sys.path``; it receives ``(target, args)`` over a
:class:`multiprocessing.connection.Connection` (the same pickling ``multiprocessing``'s spawn uses) and calls
``target(conn, *args)``. Its exit status is 0 when ``target`` returns, 1 when it raises.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping
from multiprocessing.connection import Connection

_BOOT = "import sys; from datapipe.runtime.child import _main; _main(int(sys.argv[1]))"


class Child:
    """A started child: ``conn`` talks to it; ``kill``, ``join``, ``is_alive`` and ``exitcode`` as on a
    ``multiprocessing.Process``."""

    def __init__(
        self,
        target: Callable[..., object],
        args: tuple[object, ...] = (),
        pass_fds: tuple[int, ...] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        """``pass_fds``: more open file descriptors the child inherits, under the same numbers (``args`` may name
        them); ``env``: variables set in the child's environment over this process's (read by the C library at
        the child's start, e.g. malloc's settings)."""
        ours, theirs = socket.socketpair()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(theirs.fileno())],
                pass_fds=(theirs.fileno(), *pass_fds),
                process_group=0,  # out of the terminal's group: Ctrl-C is the parent's to handle
                close_fds=True,
                env=None if env is None else {**os.environ, **env},
            )
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        try:
            self.conn.send(list(sys.path))
            self.conn.send((target, args))
        except OSError:  # it died at once; the caller sees that on its first use of conn
            pass

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def exitcode(self) -> int | None:
        return self._proc.poll()

    def is_alive(self) -> bool:
        return self._proc.poll() is None

    def join(self, timeout: float | None = None) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self._proc.kill()

    def close(self) -> None:
        """Close our end of the pipe (the child reads end-of-file)."""
        with contextlib.suppress(OSError):
            self.conn.close()


def _main(fd: int) -> None:
    conn = Connection(fd)
    try:
        sys.path[:] = conn.recv()
        target, args = conn.recv()
    except (EOFError, OSError):  # the parent went away before it said what to run
        sys.exit(1)
    try:
        target(conn, *args)
    except (BrokenPipeError, ConnectionResetError):  # the parent went away: nobody is left to tell
        sys.exit(1)
