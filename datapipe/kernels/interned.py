"""Byte strings interned in a compiled open-addressing table, each with a run of int ids: the memo a compiled scan
reads and extends without leaving compiled code (fastText's words and their input rows in language ID; GPT-2's
pre-tokenized pieces and their token ids in tokenization; a text's chunks and their words' ids in the filters). The
arrays live in :class:`Interned`; the functions below are called from inside ``numba`` kernels, which find a string
by its FNV-1a hash and compare its bytes.

A scan that meets tokens it does not know adds them as it goes (:func:`has_room`, then :func:`insert`), stopping
for :func:`scan_growing` to grow the memo when it is full; its caller then computes the new tokens' ids in Python
(:meth:`Interned.tokens_since`) and sets them (:meth:`Interned.set_runs`) before the text's ids are gathered
(:func:`gather`). Language ID's scan computes a new word's rows in compiled code, and stops the same way when the
memo has no room for them."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from datapipe.kernels.jit import kernel, leaf
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

    FIELDS = ("table", "hashes", "starts", "arena", "offsets", "ids", "counts")

    def copy(self) -> Interned:
        """An independent table with the same entries (a memo that grows from a vocabulary it must not write)."""
        return Interned.from_arrays({name: getattr(self, name).copy() for name in self.FIELDS})

    def arrays(self) -> dict[str, np.ndarray]:
        """The table's arrays by name (to store it: :mod:`datapipe.kernels.tables`)."""
        return {name: getattr(self, name) for name in self.FIELDS}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> Interned:
        """The table whose arrays :meth:`arrays` gave (taken as they are, not copied)."""
        table = cls.__new__(cls)
        for name in cls.FIELDS:
            setattr(table, name, arrays[name])
        return table

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

    def tokens_since(self, first: int) -> list[bytes]:
        """The bytes of the tokens added from number ``first`` on, in order (what a scan added without ids)."""
        added = int(self.counts[0])
        a = int(self.starts[first])
        arena = self.arena[a : int(self.starts[added])].tobytes()
        ends = (self.starts[first : added + 1] - a).tolist()
        return [arena[ends[j] : ends[j + 1]] for j in range(added - first)]

    def set_runs(self, first: int, ids: np.ndarray, lengths: np.ndarray) -> None:
        """The ids of the tokens added last, from number ``first`` on, in order: token ``first + p``'s are the next
        ``lengths[p]`` of ``ids`` (a scan that adds what it does not find leaves their ids to its caller)."""
        total = len(ids)
        self.reserve(0, 0, total)
        q = int(self.counts[2])
        self.ids[q : q + total] = ids
        self.offsets[first + 1 : first + 1 + len(lengths)] = q + np.cumsum(lengths)
        self.counts[2] = q + total


def scan_growing(memo: Interned, scan: Callable[[Interned, int, int], tuple[int, int]], end: int,
                 rest: Callable[[int], int], ids: Callable[[], int] | None = None) -> int:  # fmt: skip
    """Run a compiled scan that adds the tokens it does not find (:func:`has_room`, :func:`insert`) over a whole text: ``scan(memo,
    i, k)`` goes on from place ``i`` with ``k`` (the tokens written so far, or any count the scan carries) and
    returns where it stopped and the count; it stops at ``end``, or before a token the memo has no room for, which is
    then grown (as many tokens again as it holds, ``rest(i)`` more arena bytes: the text's bytes from there on, and,
    for a scan that writes a new token's ids itself, ``ids()`` more ids: what the token it stopped before needs).
    Grown as a text needs, not by the most tokens a text of its length could hold. Returns the count."""
    i = k = 0
    grown = False
    while True:
        start = i
        i, k = scan(memo, i, k)
        if i >= end:
            return k
        if grown and i == start:  # never (the memo was just grown), but a loop must not spin
            raise RuntimeError("interned: no room made in the memo for a new token")
        grown = True
        memo.reserve(int(memo.counts[0]) + 1024, rest(i), 0 if ids is None else ids())


@leaf
def fnv(data, s, e):  # pragma: no cover - compiled
    h = np.uint64(14695981039346656037)
    for k in range(s, e):
        h = (h ^ np.uint64(data[k])) * np.uint64(1099511628211)
    return h


@kernel
def slot_of(h, size):  # pragma: no cover - compiled
    return np.int64((h ^ (h >> np.uint64(31))) & np.uint64(size - 1))


@leaf
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


@leaf
def rehash(table, hashes, n):  # pragma: no cover - compiled
    size = len(table)
    for u in range(n):
        slot = slot_of(hashes[u], size)
        while table[slot] >= 0:
            slot = (slot + 1) & (size - 1)
        table[slot] = u


@leaf
def insert(table, slot, hashes, starts, arena, counts, data, s, e, h):  # pragma: no cover - compiled
    """Add the token ``data[s:e]`` at the free ``slot`` that :func:`find` gave; returns its number."""
    u, a = counts[0], counts[1]
    table[slot] = u
    hashes[u] = h
    for k in range(e - s):  # a loop, not a slice copy: that would need numba's runtime (``leaf``)
        arena[a + k] = data[s + k]
    starts[u + 1] = a + e - s
    counts[0], counts[1] = u + 1, a + e - s
    return u


@leaf
def fill(table, hashes, starts, arena, counts, joined, lengths):  # pragma: no cover - compiled
    s = 0
    for length in lengths:
        e = s + length
        h = fnv(joined, s, e)
        _, slot = find(table, hashes, starts, arena, joined, s, e, h)
        insert(table, slot, hashes, starts, arena, counts, joined, s, e, h)
        s = e


@leaf
def has_room(table, hashes, arena, counts, size):  # pragma: no cover - compiled
    """Whether the memo can take one more token of ``size`` bytes: a scan that adds what it does not find asks
    before :func:`insert` (its ids are the caller's to set, in the order added, with :meth:`Interned.set_runs`)
    and otherwise stops, for :func:`scan_growing` to grow the memo. (Finding and adding in one function called per
    token made the GPT-2 scan twice as slow, measured; the scans call :func:`find` and this.)"""
    return (
        counts[0] + 2 <= len(hashes) and 2 * (counts[0] + 1) <= len(table) and counts[1] + size <= len(arena)
    )


@kernel
def gather(values, starts, ids):  # pragma: no cover - compiled
    """``values[starts[w]:starts[w + 1]]`` for each ``w`` of ``ids``, concatenated (a text's tokens' runs of ids;
    a text's words' code points)."""
    total = 0
    for w in ids:
        total += starts[w + 1] - starts[w]
    out = np.empty(total, dtype=values.dtype)
    k = 0
    for w in ids:
        for q in range(starts[w], starts[w + 1]):
            out[k] = values[q]
            k += 1
    return out
