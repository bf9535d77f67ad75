"""The local engine's fork server: multiprocessing's, asked to import the workers' stack before it forks any.

Light to import (the launcher starts it before it loads the build's modules): what the server imports is
:mod:`pipelines.local.preload`, in its own process.
"""

from __future__ import annotations

import multiprocessing
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
