"""``datapipe lineage PATH``: a training run or a build back to its manifest, stages and input files."""

from __future__ import annotations

import argparse

from datapipe.cli.command import subcommand

NAME = "lineage"


def run(args: argparse.Namespace) -> int:
    from datapipe.report.lineage import lineage

    print("\n".join(lineage(args.path.rstrip("/"))))
    return 0


LINEAGE_HELP = "print the chain from a training run or a build to its manifest, stages and input files"
LINEAGE_OPERAND = ("path", "a training run folder (run.json) or a mixture output folder")
LINEAGE_EXAMPLES = (
    "examples:\n  datapipe lineage out/dclm_phase3/runs/tiny\n  datapipe lineage out/dclm_phase3"
)


def add_parser(sub) -> None:
    subcommand(sub, "lineage", LINEAGE_HELP, LINEAGE_EXAMPLES, operand=LINEAGE_OPERAND, handler=run)
