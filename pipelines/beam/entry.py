"""The Beam engine's entry in the engine registry (``datapipe.orchestrate.engines``; entry point ``beam``).

Light to import: Beam itself loads in :meth:`BeamEntry.make`, when a build runs on it."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

# the launcher starts this engine (and its warm workers) before it imports the build's modules
if TYPE_CHECKING:
    from datapipe.orchestrate.run import Engine


class BeamEntry:
    name = "beam"
    summary = "Apache Beam (default); the runner is chosen by Beam's own flags (--runner ...)"

    def add_flags(self, group: argparse._ArgumentGroup) -> None:
        group.add_argument(
            "--global-shuffle",
            choices=("auto", "files", "beam"),
            default="auto",
            help="how the dedup and paragraph global phases group keys: through partitioned files on disk "
            "(bounded memory) or Beam's GroupByKey; auto (default): files on the DirectRunner, which holds a "
            "GroupByKey in memory, else beam",
        )

    def make(self, args: argparse.Namespace, extra: list[str], known: list[str]) -> Engine:
        from pipelines.beam import zygote

        # local worker processes: their warm parent starts now, so that it imports their stack while this process
        # imports Beam and builds its graph (pipelines/beam/zygote.py)
        workers = zygote.WarmWorkers() if not args.dry_run and zygote.wanted(extra) else None
        from pipelines.beam.engine import BeamEngine, check_beam_flags

        try:
            check_beam_flags(extra, known)  # what the launcher does not know must be a Beam pipeline option
            return BeamEngine(extra, args.global_shuffle, workers)
        except BaseException:
            if workers is not None:
                workers.close()
            raise


ENGINE = BeamEntry()
