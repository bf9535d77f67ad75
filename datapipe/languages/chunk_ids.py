"""A text's words as ids, for the splitters whose words are those of its whitespace-separated chunks in order.

Why: spaCy's rule-based tokenizers split each chunk of ``str.split()`` on its own, and
:class:`datapipe.languages.spacy_words.WordSplitter` memoizes per chunk. With the memo warm, the per-chunk Python
work around it (``str.split``, the set of new chunks, joining the memo's tuples) still took 0.73 CPU s over the e2e
benchmark's 3,415 pages, and the filters then measured every word again to index it (lengths, code points, ids:
:class:`datapipe.filters.wordindex.WordIndex`). Here one compiled pass splits the text's UTF-8 bytes where
``str.split`` does and looks each chunk up in a memo of its words' ids (:class:`datapipe.kernels.interned.Interned`);
a chunk met for the first time is split by the splitter's own rules and remembered. A word's id numbers it in a
:class:`WordTable` of every word met so far, which also holds its length and code points, so a document's word
arrays are gathered by id rather than measured.

New chunks: for English the splitter hands over its first two tiers compiled (letters only; spaCy's affix rules,
:mod:`datapipe.languages.affix_kernel`), and :func:`_words_of_chunks` splits each new chunk and numbers its words in
the table without making a Python string; the chunks it declines (a special case, a character past the tables)
go to the splitter's ``words_of`` as every new chunk does for other languages. A chunk whose middle holds a dot
is asked of English's URL pattern (``re``) and split on a second pass. Over the e2e benchmark's pages that one
worker splits (1,707 texts, 122k new chunks), the split with a cold memo took 0.78 CPU s in the Python tiers and
0.35 s so (warm: 0.10 s), each build worker's filter stage ~0.4 s less.

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

import numpy as np

from datapipe.kernels.interned import Interned, find, fnv, gather, has_room, insert, scan_growing
from datapipe.kernels.jit import kernel, leaf
from datapipe.kernels.utf8 import TABLE_END, decode, every_character, utf8_within
from datapipe.languages.affix_kernel import (
    ASK_URL,
    DECLINED,
    AffixProgram,
    affix_tokens,
    letters,
    one_word,
    scratch_size,
)

MAX_CHARS = 1 << 20  # a longer text is split by the splitter's ``split`` (see the module's docstring)
MAX_CHUNK_BYTES = 1 << 16  # a longer chunk is split by ``words_of`` (the compiled tiers' scratch is its size)


@cache
def white_space() -> np.ndarray:
    """Each code point below ``TABLE_END``: whether ``str.isspace`` (what ``str.split`` splits on) says it is."""
    chars = every_character(TABLE_END)
    return np.fromiter(map(str.isspace, chars), dtype=np.bool_, count=len(chars))


class WordTable:
    """Every word met so far, numbered: its UTF-8 bytes in an interning table (:class:`Interned`, which numbers
    it), its length in code points, its code points (UTF-32) and whether it holds a letter, the arrays a document's
    :class:`~datapipe.filters.wordindex.WordIndex` gathers from by id. Words are added by compiled code (a chunk
    the compiled affix tier splits, :func:`_words_of_chunks`) or from Python (:meth:`runs`), to the same table.
    Append-only: a document's ids stay valid while the table grows."""

    def __init__(self) -> None:
        self.interned = Interned(1 << 14, 1 << 18, 1)  # the words' bytes; word w is token w
        self.lengths = np.zeros(1 << 14, dtype=np.int64)
        self.alpha = np.zeros(1 << 14, dtype=np.bool_)  # Gopher's alphabetic word: a letter anywhere in it
        # word w's code points: codes[starts[w]:starts[w + 1]]
        self.starts = np.zeros((1 << 14) + 1, dtype=np.int64)
        self.codes = np.zeros(1 << 16, dtype=np.uint32)
        self._known: dict[str, int] = {}  # words looked up and found (:meth:`lookup`)

    def __len__(self) -> int:
        return int(self.interned.counts[0])

    def reserve(self, words: int, points: int) -> None:
        """Room for this many more words of this many code points in all (UTF-8 takes at most 4 bytes a code
        point)."""
        n = len(self)
        self.interned.reserve(words, 4 * points, 0)
        if n + words + 1 > len(self.lengths):
            size = max(2 * len(self.lengths), n + words + 1)
            self.lengths = np.resize(self.lengths, size)
            self.alpha = np.resize(self.alpha, size)
            self.starts = np.resize(self.starts, size + 1)
        used = int(self.starts[n])
        if used + points > len(self.codes):
            self.codes = np.resize(self.codes, max(2 * len(self.codes), used + points))

    def arrays(
        self,
    ) -> tuple[
        np.ndarray,
        np.ndarray,
        np.ndarray,
        np.ndarray,
        np.ndarray,
        np.ndarray,
        np.ndarray,
        np.ndarray,
        np.ndarray,
    ]:
        """What the compiled code that adds words takes, in its order."""
        it = self.interned
        return (
            it.table,
            it.hashes,
            it.starts,
            it.arena,
            it.counts,
            self.lengths,
            self.alpha,
            self.starts,
            self.codes,
        )

    def texts(self, ids: np.ndarray) -> list[str]:
        """The words of ``ids``, as text."""
        it = self.interned
        got: dict[int, str] = {}
        for w in dict.fromkeys(ids.tolist()):
            got[w] = it.arena[int(it.starts[w]) : int(it.starts[w + 1])].tobytes().decode("utf-8")
        return [got[w] for w in ids.tolist()]

    def lookup(self, words: set[str] | frozenset[str]) -> list[int]:
        """The numbers of those of ``words`` the table holds (a rule's stop words, asked for every document: a
        word found keeps its number, so it is remembered)."""
        known = self._known
        out = [known[w] for w in words if w in known]
        rest = [w for w in words if w not in known]
        if rest:
            encoded = [w.encode("utf-8", errors="surrogatepass") for w in rest]
            data = np.frombuffer(b"".join(encoded) or b"\0", dtype=np.uint8)
            sizes = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
            it = self.interned
            found = _find_words(data, sizes, it.table, it.hashes, it.starts, it.arena).tolist()
            for w, u in zip(rest, found, strict=True):
                if u >= 0:
                    known[w] = u
                    out.append(u)
        return out

    def runs(self, runs: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
        """The runs' words as their numbers, one run after another, and each run's length; words not yet in the
        table are numbered (all at once)."""
        words = list(chain.from_iterable(runs))
        encoded = [w.encode("utf-8") for w in words]
        data = np.frombuffer(b"".join(encoded) or b"\0", dtype=np.uint8)
        sizes = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        self.reserve(len(words), len(data))
        ids = np.empty(len(words), dtype=np.int32)
        beyond = np.empty(len(words), dtype=np.int64)
        n_beyond = _add_words(data, sizes, *self.arrays(), letters(), ids, beyond)
        for w in beyond[:n_beyond].tolist():  # a character past the letters table: Python's own test
            self.alpha[w] = any(map(str.isalpha, self.texts(np.array([w]))[0]))
        return ids, np.fromiter(map(len, runs), dtype=np.int64, count=len(runs))


@kernel
def _find_words(data, sizes, table, hashes, starts, arena):  # pragma: no cover - compiled
    """The number of each word of ``data`` (UTF-8, ``sizes`` bytes each) in the table, or -1."""
    out = np.empty(len(sizes), dtype=np.int64)
    s = 0
    for j in range(len(sizes)):
        e = s + sizes[j]
        out[j] = find(table, hashes, starts, arena, data, s, e, fnv(data, s, e))[0]
        s = e
    return out


@leaf
def _add_word(
    data, s, e, points, p0, p1, table, hashes, starts, arena, counts, lengths, alpha, cstarts, codes, letters
):  # pragma: no cover - compiled
    """The number of the word ``data[s:e]`` (its code points ``points[p0:p1]``), added if new (the caller made
    room); negative (-1 - number) for a new word with a code point past ``letters``, whose letter test is left to
    the caller."""
    h = fnv(data, s, e)
    u, slot = find(table, hashes, starts, arena, data, s, e, h)
    if u >= 0:
        return u
    u = insert(table, slot, hashes, starts, arena, counts, data, s, e, h)
    c0 = cstarts[u]
    has_letter, beyond = False, False
    for q in range(p0, p1):
        c = points[q]
        codes[c0 + q - p0] = c
        if c >= len(letters):
            beyond = True
        elif letters[c]:
            has_letter = True
    cstarts[u + 1] = c0 + p1 - p0
    lengths[u] = p1 - p0
    alpha[u] = has_letter
    return -1 - u if beyond and not has_letter else u


@kernel
def _add_words(
    data, sizes, table, hashes, starts, arena, counts, lengths, alpha, cstarts, codes, letters, ids, beyond
):  # pragma: no cover - compiled
    """Each word of ``data`` (UTF-8, ``sizes`` bytes each) numbered into ``ids``, new ones added (the caller made
    room); the new words whose letter test is the caller's go to ``beyond``, their count returned."""
    points = np.empty(len(data) + 1, dtype=np.int64)
    s, n_beyond = 0, 0
    for j in range(len(sizes)):
        e = s + sizes[j]
        i, p = s, 0
        while i < e:
            c, length = decode(data, i)
            points[p] = c
            p += 1
            i += length
        u = _add_word(
            data,
            s,
            e,
            points,
            0,
            p,
            table,
            hashes,
            starts,
            arena,
            counts,
            lengths,
            alpha,
            cstarts,
            codes,
            letters,
        )
        if u < 0:
            u = -1 - u
            beyond[n_beyond] = u
            n_beyond += 1
        ids[j] = u
        s = e
    return n_beyond


@kernel
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


@kernel
def _words_of_chunks(
    m_starts, m_arena, first, todo, j, program, vm, letters, urls, table, hashes, starts, arena, counts, lengths, alpha,
    cstarts, codes, points, pos, spans, scratch, out, k, where, sizes,
):  # fmt: skip  # pragma: no cover - compiled
    """The words of the memo's new chunks ``first + c`` for ``c`` in ``todo[j:]`` (their UTF-8 in ``m_arena``) by
    English's first two tiers, numbered in the table of words: chunk ``c``'s ids to ``out[where[c]:][:sizes[c]]``
    (from ``k`` on). ``sizes[c]`` is -1 for a chunk declined (a code point past the tables, a chunk over
    :data:`MAX_CHUNK_BYTES`, or one the affix tier declines: the Python tiers split it), and
    :data:`~datapipe.languages.affix_kernel.ASK_URL` for one whose middle the URL pattern decides while
    ``urls[c]`` is negative (``re`` not asked yet; ``where[c]`` then holds the middle's bytes from the chunk's
    start, ``lo * (MAX_CHUNK_BYTES + 1) + hi``). Returns (where it stopped in ``todo``, ids so far): at the end, or before a chunk the table of words has
    no room for (the caller grows it and goes on)."""
    while j < len(todo):
        c = todo[j]
        u = first + c
        b0, b1 = m_starts[u], m_starts[u + 1]
        sizes[c] = DECLINED
        if b1 - b0 > MAX_CHUNK_BYTES:
            j += 1
            continue
        n, i, fits = 0, b0, True
        while i < b1:
            cp, length = decode(m_arena, i)
            if cp >= TABLE_END:
                fits = False
                break
            points[n] = cp
            pos[n] = i
            n += 1
            i += length
        if not fits:
            j += 1
            continue
        pos[n] = b1
        used = counts[0]
        if not (
            used + n + 2 <= len(hashes)
            and 2 * (used + n + 1) <= len(table)
            and counts[1] + b1 - b0 <= len(arena)
            and used + n + 2 <= len(cstarts)
            and cstarts[used] + n <= len(codes)
        ):
            return j, k
        if one_word(points, pos, m_arena, n, program, vm):
            spans[0, 0], spans[0, 1] = 0, n  # letters only, not a special case: one word
            t = 1
        else:
            t = affix_tokens(points, pos, m_arena, 0, n, program, vm, spans, 0, scratch, urls[c])
        if t == ASK_URL:
            sizes[c] = ASK_URL
            where[c] = (pos[spans[0, 0]] - b0) * (MAX_CHUNK_BYTES + 1) + (pos[spans[0, 1]] - b0)
        elif t != DECLINED:
            for q in range(t):
                a, b = spans[q, 0], spans[q, 1]
                out[k + q] = _add_word(
                    m_arena, pos[a], pos[b], points, a, b, table, hashes, starts, arena, counts, lengths, alpha,
                    cstarts, codes, letters,
                )  # fmt: skip  # no code point here is past the letters table: never negative
            where[c] = k
            sizes[c] = t
            k += t
        j += 1
    return j, k


@kernel
def _in_order(out, where, sizes):  # pragma: no cover - compiled
    """Each chunk's ids (``out[where[c]:][:sizes[c]]``), one chunk after another."""
    total = 0
    for c in range(len(sizes)):
        total += sizes[c]
    got = np.empty(total, dtype=out.dtype)
    k = 0
    for c in range(len(sizes)):
        got[k : k + sizes[c]] = out[where[c] : where[c] + sizes[c]]
        k += sizes[c]
    return got


@kernel
def _set_runs(out, where, sizes, first, ids, offsets, counts):  # pragma: no cover - compiled
    """:meth:`Interned.set_runs` of :func:`_in_order`'s ids and ``sizes`` in one pass: chunk ``first + c``'s ids
    are ``out[where[c]:][:sizes[c]]``, written after the memo's ids. Returns 1 when written; nothing is written
    and it returns 0 when the memo's ids have no room for them (the caller grows it and calls again), -1 when a
    chunk has no ids yet (``sizes[c]`` negative: the caller splits those first; asking here spares a reduction
    over ``sizes`` per text)."""
    total = 0
    for c in range(len(sizes)):
        if sizes[c] < 0:
            return -1
        total += sizes[c]
    q = counts[2]
    if q + total > len(ids):
        return 0
    for c in range(len(sizes)):
        w = where[c]
        for i in range(sizes[c]):
            ids[q + i] = out[w + i]
        q += sizes[c]
        offsets[first + 1 + c] = q
    counts[2] = q
    return 1


class ChunkIds:
    """``split(text)``: the ids of ``text``'s words in a :class:`WordTable` (with the table), the words of each
    chunk of ``text.split()`` being ``words_of([chunk])[0]``; None for a text with a lone surrogate or over
    ``max_chars`` characters. With ``program`` (English's affix tier compiled, :mod:`datapipe.languages.affix_kernel`),
    new chunks are split and numbered in compiled code, and only those it declines go to ``words_of``."""

    def __init__(
        self,
        words_of: Callable[[list[str]], list[tuple[str, ...]]],
        memo_size: int,
        max_chars: int = MAX_CHARS,
        program: AffixProgram | None = None,
    ) -> None:
        """``words_of``: the words of each of several new chunks (a splitter may do them in one call)."""
        self._words_of = words_of
        self._memo_size = memo_size
        self._max_chars = max_chars
        self._program = program
        self._scratch: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._start_over()

    def _start_over(self) -> None:
        self.table = WordTable()
        self._memo = Interned()

    def _places(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The compiled tiers' places for a chunk of up to :data:`MAX_CHUNK_BYTES` (code points, their bytes'
        places, token spans, the affix searches' scratch), made once: per text they cost more than the split
        of a few new chunks (np.empty untouched holds no memory)."""
        if self._scratch is None:
            n = MAX_CHUNK_BYTES + 1
            self._scratch = (
                np.empty(n, dtype=np.int64),
                np.empty(n, dtype=np.int64),
                np.empty((n, 2), dtype=np.int64),
                np.empty(scratch_size(n), dtype=np.int64),
            )
        return self._scratch

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
                self._new_words(first)
        except BaseException:
            self._start_over()  # chunks added without their words must not stay in the memo
            raise
        return gather(memo.ids, memo.offsets, chunk_u[:k]), self.table

    def _new_words(self, first: int) -> None:
        """The ids of the words of the memo's chunks from ``first`` on, set as their runs in the memo: by the
        compiled tiers where there are some, the rest by ``words_of``."""
        memo, table, program = self._memo, self.table, self._program
        added = int(memo.counts[0])
        if program is None:
            chunks = [chunk.decode("utf-8") for chunk in memo.tokens_since(first)]
            memo.set_runs(first, *table.runs(self._words_of(chunks)))
            return
        points, pos, spans, scratch = self._places()
        # a word is at least a byte: room for every chunk's words, and for those the Python tiers give after them
        out = np.empty(2 * int(memo.starts[added] - memo.starts[first]) + 1, dtype=np.int32)
        where, sizes = np.zeros(added - first, dtype=np.int64), np.zeros(added - first, dtype=np.int64)
        urls = np.empty(added - first, dtype=np.int64)
        urls.fill(program.url_ask)  # re asked where the URL pattern might match (np.full: 4 us more a text)
        alpha = letters()

        def run(todo: np.ndarray, k: int) -> int:
            j, grown = 0, -1
            while True:
                j, k = _words_of_chunks(
                    memo.starts, memo.arena, first, todo, j, program.arrays, program.vm, alpha, urls, *table.arrays(),
                    points, pos, spans, scratch, out, k, where, sizes,
                )  # fmt: skip
                if j == len(todo):
                    return k
                if j == grown:  # never (the table was just grown for the longest chunk), but must not spin
                    raise RuntimeError("chunk_ids: no room made in the table of words for a chunk's words")
                grown = j
                table.reserve(len(table) + 1024, MAX_CHUNK_BYTES + 1)

        k = run(np.arange(added - first), 0)
        rested = False
        while (done := _set_runs(out, where, sizes, first, memo.ids, memo.offsets, memo.counts)) != 1:
            if done < 0:  # chunks the compiled tiers asked about or declined (few texts have one)
                if rested:
                    raise RuntimeError("chunk_ids: a chunk left without its words after the Python tiers")
                out, rested = self._rest(first, added, out, where, sizes, urls, run, k), True
            else:
                memo.reserve(0, 0, int(sizes.sum()))

    def _rest(
        self,
        first: int,
        added: int,
        out: np.ndarray,
        where: np.ndarray,
        sizes: np.ndarray,
        urls: np.ndarray,
        run: Callable[[np.ndarray, int], int],
        k: int,
    ) -> np.ndarray:
        """The chunks :meth:`_new_words`' compiled pass left: those whose middle the URL pattern decides (asked
        of ``re``, then split again) and those declined (split by ``words_of``, their ids after the others'
        ``k``). Returns ``out``, grown where it had no room for them."""
        memo, table, program = self._memo, self.table, self._program
        assert program is not None
        ask = np.flatnonzero(sizes == ASK_URL)
        if len(ask):
            arena, base = memo.arena, memo.starts[first:added]
            for c, at in zip(ask.tolist(), where[ask].tolist(), strict=True):
                lo, hi = divmod(at, MAX_CHUNK_BYTES + 1)
                middle = arena[base[c] + lo : base[c] + hi].tobytes().decode("utf-8")
                urls[c] = program.url_match(middle) is not None
            k = run(ask, k)
        declined = np.flatnonzero(sizes == DECLINED)
        if len(declined):
            raw = memo.tokens_since(first)
            ids, counts = table.runs(self._words_of([raw[c].decode("utf-8") for c in declined.tolist()]))
            if k + len(ids) > len(out):
                out = np.resize(out, k + len(ids))
            out[k : k + len(ids)] = ids
            where[declined] = k + np.concatenate(([0], np.cumsum(counts)[:-1]))
            sizes[declined] = counts
        return out
