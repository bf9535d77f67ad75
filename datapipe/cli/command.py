"""What every ``datapipe`` command module provides, and the helper that adds one to the parser.

A command is a module of this package with ``NAME``, ``add_parser(sub)`` (its subparser, which sets ``handler``: a
function of the parsed arguments returning the exit status) and, for a command that parses its own arguments
(``build``), ``run_raw(argv)``. :data:`datapipe.cli.COMMANDS` lists them in ``--help`` order: a new command is a
module and a line there, not a branch in ``main``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable


def subcommand(
    sub: argparse._SubParsersAction,
    name: str,
    help: str,
    example: str,
    operand: tuple[str, str] | None = None,
    handler: Callable[[argparse.Namespace], int] | None = None,
    add_help: bool = True,
) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with examples, with its one positional ``operand`` (name, help) and the
    ``handler`` that runs it: the lines every command would otherwise write again."""
    p: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help,
        epilog=example,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=add_help,
    )
    if operand is not None:
        p.add_argument(operand[0], help=operand[1])
    if handler is not None:
        p.set_defaults(handler=handler)
    return p
