"""What every ``datapipe`` command module provides, and the helper that adds one to the parser.

A command is a module of this package with ``NAME``, ``add_parser(sub)`` (its subparser, which sets ``handler``: a
function of the parsed arguments returning the exit status) and, for a command that parses its own arguments
(``build``), ``run_raw(argv)``. :data:`datapipe.cli.COMMANDS` lists them in ``--help`` order: a new command is a
module and a line there, not a branch in ``main``.
"""

from __future__ import annotations

import argparse
from typing import Any


def subcommand(sub: Any, name: str, help: str, example: str, **kw: Any) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with examples."""
    return sub.add_parser(
        name, help=help, epilog=example, formatter_class=argparse.RawDescriptionHelpFormatter, **kw
    )
