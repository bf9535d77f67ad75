"""GPT-2's pre-tokenizer in compiled code, each piece's token ids looked up in a memo that tiktoken fills.

Why: tiktoken took 0.90 CPU s for the e2e benchmark's 1,512 kept pages (15.3M characters, one process), most of
it in its regular expression (``fancy-regex``, whose look-ahead ``\\s+(?!\\S)`` keeps it off the fast engines). Here
one compiled pass splits a text's UTF-8 bytes as :data:`datapipe.tokenize.fast.GPT2_PATTERN` does (0.06 s for
the same pages) and finds each piece in a table: every vocabulary entry is its own id, and a piece that is not one
gets the ids tiktoken's own byte-pair encoding gives it (``CoreBPE.encode_single_piece``, what tiktoken does with
each match of its pattern), asked once per piece and process. So the ids are tiktoken's, by construction for a
piece; the split is checked against tiktoken's for every code point the pass handles (``tests/test_tokenizer.py``).

The pattern, ``'(?:[sdmt]|ll|ve|re)| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``, leftmost
alternative first, at each place where the last piece ended:

- an apostrophe followed by ``s``, ``d``, ``m`` or ``t``, or by ``ll``, ``ve`` or ``re`` (lower case only) is a
  piece, whatever follows it;
- otherwise a space followed by a letter, a digit or another character (not white space) starts a piece of that
  class, as does such a character itself; the piece runs while the class does (an apostrophe inside a run of
  other characters stays in it);
- a run of white space is a piece less its last character when a character that is not white space follows it and
  the run is longer than one (that last space starts the next piece); else it is the whole run.

Classes: ``\\p{L}`` and ``\\p{N}`` as the ``regex`` module reads them, and Unicode's White_Space property (what
``\\s`` is in Rust's regex, not ``str.isspace``, which adds U+001C-U+001F). A text holding a code point at or above
:data:`~datapipe.kernels.utf8.TABLE_END`, one that ``regex`` and Python's ``unicodedata`` class differently, or
that either has as unassigned (Unicode versions differ between them and tiktoken's build: a letter new in one is
an unassigned character in another) goes to tiktoken whole; so does a text with a lone surrogate, and one over
:data:`MAX_CHARS` characters (the pass holds ~30 bytes per byte of text; tiktoken splits as it goes).
"""

from __future__ import annotations

import unicodedata
from functools import cache
from itertools import chain
from typing import Any

import numpy as np

from datapipe.kernels.interned import Interned, fill, find, fnv, gather, has_room, insert, scan_growing
from datapipe.kernels.jit import kernel, leaf
from datapipe.kernels.tables import stored
from datapipe.kernels.utf8 import TABLE_END, decode, every_character, utf8_within

OTHER, LETTER, NUMBER, SPACE, UNSURE = 0, 1, 2, 3, 4
# Unicode's White_Space property (PropList.txt): what \s matches in Rust's regex
WHITE_SPACE = (
    *range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000,
)  # fmt: skip
MEMO_PIECES = 1_000_000  # distinct pieces a worker remembers beyond the vocabulary before it starts over
# a longer text goes to tiktoken, which splits as it goes: the pass's arrays take ~30 bytes per byte of text
MAX_CHARS = 1 << 20


@cache
def classes() -> np.ndarray:
    """Each code point below ``TABLE_END``: OTHER, LETTER, NUMBER, SPACE, or UNSURE (see the module's docstring);
    built once per machine (:mod:`datapipe.kernels.tables`: 0.03 s of a worker's first text)."""
    import regex

    return stored("gpt2-classes", {"regex": regex.__version__}, lambda: {"classes": _classes(regex)})[
        "classes"
    ]


def _classes(regex: Any) -> np.ndarray:
    chars = every_character(TABLE_END)
    ours = np.zeros(TABLE_END, dtype=np.uint8)  # as the regex module reads them
    for kind, pattern in ((LETTER, r"\p{L}+"), (NUMBER, r"\p{N}+")):
        for m in regex.finditer(pattern, chars):
            ours[m.start() : m.end()] = kind  # a character's place in ``chars`` is its code point
    ours[list(WHITE_SPACE)] = SPACE
    category = np.array(list(map(unicodedata.category, chars)))
    theirs = np.where(
        np.char.startswith(category, "L"), LETTER, np.where(np.char.startswith(category, "N"), NUMBER, OTHER)
    ).astype(np.uint8)
    theirs[list(WHITE_SPACE)] = SPACE
    unassigned = category == "Cn"
    for m in regex.finditer(r"[\p{Cn}\p{Cs}]+", chars):
        unassigned[m.start() : m.end()] = True
    ours[(ours != theirs) | unassigned] = UNSURE
    return ours


@kernel
def _split(data, classes, points, starts):  # pragma: no cover - compiled
    """The text's code points, and where each starts in ``data``; -1 when one is UNSURE or beyond the table."""
    m, i, n = 0, 0, len(data)
    while i < n:
        c, length = decode(data, i)
        if c >= len(classes) or classes[c] == UNSURE:
            return -1
        points[m], starts[m] = c, i
        m += 1
        i += length
    starts[m] = n
    return m


