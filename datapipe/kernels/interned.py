"""Byte strings interned in a compiled open-addressing table, each with a run of int ids: the memo a compiled scan
reads and extends without leaving compiled code (fastText's words and their input rows in language ID; GPT-2's
pre-tokenized pieces and their token ids in tokenization). The arrays live in :class:`Interned`; the functions
below are called from inside ``numba`` kernels, which find a string by its FNV-1a hash and compare its bytes."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numba
import numpy as np

from datapipe.kernels.spans import same_span


def power_of_two(n: int) -> int:
    """The table sizes: probing wraps with a mask."""
    return 1 << max(4, (n - 1).bit_length())


class Interned:
    """Distinct tokens (their bytes in one arena) in an open-addressing table, each with its run of ids (a word's
    input rows, a piece's token ids): the arrays a compiled scan reads and extends. ``counts`` = [tokens, arena
    bytes used, ids used]."""

    def __init__(self, tokens: int = 1 << 14, arena: int = 1 << 18, ids: int = 1 << 16) -> None:
        self.table = np.full(power_of_two(4 * tokens), -1, dtype=np.int64)
        self.hashes = np.zeros(tokens, dtype=np.uint64)
        self.starts = np.zeros(tokens + 1, dtype=np.int64)  # token u's bytes: arena[starts[u]:starts[u + 1]]
        self.arena = np.zeros(arena, dtype=np.uint8)
        self.offsets = np.zeros(tokens + 1, dtype=np.int64)  # token u's ids: ids[offsets[u]:offsets[u + 1]]
        self.ids = np.zeros(ids, dtype=np.int32)
        self.counts = np.zeros(3, dtype=np.int64)

    def copy(self) -> Interned:
        """An independent table with the same entries (a memo that grows from a vocabulary it must not write)."""
        other = Interned.__new__(Interned)
        for name in ("table", "hashes", "starts", "arena", "offsets", "ids", "counts"):
            setattr(other, name, getattr(self, name).copy())
        return other

    def reserve(self, tokens: int, arena: int, ids: int) -> None:
        """Room for this many more of each (the most one text of a given length can add)."""
        n, used, nids = (int(c) for c in self.counts)
        if n + tokens + 1 > len(self.hashes):
            size = max(2 * len(self.hashes), n + tokens + 1)
            self.hashes = np.resize(self.hashes, size)
            self.starts = np.resize(self.starts, size + 1)
            self.offsets = np.resize(self.offsets, size + 1)
        if 2 * (n + tokens) > len(self.table):
            self.table = np.full(power_of_two(4 * len(self.hashes)), -1, dtype=np.int64)
            rehash(self.table, self.hashes, n)
        if used + arena > len(self.arena):
            self.arena = np.resize(self.arena, max(2 * len(self.arena), used + arena))
        if nids + ids > len(self.ids):
            self.ids = np.resize(self.ids, max(2 * len(self.ids), nids + ids))

    def add(self, data: np.ndarray, spans: np.ndarray, runs: Sequence[Sequence[int]]) -> None:
        """Remember the tokens ``data[s:e]`` of ``spans`` (distinct, none in the table yet), token ``p``'s ids
        being ``runs[p]``."""
        ends = np.cumsum(np.fromiter(map(len, runs), dtype=np.int64, count=len(runs)))
        total = int(ends[-1]) if len(runs) else 0
        run_ids = np.fromiter(chain.from_iterable(runs), dtype=np.int32, count=total)
        self.reserve(len(runs), int((spans[:, 1] - spans[:, 0]).sum()), total)
        add_runs(
            self.table, self.hashes, self.starts, self.arena, self.offsets, self.ids, self.counts,
            data, spans, run_ids, ends,
        )  # fmt: skip

    def set_runs(self, first: int, ids: np.ndarray, lengths: np.ndarray) -> None:
        """The ids of the tokens added last, from number ``first`` on, in order: token ``first + p``'s are the next
        ``lengths[p]`` of ``ids`` (a scan that adds what it does not find leaves their ids to its caller)."""
        total = len(ids)
        self.reserve(0, 0, total)
        q = int(self.counts[2])
        self.ids[q : q + total] = ids
        self.offsets[first + 1 : first + 1 + len(lengths)] = q + np.cumsum(lengths)
        self.counts[2] = q + total


def distinct_spans(raw: bytes, spans: np.ndarray) -> dict[bytes, int]:
    """Each distinct token among ``raw[s:e]`` of ``spans`` -> the index of its first span (a text's new tokens,
    each to be remembered once)."""
    first: dict[bytes, int] = {}
    for p, (s, e) in enumerate(spans.tolist()):
        first.setdefault(raw[s:e], p)
    return first


@numba.njit(cache=True, nogil=True)
def fnv(data, s, e):  # pragma: no cover - compiled
    h = np.uint64(14695981039346656037)
    for k in range(s, e):
        h = (h ^ np.uint64(data[k])) * np.uint64(1099511628211)
    return h


@numba.njit(cache=True, nogil=True)
def slot_of(h, size):  # pragma: no cover - compiled
    return np.int64((h ^ (h >> np.uint64(31))) & np.uint64(size - 1))


@numba.njit(cache=True, nogil=True)
def find(table, hashes, starts, arena, data, s, e, h):  # pragma: no cover - compiled
    """The token ``data[s:e]`` (hash ``h``): (its number or -1, the free slot where it would go)."""
    size = len(table)
    slot = slot_of(h, size)
    while table[slot] >= 0:
        u = table[slot]
        if (
            hashes[u] == h
            and starts[u + 1] - starts[u] == e - s
            and same_span(arena, starts[u], data, s, e - s)
        ):
            return u, slot
        slot = (slot + 1) & (size - 1)
    return -1, slot


@numba.njit(cache=True, nogil=True)
def rehash(table, hashes, n):  # pragma: no cover - compiled
    size = len(table)
    for u in range(n):
        slot = slot_of(hashes[u], size)
        while table[slot] >= 0:
            slot = (slot + 1) & (size - 1)
        table[slot] = u


@numba.njit(cache=True, nogil=True)
def insert(table, slot, hashes, starts, arena, counts, data, s, e, h):  # pragma: no cover - compiled
    """Add the token ``data[s:e]`` at the free ``slot`` that :func:`find` gave; returns its number."""
    u, a = counts[0], counts[1]
    table[slot] = u
    hashes[u] = h
    arena[a : a + e - s] = data[s:e]
    starts[u + 1] = a + e - s
    counts[0], counts[1] = u + 1, a + e - s
    return u


@numba.njit(cache=True, nogil=True)
def fill(table, hashes, starts, arena, counts, joined, lengths):  # pragma: no cover - compiled
    s = 0
    for length in lengths:
        e = s + length
        h = fnv(joined, s, e)
        _, slot = find(table, hashes, starts, arena, joined, s, e, h)
        insert(table, slot, hashes, starts, arena, counts, joined, s, e, h)
        s = e


@numba.njit(cache=True, nogil=True)
def add_runs(
    table, hashes, arena_starts, arena, offsets, ids, counts, data, spans, run_ids, ends
):  # pragma: no cover - compiled
    """Remember the tokens ``data[s:e]`` of ``spans`` (none in the table yet), the ids of token ``p`` being
    ``run_ids[ends[p - 1]:ends[p]]``."""
    first = 0
    for p in range(len(spans)):
        s, e = spans[p, 0], spans[p, 1]
        h = fnv(data, s, e)
        _, slot = find(table, hashes, arena_starts, arena, data, s, e, h)
        u = insert(table, slot, hashes, arena_starts, arena, counts, data, s, e, h)
        q = counts[2]
        n = ends[p] - first
        ids[q : q + n] = run_ids[first : ends[p]]
        offsets[u + 1] = q + n
        counts[2] = q + n
        first = ends[p]
