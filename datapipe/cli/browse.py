"""``datapipe browse OUT``: the local web app over a build."""

from __future__ import annotations

import argparse

from datapipe.cli.command import subcommand
from datapipe.io import fs
from datapipe.report import BROWSE_PORT

NAME = "browse"


def run(args: argparse.Namespace) -> int:
    from datapipe.browse.app import create_app, default_index_dir, listen, serve

    output = args.output.rstrip("/")
    index_dir = args.index_dir or default_index_dir(output)
    fs.check_writable(index_dir, "browser index")
    sock = listen(args.host, args.port)  # first: a taken port is said before the index is built
    serve(create_app(output, index_dir, args.run), sock)
    return 0


BROWSE_HELP = (
    "a local web app over a build: funnels, documents by outcome and reason, decisions, clusters, runs"
)
BROWSE_OPERAND = ("output", "a mixture output folder (with mixture.json)")
BROWSE_EXAMPLES = "examples:\n  datapipe browse out/dclm_phase3\n  datapipe browse out/dclm_phase3 --port 0 --run runs/llama"


def add_parser(sub) -> None:
    b = subcommand(
        sub,
        "browse",
        BROWSE_HELP,
        BROWSE_EXAMPLES,
        operand=BROWSE_OPERAND,
    )
    b.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    b.add_argument(
        "--port", type=int, default=BROWSE_PORT, help=f"port (default {BROWSE_PORT}; 0 picks a free one)"
    )
    b.add_argument("--index-dir", help="where the browser's index goes (default OUTPUT/.browse)")
    b.add_argument(
        "--run", action="append", default=[], help="a training run folder outside OUTPUT/runs (repeatable)"
    )
    b.set_defaults(handler=run)
