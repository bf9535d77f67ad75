"""The local engine's entry in the engine registry (``datapipe.orchestrate.engines``; entry point ``local``).

Light to import; making the engine starts its fork server, which imports the workers' stack while the launcher
checks and plans."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from datapipe.errors import DatapipeError

if TYPE_CHECKING:
    from datapipe.orchestrate.run import Engine


class LocalEntry:
    name = "local"
    summary = "this machine's processes without Beam (--processes N): the fastest one-machine build"

    def add_flags(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument("--processes", type=int, help="worker processes at once (default: the CPU count)")

    def make(self, args: argparse.Namespace, extra: list[str], known: list[str]) -> Engine:
        if extra:
            raise DatapipeError(f"unknown argument(s) with --engine local: {' '.join(extra)}")
        from pipelines.local.server import check_processes, start_fork_server

        check_processes(args.processes)  # before any process starts

        # first, so that the server imports the workers' stack while this process imports the build's modules
        # and plans (a dry run starts no process)
        ctx = None if args.dry_run else start_fork_server()
        from pipelines.local.engine import LocalEngine

        return LocalEngine(args.processes, ctx)


ENGINE = LocalEntry()
