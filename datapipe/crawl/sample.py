"""Which files of a dump a build reads: deterministic in a seed, stratified across the dump's segments, nested.

Each file gets a key. Within a segment of ``n`` files, the files are put in the order of a hash of (seed, path),
and the ``k``-th of them (from 0) gets the key ``(k + o) / n``, where ``o`` in [0, 1) is a hash of (seed, segment).
A sample is the files of the smallest keys: a ``fraction`` F takes every key below F, ``files`` N the N smallest
(ties by path). So:

- **deterministic**: the keys depend on the seed and the paths only, not on the machine or the listing's order;
- **stratified**: a segment's keys are evenly spaced at ``1/n``, so a fraction F takes ``F * n`` of its files to
  within one, every segment in proportion (systematic sampling with a random start per segment); N files take
  each segment's share of N to within two (the N-th key is a fraction within a segment's count of N / files);
- **nested**: a larger fraction or N keeps every file a smaller one took (the threshold only grows), and a
  fraction's sample is the same files as the N smallest keys for its size. A "largest remainder" apportionment of
  N among segments is not nested (the Alabama paradox: a segment can lose a file when N grows); thresholds on one
  key are.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from dataclasses import dataclass

from datapipe.crawl.listing import CrawlFile
from datapipe.errors import DatapipeError


@dataclass(frozen=True)
class Sample:
    """How many files: ``files`` (a count) or ``fraction`` (of the dump's files), one of them; ``seed`` which."""

    files: int | None = None
    fraction: float | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if (self.files is None) == (self.fraction is None):
            raise DatapipeError("sample: give either files: N or fraction: F")
        if self.files is not None and (
            isinstance(self.files, bool) or not isinstance(self.files, int) or self.files < 1
        ):
            raise DatapipeError(f"sample.files: expected a whole number >= 1, got {self.files!r}")
        if self.fraction is not None and not (
            isinstance(self.fraction, (int, float))
            and not isinstance(self.fraction, bool)
            and 0 < self.fraction <= 1
        ):
            raise DatapipeError(f"sample.fraction: expected a number in (0, 1], got {self.fraction!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise DatapipeError(f"sample.seed: expected a whole number, got {self.seed!r}")


def _unit(seed: int, what: str) -> float:
    """A hash of (seed, what) as a number in [0, 1)."""
    digest = hashlib.sha256(f"{seed}\x00{what}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def keys(files: list[CrawlFile], seed: int) -> dict[str, float]:
    """Each file's key (see the module's docstring), by path."""
    by_segment: dict[str, list[CrawlFile]] = defaultdict(list)
    for f in files:
        by_segment[f.segment].append(f)
    out: dict[str, float] = {}
    for segment, members in by_segment.items():
        start = _unit(seed, "segment\x00" + segment)
        ranked = sorted(members, key=lambda f: (_unit(seed, f.path), f.path))
        n = len(ranked)
        for k, f in enumerate(ranked):
            out[f.path] = (k + start) / n
    return out


def sample(files: list[CrawlFile], how: Sample) -> list[CrawlFile]:
    """The files ``how`` picks from a dump's listing, in the listing's order. Asking for more files than the dump
    has is an error, not a smaller sample."""
    if how.files is not None and how.files > len(files):
        raise DatapipeError(f"sample.files: {how.files} asked, the listing names {len(files)}")
    key = keys(files, how.seed)
    if how.fraction is not None:
        picked = {f.path for f in files if key[f.path] < how.fraction}
        if not picked:  # a fraction too small for one file takes the file of the smallest key
            picked = {min(files, key=lambda f: (key[f.path], f.path)).path}
    else:
        ordered = sorted(files, key=lambda f: (key[f.path], f.path))
        picked = {f.path for f in ordered[: how.files]}
    return [f for f in files if f.path in picked]


def expected(files: list[CrawlFile], how: Sample) -> dict[str, float]:
    """Each segment's share of the sample if it were exactly proportional (what :func:`sample` meets to within
    one file a segment for a fraction, two for a count): for a report, and the tests."""
    counts: dict[str, int] = defaultdict(int)
    for f in files:
        counts[f.segment] += 1
    total = len(files)
    size = how.files if how.files is not None else max(1, math.ceil((how.fraction or 0) * total - 1e-9))
    return {s: size * n / total for s, n in counts.items()}
