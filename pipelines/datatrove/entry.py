"""The datatrove engine's entry in the engine registry (``datapipe.orchestrate.engines``; entry point ``datatrove``):
``--engine datatrove --executor local|slurm|ray`` and each executor's flags."""

from __future__ import annotations

import argparse
from dataclasses import fields
from typing import TYPE_CHECKING

from datapipe.errors import DatapipeError

if TYPE_CHECKING:
    from datapipe.orchestrate.run import Engine

from pipelines.datatrove.executors import EXECUTORS


class DatatroveEntry:
    name = "datatrove"
    summary = "datatrove's executors (--executor local|slurm|ray)"

    def add_flags(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument(
            "--executor", choices=EXECUTORS, default="local", help="datatrove executor (default local)"
        )
        group.add_argument("--tasks", type=int, help="tasks per stage (default: one per shard)")
        group.add_argument("--workers", type=int, help="local: tasks at once (default: the CPU count)")
        group.add_argument(
            "--buckets", type=int, default=4, help="tasks of the dedup bucket phases (default 4)"
        )
        group.add_argument("--partition", help="slurm: partition to submit to")
        group.add_argument("--qos", help="slurm: quality of service (default: the partition's)")
        group.add_argument("--time", default="01:00:00", help="slurm: time limit per job (default 01:00:00)")
        group.add_argument(
            "--cpus-per-task", type=int, default=1, help="slurm, ray: CPUs per task (default 1)"
        )
        group.add_argument(
            "--mem-per-cpu-gb", type=int, default=2, help="slurm, ray: memory per CPU in GB (default 2)"
        )
        group.add_argument(
            "--ray-address",
            help="ray: an existing cluster's head (HOST:PORT, or auto); default: a cluster of this machine, for "
            "the build",
        )

    def make(self, args: argparse.Namespace, extra: list[str], known: list[str]) -> Engine:
        from pipelines.datatrove.engine import DatatroveEngine, DatatroveOptions

        if extra:
            raise DatapipeError(f"unknown argument(s) with --engine datatrove: {' '.join(extra)}")
        flags = vars(args)  # the flags are named as DatatroveOptions' fields
        names = [f.name for f in fields(DatatroveOptions)]
        return DatatroveEngine(DatatroveOptions(**{n: flags[n] for n in names if n in flags}))


ENGINE = DatatroveEntry()
