"""Tallies of the reliability tests (``pytest -m reliability``), printed as the run's last line by conftest.

Tests add what they proved: ``tally("bad_inputs", tried=3)``, ``tally("crashes", 0)``, ``tally("unbounded", 0)``
(a memory check over its bound), ``tally("kills", 10)``, ``tally("kill_diffs", 0)``, ``tally("interrupts", 2)``,
``tally("tracebacks", 0)``, ``tally("stages_identical", 9)``. A test adds only after its own assertions passed, so
a failing test leaves its trials out (and fails the run).
"""

from __future__ import annotations

from collections import Counter

TALLY: Counter = Counter()


def tally(key: str, n: int = 1) -> None:
    TALLY[key] += n


def summary_line() -> str:
    return (
        f"bad inputs: {TALLY['bad_inputs']} tried, {TALLY['crashes']} crashes, {TALLY['unbounded']} unbounded; "
        f"kills: {TALLY['kills']} trials, {TALLY['kill_diffs']} diffs; "
        f"interrupts: {TALLY['interrupts']} trials, {TALLY['tracebacks']} tracebacks; "
        f"determinism: {TALLY['stages_identical']} stages identical"
    )
