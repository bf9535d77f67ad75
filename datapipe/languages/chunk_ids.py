"""A text's words as ids, for the splitters whose words are those of its whitespace-separated chunks in order.

Why: spaCy's rule-based tokenizers split each chunk of ``str.split()`` on its own, and
:class:`datapipe.languages.spacy_words.WordSplitter` memoizes per chunk. With the memo warm, the per-chunk Python
work around it (``str.split``, the set of new chunks, joining the memo's tuples) still took 0.73 CPU s over the e2e
benchmark's 3,415 pages, and the filters then measured every word again to index it (lengths, code points, ids:
:class:`datapipe.filters.wordindex.WordIndex`). Here one compiled pass splits the text's UTF-8 bytes where
``str.split`` does and looks each chunk up in a memo of its words' ids (:class:`datapipe.kernels.interned.Interned`);
a chunk met for the first time is split by the splitter's own rules (``words_of``) and remembered. A word's id
numbers it in a :class:`WordTable` of every word met so far, which also holds its length and code points, so a
document's word arrays are gathered by id rather than measured.

The chunks are exactly ``str.split()``'s: white space is every code point ``str.isspace`` says is (none is at or
above :data:`~datapipe.kernels.utf8.TABLE_END`, tested). A text with a lone surrogate (no UTF-8) is the caller's to
split as before, and so is one over :data:`MAX_CHARS` characters (the pass holds 2 bytes of chunk numbers per byte
of text). The memo grows as new chunks come, not by the most a text of its length could hold: a long text without
white space (Chinese, Japanese) is a few chunks.

Over the e2e benchmark's 3,415 pages in one process, the refinedweb chain took 2.92 CPU s with a cold memo before
and 2.46-2.57 s after (1.50 and 1.26-1.30 s for half of them, what each of two workers sees); a warm split 0.73 s
before and 0.22 s after.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from itertools import chain

import numba
import numpy as np

from datapipe.kernels.interned import Interned, find, fnv, gather, has_room, insert, scan_growing
from datapipe.kernels.utf8 import TABLE_END, decode, every_character, utf8_within

MAX_CHARS = 1 << 20  # a longer text is split by the splitter's ``split`` (see the module's docstring)


@cache
def white_space() -> np.ndarray:
    """Each code point below ``TABLE_END``: whether ``str.isspace`` (what ``str.split`` splits on) says it is."""
    chars = every_character(TABLE_END)
    return np.fromiter(map(str.isspace, chars), dtype=np.bool_, count=len(chars))


class WordTable:
    """Every word met so far, numbered: its text, its length in code points, its code points (UTF-32) and whether
    it holds a letter, the arrays a document's :class:`~datapipe.filters.wordindex.WordIndex` gathers from by id.
    Append-only: a document's ids stay valid while the table grows."""

    def __init__(self) -> None:
        self.words: list[str] = []
        self.number: dict[str, int] = {}
        self.lengths = np.zeros(1 << 14, dtype=np.int64)
        self.alpha = np.zeros(1 << 14, dtype=np.bool_)  # Gopher's alphabetic word: a letter anywhere in it
        # word w's code points: codes[starts[w]:starts[w + 1]]
        self.starts = np.zeros((1 << 14) + 1, dtype=np.int64)
        self.codes = np.zeros(1 << 16, dtype=np.uint32)

    def runs(self, runs: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
        """The runs' words as their numbers, one run after another, and each run's length; words not yet in the
        table are numbered (all at once)."""
        number = self.number
        words = list(chain.from_iterable(runs))
        new = [w for w in dict.fromkeys(words) if w not in number]
        if new:
            self._append(new)
        ids = np.fromiter(map(number.__getitem__, words), dtype=np.int32, count=len(words))
        return ids, np.fromiter(map(len, runs), dtype=np.int64, count=len(runs))

    def _append(self, new: list[str]) -> None:
        n = len(self.words)
        m = n + len(new)
        points = np.frombuffer("".join(new).encode("utf-32-le"), dtype=np.uint32)
        used = int(self.starts[n])
        if m + 1 > len(self.starts):
            size = max(2 * len(self.lengths), m)
            self.lengths = np.resize(self.lengths, size)
            self.alpha = np.resize(self.alpha, size)
            self.starts = np.resize(self.starts, size + 1)
        if used + len(points) > len(self.codes):
            self.codes = np.resize(self.codes, max(2 * len(self.codes), used + len(points)))
        lengths = np.fromiter(map(len, new), dtype=np.int64, count=len(new))
        self.lengths[n:m] = lengths
        self.alpha[n:m] = [any(map(str.isalpha, w)) for w in new]
        self.starts[n + 1 : m + 1] = used + np.cumsum(lengths)
        self.codes[used : used + len(points)] = points
        for i, w in enumerate(new, n):
            self.number[w] = i
        self.words.extend(new)


@numba.njit(cache=True, nogil=True)
def _chunks(
    data, i, k, space, table, hashes, arena_starts, arena, counts, chunk_u
):  # pragma: no cover - compiled
    """From byte ``i`` on, each chunk's number in the memo into ``chunk_u`` (from ``k`` on), a new chunk added
    (:func:`~datapipe.kernels.interned.has_room`). Returns (where it stopped, chunks so far): at ``len(data)``,
    or before a new chunk the memo has no room for."""
    n = len(data)
    while i < n:
        b = data[i]
        if b < 0x80:
            if space[b]:
                i += 1
                continue
        else:
            c, length = decode(data, i)
            if c < len(space) and space[c]:
                i += length
                continue
        s = i
        while i < n:
            b = data[i]
            if b < 0x80:
                if space[b]:
                    break
                i += 1
            else:
                c, length = decode(data, i)
                if c < len(space) and space[c]:
                    break
                i += length
        h = fnv(data, s, i)
        u, slot = find(table, hashes, arena_starts, arena, data, s, i, h)
        if u < 0:
            if not has_room(table, hashes, arena, counts, i - s):
                return s, k
            u = insert(table, slot, hashes, arena_starts, arena, counts, data, s, i, h)
        chunk_u[k] = u
        k += 1
    return n, k


class ChunkIds:
    """``split(text)``: the ids of ``text``'s words in a :class:`WordTable` (with the table), the words of each
    chunk of ``text.split()`` being ``words_of([chunk])[0]``; None for a text with a lone surrogate or over
    ``max_chars`` characters."""

    def __init__(
        self,
        words_of: Callable[[list[str]], list[tuple[str, ...]]],
        memo_size: int,
        max_chars: int = MAX_CHARS,
    ) -> None:
        """``words_of``: the words of each of several new chunks (a splitter may do them in one call)."""
        self._words_of = words_of
        self._memo_size = memo_size
        self._max_chars = max_chars
        self._start_over()

    def _start_over(self) -> None:
        self.table = WordTable()
        self._memo = Interned()

    def split(self, text: str) -> tuple[np.ndarray, WordTable] | None:
        raw = utf8_within(text, self._max_chars)
        if raw is None:
            return None
        if int(self._memo.counts[0]) > self._memo_size:
            self._start_over()  # a memo, not a record: starting over changes no word (ids number words afresh)
        memo = self._memo
        data = np.frombuffer(raw, dtype=np.uint8)
        first = int(memo.counts[0])
        chunk_u = np.empty(len(data) // 2 + 1, dtype=np.int32)  # chunks are non-empty and apart
        space = white_space()

        def scan(memo: Interned, i: int, k: int) -> tuple[int, int]:
            return _chunks(
                data, i, k, space, memo.table, memo.hashes, memo.starts, memo.arena, memo.counts, chunk_u
            )

        try:
            k = scan_growing(memo, scan, len(data), lambda i: len(data) - i)
            if int(memo.counts[0]) > first:
                chunks = [chunk.decode("utf-8") for chunk in memo.tokens_since(first)]
                memo.set_runs(first, *self.table.runs(self._words_of(chunks)))
        except BaseException:
            self._start_over()  # chunks added without their words must not stay in the memo
            raise
        return gather(memo.ids, memo.offsets, chunk_u[:k]), self.table