@leaf
def _piece_end(points, m, i, classes):  # pragma: no cover - compiled
    """Where the piece that starts at code point ``i`` ends (GPT2_PATTERN, as the module's docstring tells)."""
    c = points[i]
    if c == 39 and i + 1 < m:  # an apostrophe: 's 'd 'm 't, 'll 've 're
        d = points[i + 1]
        if d == 115 or d == 100 or d == 109 or d == 116:
            return i + 2
        if i + 2 < m:
            e = points[i + 2]
            if (d == 108 and e == 108) or (d == 118 and e == 101) or (d == 114 and e == 101):
                return i + 3
    if c == 32 and i + 1 < m and classes[points[i + 1]] != SPACE:  # a space, then a letter, digit or other
        kind, j = classes[points[i + 1]], i + 1
    else:
        kind, j = classes[c], i
    if kind == SPACE:
        while j < m and classes[points[j]] == SPACE:
            j += 1
        return j if j == m or j - 1 == i else j - 1
    while j < m and classes[points[j]] == kind:
        j += 1
    return j


@kernel
def _pieces(
    data, points, starts, m, i, k, table, hashes, arena_starts, arena, counts, classes, piece_u
):  # pragma: no cover - compiled
    """From code point ``i`` on, each piece's number in the memo into ``piece_u`` (from ``k`` on), a new piece
    added (:func:`~datapipe.kernels.interned.has_room`). Returns (where it stopped, pieces so far): at ``m``, or
    before a new piece the memo has no room for; (``m``, -1) when the split makes no progress."""
    while i < m:
        j = _piece_end(points, m, i, classes)
        if j <= i:  # never (every piece holds a character), but a kernel that writes by index must not loop
            return m, -1
        s, e = starts[i], starts[j]
        h = fnv(data, s, e)
        u, slot = find(table, hashes, arena_starts, arena, data, s, e, h)
        if u < 0:
            if not has_room(table, hashes, arena, counts, e - s):
                return i, k
            u = insert(table, slot, hashes, arena_starts, arena, counts, data, s, e, h)
        piece_u[k] = u
        k += 1
        i = j
    return m, k


def vocabulary_table(ranks: dict[bytes, int]) -> Interned:
    """The vocabulary as an interning table: each entry's bytes, its one id (its rank)."""
    entries = sorted(ranks, key=ranks.__getitem__)
    vocab = Interned(len(entries) + 1, sum(map(len, entries)) + 1, len(entries) + 1)
    lengths = np.fromiter(map(len, entries), dtype=np.int64, count=len(entries))
    fill(
        vocab.table,
        vocab.hashes,
        vocab.starts,
        vocab.arena,
        vocab.counts,
        np.frombuffer(b"".join(entries), dtype=np.uint8),
        lengths,
    )
    n = len(entries)
    vocab.offsets[: n + 1] = np.arange(n + 1)
    vocab.ids[:n] = np.fromiter((ranks[e] for e in entries), dtype=np.int32, count=n)
    vocab.counts[2] = n
    return vocab


class PieceEncoder:
    """``encode(text)``: tiktoken's ids for ``text`` (``encode_ordinary``), or None for a text the compiled split
    does not take (the caller asks tiktoken)."""

    def __init__(
        self,
        core: Any,
        ranks: dict[bytes, int],
        memo_pieces: int = MEMO_PIECES,
        max_chars: int = MAX_CHARS,
        vocab: Interned | None = None,
    ) -> None:
        """``core``: the tiktoken ``CoreBPE`` whose ``encode_single_piece`` gives a piece's ids; ``ranks``: its
        vocabulary (each entry's bytes -> its id); ``vocab``: :func:`vocabulary_table` of ``ranks``, when the
        caller has it (it is only read)."""
        self.core = core
        self.memo_pieces = memo_pieces
        self.max_chars = max_chars
        vocab = vocabulary_table(ranks) if vocab is None else vocab
        self._vocab, self._vocab_size = vocab, int(vocab.counts[0])
        self._memo = vocab.copy()  # the vocabulary itself is never written: the memo starts over from it

    def encode(self, text: str) -> np.ndarray | None:
        raw = utf8_within(text, self.max_chars)
        if raw is None:
            return None
        data = np.frombuffer(raw, dtype=np.uint8)
        points = np.empty(len(data), dtype=np.int32)
        starts = np.empty(len(data) + 1, dtype=np.int64)
        table = classes()
        m = _split(data, table, points, starts)
        if m < 0:
            return None
        if int(self._memo.counts[0]) - self._vocab_size > self.memo_pieces:
            self._memo = self._vocab.copy()  # a memo, not a record: starting over changes no id
        memo = self._memo
        first = int(memo.counts[0])
        piece_u = np.empty(m, dtype=np.int32)  # a piece holds a code point at least

        def scan(memo: Interned, i: int, k: int) -> tuple[int, int]:
            return _pieces(
                data, points, starts, m, i, k, memo.table, memo.hashes, memo.starts, memo.arena, memo.counts,
                table, piece_u,
            )  # fmt: skip

        try:
            k = scan_growing(memo, scan, m, lambda i: len(data) - int(starts[i]))
            if k >= 0 and int(memo.counts[0]) > first:
                # tiktoken's own byte-pair encoding of each new piece, once per piece and process
                found = [self.core.encode_single_piece(piece) for piece in memo.tokens_since(first)]
                ids = np.fromiter(chain.from_iterable(found), dtype=np.int32, count=sum(map(len, found)))
                memo.set_runs(first, ids, np.fromiter(map(len, found), dtype=np.int64, count=len(found)))
        except BaseException:
            self._memo = self._vocab.copy()  # pieces added without their ids must not stay in the memo
            raise
        if k < 0:
            self._memo = self._vocab.copy()
            return None
        return gather(memo.ids, memo.offsets, piece_u[:k]).view(np.uint32)  # token ids are not negative
