"""Exact-substring dedup (Lee et al. 2022): every span of at least ``min_bytes`` bytes that occurs more than
once in the corpus is removed (all occurrences but the first under ``keep="first"``, every one under
``keep="none"``), found exactly with suffix arrays over chunks that fit a memory budget.

Semantics: a window is ``min_bytes`` consecutive bytes of one document's UTF-8 (windows never cross a document
boundary). Under ``first`` a byte is removed when it lies in a window whose earliest occurrence, in the build's
document order, is elsewhere; under ``none`` when it lies in a window that occurs at least twice. Removed bytes
form spans, shrunk inward to whole characters (``apply``). An earlier build's work folder can be given as a
prior: its text precedes this build's, so what occurs there is removed here, and it is never changed.

The algorithm lives here; engines only schedule its units (``budget.units``) and move their files:

1. ``work.write_part`` per input shard, in order; then ``work.freeze`` once (the layout, with priors);
2. ``steps.sort_chunk`` per chunk; 3. ``steps.match_pair`` per pair of chunks; 4. ``steps.finish_chunk`` per
   chunk and keep mode; 5. ``apply.apply_part`` per part, yielding each document's ``Result``.

``run`` is that schedule in one process (threads for the pair merges), as the tests and the benchmark run it;
``reference`` is the brute-force check (one suffix array, no chunks).
"""

from __future__ import annotations

from datapipe.substrings.apply import Piece, Result, Span, apply_part
from datapipe.substrings.budget import Plan, Unit, plan, units
from datapipe.substrings.schedule import run, run_unit
from datapipe.substrings.steps import KEEP, finish_chunk, match_pair, sort_chunk
from datapipe.substrings.work import Layout, Prior, SubstringsError, freeze, read_layout, write_part

__all__ = [
    "KEEP",
    "Layout",
    "Piece",
    "Plan",
    "Prior",
    "Result",
    "Span",
    "SubstringsError",
    "Unit",
    "apply_part",
    "finish_chunk",
    "freeze",
    "match_pair",
    "plan",
    "read_layout",
    "run",
    "run_unit",
    "sort_chunk",
    "units",
    "write_part",
]
