"""The local engine's fork server: multiprocessing's, asked to import the workers' stack before it forks any.

Light to import (the launcher starts it before it loads the build's modules): what the server imports is
:mod:`pipelines.local.preload`, in its own process.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence
from multiprocessing.context import BaseContext

from datapipe.errors import DatapipeError

PRELOAD = "pipelines.local.preload"
QUICK_END = "pipelines.local.quick_end"  # imported last: see the module


def check_processes(processes: int | None) -> None:
    """``--processes``: at least one (None: the CPU count)."""
    if processes is not None and processes < 1:
        raise DatapipeError(f"--processes must be >= 1 (got {processes})")


def start_fork_server() -> BaseContext:
    """The fork server's context, the server started now: it imports while the caller goes on. A process keeps
    one server for its life (multiprocessing's own), so later builds in the same process fork from it at once."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([PRELOAD, QUICK_END])
    from multiprocessing import forkserver

    forkserver.ensure_running()
    return ctx


def asks_for_local(argv: Sequence[str]) -> bool:
    """Whether a launcher's flags ask for a local build that starts its processes, beyond doubt: ``--engine local``
    (or ``--engine=local``), no dry run, no help, and ``--processes``, if given, a whole number of at least 1.
    Anything else (an abbreviated flag, a value the parser refuses) says no, and the server starts when the engine is
    made, after the parser (:func:`start_early`)."""
    engine, args = None, list(argv)
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if not eq:
            value = args[i + 1] if i + 1 < len(args) else ""
        if arg in ("-h", "--help") or name == "--dry-run":
            return False
        if name == "--engine":
            engine = value
        elif name == "--processes" and not (value.isdigit() and int(value) >= 1):
            return False
    return engine == "local"


def start_early(argv: Sequence[str]) -> None:
    """Start the fork server now if ``argv`` asks for a local build (:func:`asks_for_local`): called by
    ``python -m pipelines.build_mixture`` before it imports the launcher. The server's preload (the workers' stack,
    ~0.9 s) is the start's critical path, the first tasks wait for it while the launcher, which plans meanwhile, is
    done in ~0.45 s; started as the engine is made, it began after the launcher's own imports, flag parsing and
    engine registry (0.05-0.12 s after the launcher's first line, 2026-12-07). The engine's
    :func:`start_fork_server` later finds it running."""
    if asks_for_local(argv):
        start_fork_server()
