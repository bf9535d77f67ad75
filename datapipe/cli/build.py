"""``datapipe build ARGS``: build a mixture, in this process, through the engine registry (the launcher's own
parser: ``datapipe.orchestrate.launch``; ``python -m pipelines.build_mixture ARGS`` is the same launcher)."""

from __future__ import annotations

from datapipe.cli.command import subcommand
from datapipe.orchestrate.launch import main

NAME = "build"


def run_raw(argv: list[str]) -> int:
    """The launcher parses its own flags (each engine adds its own, and Beam's pipeline options pass through)."""
    main(argv, prog="datapipe build")
    return 0  # not reached: main exits with the build's status


BUILD_HELP = "build a mixture (see datapipe build --help)"
BUILD_EXAMPLES = "example:\n  datapipe build --mixture dclm_phase3.yaml --output out/dclm_phase3"


def add_parser(sub) -> None:
    subcommand(sub, "build", BUILD_HELP, BUILD_EXAMPLES, add_help=False)
