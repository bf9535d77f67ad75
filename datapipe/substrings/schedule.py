"""The units' schedule in one process: rows in order, units one at a time, each pair merge on ``threads``
threads (numba's loops and libdivsufsort release the GIL). The tests and the benchmark run the stage this way;
an engine runs the same units from ``budget.units`` as its own tasks."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from datapipe.substrings.budget import Unit, units
from datapipe.substrings.steps import finish_chunk, match_pair, sort_chunk
from datapipe.substrings.work import read_layout


def run_unit(work: str | Path, unit: Unit, keep: Iterable[str] = ("first",), threads: int = 1) -> None:
    """Run one ``sort``, ``match`` or ``finish`` unit (a done one returns at once); ``apply`` units are
    iterated by the caller (``apply.apply_part``)."""
    if unit.row == "sort":
        sort_chunk(work, unit.args[0])
    elif unit.row == "match":
        match_pair(work, unit.args[0], unit.args[1], threads=threads)
    elif unit.row == "finish":
        for mode in keep:
            finish_chunk(work, unit.args[0], mode)
    elif unit.row != "apply":
        raise ValueError(f"unknown unit row {unit.row!r}")


def run(
    work: str | Path,
    keep: Iterable[str] = ("first",),
    threads: int = 2,
    after: Callable[[Unit], None] | None = None,
) -> None:
    """Run every unit but ``apply`` of a frozen work folder, skipping those already done (so a killed run
    resumes); ``after`` is called after each unit (progress, or a test's kill)."""
    modes = tuple(keep)
    layout = read_layout(work)
    for row in units(layout, modes[0])[:3]:
        for unit in row:
            run_unit(work, unit, modes, threads)
            if after is not None:
                after(unit)
