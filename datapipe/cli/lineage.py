"""``datapipe lineage PATH``: a training run or a build back to its manifest, stages and input files."""

from __future__ import annotations

import argparse

from datapipe.cli.command import subcommand

NAME = "lineage"


def run(args: argparse.Namespace) -> int:
    from datapipe.report.lineage import lineage

    print("\n".join(lineage(args.path.rstrip("/"))))
    return 0


def add_parser(sub) -> None:
    lg = subcommand(
        sub,
        "lineage",
        "print the chain from a training run or a build to its manifest, stages and input files",
        "examples:\n  datapipe lineage out/dclm_phase3/runs/tiny\n  datapipe lineage out/dclm_phase3",
    )
    lg.add_argument("path", help="a training run folder (run.json) or a mixture output folder")
    lg.set_defaults(handler=run)
