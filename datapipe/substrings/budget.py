"""The resource plan of exact-substring dedup: chunk size from the memory budget, the units an engine runs, and
the memory, disk and time they take, from the corpus's size alone (what a dry run knows).

**Memory** (one process running the units one at a time, the pair merges on ``threads`` threads):

```
sort a chunk      text + suffix array (int32)   5 bytes per chunk byte, + 1/4 for two bit arrays
merge a pair      the two chunks' texts         2 bytes per chunk byte, + ~50 MB of pieces per thread
finish a chunk    the decided window range      8 bytes per window start of a range: 2 bytes per chunk byte
apply a part      one document, document index  8 bytes per document
```

plus the interpreter with numpy, numba's runtime and the compiled kernels (``BASE_MB``). The chunk is the
largest that lets sorting fit the budget; everything else then fits too. An engine that runs ``w`` units at
once gives each ``budget / w``.

**Disk**: the text (1 byte a byte) and, per chunk, its members (4 bytes a window start), group starts (1 bit),
and per distinct window its earliest start (4), its common prefix with the previous one (2): at most 11.25
bytes per byte of text, in practice less by the share of repeated windows; pairs and runs add 12 bytes per
shared group and 24 per run of removed windows. Google's deduplicate-text-datasets needs 10-15x on disk.

**Time**: the suffix arrays (libdivsufsort's speed), plus the pair merges, whose work grows as ``chunks - 1``
times the corpus (each chunk is merged with every other), split over ``threads``. The rates below were
measured on the benchmark's corpus (``benchmarks/substrings.py``) on one core of the build machines.
"""

from __future__ import annotations

from dataclasses import dataclass

from datapipe.substrings.work import Layout

BASE_MB = 170  # python, numpy, numba (LLVM), pydivsufsort, the compiled kernels: 158 MB measured
SORT_BYTES_PER_BYTE = 5.25  # text, int32 suffix array, the valid-window and group-start bits
FIXED_MB = 40  # a unit's buffers (BUFFER rows of output, pieces)
# single-core rates on the benchmark's corpus (MB of text per second); see docs/dedup.md
SORT_MB_S = 6.0  # libdivsufsort + grouping
MERGE_MB_S = 20.0  # one pair merge, per thread, MB of the two chunks' text
FINISH_MB_S = 40.0
APPLY_MB_S = 60.0
DISK_BYTES_PER_BYTE = 11.25


@dataclass(frozen=True)
class Plan:
    """What a dry run prints for the stage and what the units are sized by."""

    min_bytes: int
    budget_mb: int
    threads: int
    corpus_bytes: int
    prior_bytes: int
    chunk_bytes: int
    chunks: int
    prior_chunks: int
    pairs: int
    peak_mb: int
    disk_mb: int
    seconds: float

    def line(self) -> str:
        return (
            f"substrings: {self.corpus_bytes / 1e6:,.0f} MB in {self.chunks} chunks of "
            f"{self.chunk_bytes / 1e6:,.0f} MB ({self.pairs} pairs), peak {self.peak_mb} MB of {self.budget_mb}, "
            f"disk {self.disk_mb:,} MB, about {self.seconds / 60:,.1f} min on {self.threads} threads"
        )


def chunk_bytes_for(budget_mb: int, min_bytes: int) -> int:
    """The largest chunk whose sort fits ``budget_mb`` (whole MiB, at least 1 MiB + the window)."""
    room = (budget_mb - BASE_MB - FIXED_MB) * (1 << 20) / SORT_BYTES_PER_BYTE
    chunk = int(room) >> 20 << 20
    if chunk < max(1 << 20, 4 * min_bytes):
        raise ValueError(
            f"a budget of {budget_mb} MB leaves no room for a chunk (needs > {BASE_MB + FIXED_MB})"
        )
    return min(chunk, (1 << 31) - (1 << 20))


def _peak(size: int, corpus_bytes: int, prior_bytes: int, min_bytes: int, threads: int) -> float:
    """The largest resident set of the units (module docstring): sorting a chunk, merging a pair on ``threads``
    threads, or finishing a chunk, over the interpreter's own."""
    mb = 1 << 20
    return (
        BASE_MB
        + FIXED_MB
        + max(
            SORT_BYTES_PER_BYTE * min(size, corpus_bytes + min_bytes) / mb,
            2 * min(size, corpus_bytes + prior_bytes) / mb + 50 * threads,
            2 * min(size, corpus_bytes) / mb + 60,
        )
    )


def plan(
    corpus_bytes: int,
    budget_mb: int = 1024,
    min_bytes: int = 500,
    threads: int = 2,
    prior_bytes: int = 0,
    chunk_bytes: int | None = None,
) -> Plan:
    """Size the stage for a corpus of ``corpus_bytes`` UTF-8 bytes (and ``prior_bytes`` of earlier builds that
    it is deduplicated against) within ``budget_mb`` of resident memory. ``chunk_bytes`` overrides the chunk
    size (tests force many chunks with it)."""
    size = chunk_bytes or chunk_bytes_for(budget_mb, min_bytes)
    chunks = -(-corpus_bytes // size) if corpus_bytes else 0
    prior_chunks = -(-prior_bytes // size) if prior_bytes else 0
    pairs = chunks * (chunks - 1) // 2 + chunks * prior_chunks
    # the pair merges' threads each hold their pieces: as many as fit the budget (one at least)
    threads = next(
        (
            t
            for t in range(threads, 0, -1)
            if _peak(size, corpus_bytes, prior_bytes, min_bytes, t) <= budget_mb
        ),
        1,
    )
    peak = _peak(size, corpus_bytes, prior_bytes, min_bytes, threads)
    text_mb = corpus_bytes / 1e6
    merged_mb = pairs * 2 * min(size, corpus_bytes) / 1e6
    seconds = (
        text_mb / SORT_MB_S
        + merged_mb / (MERGE_MB_S * threads)
        + text_mb / (FINISH_MB_S * threads)
        + text_mb / APPLY_MB_S
    )
    return Plan(
        min_bytes,
        budget_mb,
        threads,
        corpus_bytes,
        prior_bytes,
        size,
        chunks,
        prior_chunks,
        pairs,
        int(peak),
        int(corpus_bytes * DISK_BYTES_PER_BYTE / 1e6),
        round(seconds, 1),
    )


@dataclass(frozen=True)
class Unit:
    """One unit of work: ``row`` is ``sort``, ``match``, ``finish`` or ``apply``; ``args`` its chunk indexes
    (``match``: two indexes into ``Layout.all_chunks``, an earlier build's first) or its part."""

    row: str
    args: tuple[int, ...]


def units(layout: Layout, keep: str) -> tuple[tuple[Unit, ...], ...]:
    """The rows of units for a frozen layout, in order: a row may start when the one before it has finished.
    ``keep`` names the finish units' output; ``sort`` and ``match`` serve both keep modes."""
    own = layout.chunks
    prior = 0
    if layout.priors:
        prior = sum(-(-p.total_bytes // _their_chunk(p.path)) for p in layout.priors)
    every = prior + own
    return (
        tuple(Unit("sort", (c,)) for c in range(own)),
        tuple(Unit("match", (a, b)) for b in range(prior, every) for a in range(b)),
        tuple(Unit("finish", (c,)) for c in range(own)),
        tuple(Unit("apply", (p,)) for p in range(len(layout.part_bytes))),
    )


def _their_chunk(path: str) -> int:
    from datapipe.substrings.work import read_layout

    return read_layout(path).chunk_bytes
