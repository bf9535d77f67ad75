"""The last step: each document's removed spans, with where their bytes are kept, and its text without them.

A span is a maximal stretch of removed bytes, shrunk inward to whole UTF-8 characters (a window is cut at byte
offsets; a character half in a repeat stays whole), and optionally widened to whole lines. Its pieces say where
each part of it occurs elsewhere: ``Piece(start, end, doc, offset)`` means this document's bytes
``[start, end)`` equal document ``doc``'s bytes from ``offset``. Documents are numbered in the build's order
from 0; an earlier build's documents are negative (the last one -1). Offsets are UTF-8 byte offsets.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from datapipe.substrings.work import RUN, Layout, SortedRows, doc_starts, part_name, read_layout


@dataclass(frozen=True)
class Piece:
    """Bytes ``[start, end)`` of the document are a copy of document ``doc``'s bytes from ``offset`` (under
    ``keep: first`` the earliest occurrence, the kept one; under ``none`` the earliest other one)."""

    start: int
    end: int
    doc: int
    offset: int


@dataclass(frozen=True)
class Span:
    """Removed bytes ``[start, end)`` of the document, and the repeated pieces inside them (with ``lines``, the
    widened rest of a line belongs to no piece)."""

    start: int
    end: int
    pieces: tuple[Piece, ...]


@dataclass(frozen=True)
class Result:
    """One document after the stage: its global index, its removed spans and what is left of its text."""

    doc: int
    size: int
    spans: tuple[Span, ...]
    text: str

    @property
    def removed(self) -> int:
        return sum(s.end - s.start for s in self.spans)


class RunReader:
    """The runs of removed windows of this build's chunks, read forwards a document at a time."""

    def __init__(self, work: str | Path, layout: Layout, keep: str) -> None:
        self.work, self.layout, self.keep = Path(work), layout, keep
        self.readers: dict[int, SortedRows] = {}

    def between(self, lo: int, hi: int) -> np.ndarray:
        if hi <= lo:
            return np.empty(0, RUN)
        size = self.layout.chunk_bytes
        found = []
        for c in range(lo // size, (hi - 1) // size + 1):
            if c not in self.readers:
                path = self.work / f"runs-{self.keep}" / f"chunk-{c:05d}.bin"
                self.readers[c] = SortedRows(path, RUN, "start", block=1 << 16)
            found.append(self.readers[c].between(lo, hi))
        for c in [c for c in self.readers if c < lo // size]:
            del self.readers[c]
        return np.concatenate(found) if len(found) > 1 else found[0]


def char_start(data: bytes, i: int) -> bool:
    return i <= 0 or i >= len(data) or (data[i] & 0xC0) != 0x80


def spans_of(
    runs: np.ndarray, data: bytes, doc_start: int, k: int, lines: bool
) -> list[tuple[int, int, list[tuple[int, int, int]]]]:
    """Turn one document's runs (global window starts) into spans ``(start, end, [(start, end, copy)])`` with
    offsets in the document and copies global: runs with consecutive copies join, each run's bytes up to the
    next run's start form a piece, overlapping or touching pieces form a span, which then loses the partial
    characters at its ends."""
    merged: list[list[int]] = []
    for start, count, copy in runs.tolist():
        if merged and merged[-1][0] + merged[-1][1] == start and merged[-1][2] + merged[-1][1] == copy:
            merged[-1][1] += count
        else:
            merged.append([start, count, copy])
    spans: list[tuple[int, int, list[tuple[int, int, int]]]] = []
    for i, (start, count, copy) in enumerate(merged):
        end = start + count - 1 + k
        if i + 1 < len(merged):
            end = min(end, merged[i + 1][0])
        a, b = start - doc_start, end - doc_start
        if spans and spans[-1][1] >= a:
            spans[-1] = (spans[-1][0], b, spans[-1][2])
            spans[-1][2].append((a, b, copy))
        else:
            spans.append((a, b, [(a, b, copy)]))
    out: list[tuple[int, int, list[tuple[int, int, int]]]] = []
    for a, b, pieces in spans:
        while a < b and not char_start(data, a):
            a += 1
        while b > a and not char_start(data, b):
            b -= 1
        if a >= b:
            continue
        kept = [(max(s, a), min(e, b), c + max(0, a - s)) for s, e, c in pieces if min(e, b) > max(s, a)]
        if lines:
            a = data.rfind(b"\n", 0, a) + 1
            nl = data.find(b"\n", b - 1) if b > 0 else -1
            b = len(data) if nl < 0 else nl + 1
            if out and out[-1][1] >= a:
                a = out[-1][0]
                kept = out.pop()[2] + kept
        out.append((a, b, kept))
    return out


class DocIndex:
    """Global position -> (document, offset), over an earlier build's documents (negative) and this one's."""

    def __init__(self, work: str | Path, layout: Layout) -> None:
        parts = [doc_starts(p.path)[:-1] + p.offset for p in layout.priors]
        self.first = -sum(p.docs for p in layout.priors)
        self.starts = np.concatenate([*parts, doc_starts(work)[:-1]]) if parts else doc_starts(work)[:-1]

    def locate(self, pos: int) -> tuple[int, int]:
        i = int(np.searchsorted(self.starts, pos, "right")) - 1
        return i + self.first, pos - int(self.starts[i])


def kept_ranges(spans: list[tuple[int, int]], n: int) -> list[tuple[int, int]]:
    """The byte ranges of a document of ``n`` bytes left between its removed ``spans`` (sorted, disjoint)."""
    out, at = [], 0
    for a, b in spans:
        out.append((at, a))
        at = b
    return [*out, (at, n)]


def apply_part(work: str | Path, part: int, keep: str, lines: bool = False) -> Iterator[Result]:
    """Yield every document of part ``part``, in order, with its removed spans and its new text.

    Reads the part's text once, forwards, and the runs over it; memory is one document and the document index
    (8 bytes a document)."""
    layout = read_layout(work)
    k = layout.min_bytes
    first_doc = sum(layout.part_docs[:part])
    starts = doc_starts(work)[first_doc : first_doc + layout.part_docs[part] + 1]
    runs = RunReader(work, layout, keep)
    index: DocIndex | None = None
    with open(Path(work) / "parts" / f"{part_name(part)}.bin", "rb") as f:
        for i in range(layout.part_docs[part]):
            lo, hi = int(starts[i]), int(starts[i + 1])
            data = f.read(hi - lo)
            found = runs.between(lo, hi)
            if len(found) == 0:
                yield Result(first_doc + i, hi - lo, (), data.decode("utf-8", "surrogatepass"))
                continue
            index = index or DocIndex(work, layout)
            spans = []
            for a, b, pieces in spans_of(found, data, lo, k, lines):
                located = []
                for s, e, copy in pieces:
                    doc, offset = index.locate(copy)
                    located.append(Piece(s, e, doc, offset))
                spans.append(Span(a, b, tuple(located)))
            kept = kept_ranges([(s.start, s.end) for s in spans], len(data))
            text = b"".join(data[a:b] for a, b in kept).decode("utf-8", "surrogatepass")
            yield Result(first_doc + i, hi - lo, tuple(spans), text)
