"""``datapipe export-clusters STAGE``: a dedup stage's duplicate clusters (or its verified edges) as JSON lines."""

from __future__ import annotations

import argparse

from datapipe.cli.command import subcommand
from datapipe.io import fs

NAME = "export-clusters"


def run(args: argparse.Namespace) -> int:
    from datapipe.report.clusters import export_edges, export_lines

    stage = args.stage.rstrip("/")
    lines = list(export_edges(stage) if args.edges else export_lines(stage))
    if args.out:
        fs.write_text_atomic(args.out, "".join(line + "\n" for line in lines))
        print(f"{len(lines)} {'edge' if args.edges else 'cluster'}(s) -> {args.out}")
    else:
        for line in lines:
            print(line)
    return 0


EXPORT_CLUSTERS_HELP = (
    "a dedup stage's duplicate clusters as JSON lines: each kept copy and the copies removed for it"
)
EXPORT_CLUSTERS_OPERAND = ("stage", "a dedup stage folder")
EXPORT_CLUSTERS_EXAMPLES = (
    "examples:\n  datapipe export-clusters out/dclm_phase3/dolmino_dclm/dedup-306c07fa\n"
    "  datapipe export-clusters out/dclm_phase3/dolmino_dclm/dedup-306c07fa --out /tmp/clusters.jsonl"
)


def add_parser(sub) -> None:
    ec = subcommand(
        sub,
        "export-clusters",
        EXPORT_CLUSTERS_HELP,
        EXPORT_CLUSTERS_EXAMPLES,
        operand=EXPORT_CLUSTERS_OPERAND,
    )
    ec.add_argument("--out", help="write the lines there instead of to stdout")
    ec.add_argument(
        "--edges",
        action="store_true",
        help="the verified MinHash edges instead (a stage with keep_edges: true)",
    )
    ec.set_defaults(handler=run)
