"""``datapipe report OUT``: one self-contained HTML report of a build."""

from __future__ import annotations

import argparse

from datapipe.cli.command import subcommand
from datapipe.io import fs
from datapipe.report import BROWSE_PORT

NAME = "report"


def run(args: argparse.Namespace) -> int:
    from datapipe.report.collect import crawl_lines, format_source_table, mixture_chains
    from datapipe.report.html import render_report

    target = args.html or fs.join(args.output, "report.html")
    fs.check_writable(fs.parent(target), "report")  # before the minutes of rendering, not after
    page = render_report(
        args.output, train_tokens=args.train_tokens, browse_url=args.browse_url, runs=args.run
    )
    fs.write_text_atomic(target, page)
    _, chains = mixture_chains(args.output)
    print(format_source_table({name: [r.counts for r in chain] for name, chain in chains.items()}))
    for line in crawl_lines(chains):
        print(line)
    print(f"report: {target} ({len(page) / 1e6:.1f} MB, {page.count('<img')} plots)")
    return 0


REPORT_HELP = (
    "write one self-contained HTML report of a build (funnels, scores, lengths, duplicates, samples)"
)
REPORT_OPERAND = ("output", "a mixture output folder (with mixture.json)")
REPORT_EXAMPLES = (
    "examples:\n  datapipe report out/dclm_phase3\n  datapipe report out/dclm_phase3 --html /tmp/r.html "
    "--train-tokens 2000000000"
)


def add_parser(sub) -> None:
    r = subcommand(
        sub,
        "report",
        REPORT_HELP,
        REPORT_EXAMPLES,
        operand=REPORT_OPERAND,
    )
    r.add_argument("--html", help="where to write the report (default OUTPUT/report.html)")
    r.add_argument("--train-tokens", type=int, help="planned training length: planned tokens and epochs")
    r.add_argument(
        "--run", action="append", default=[], help="a training run folder outside OUTPUT/runs (repeatable)"
    )
    r.add_argument(
        "--browse-url",
        default=f"http://127.0.0.1:{BROWSE_PORT}",
        help="where the report's links find datapipe browse (default: its default address)",
    )
    r.set_defaults(handler=run)
