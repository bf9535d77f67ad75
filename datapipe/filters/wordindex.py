"""A document's words as arrays, for the statistics that need every word: compiled hash-table walks over them.

Built once per document (``FilterDoc.index``) and shared by the rules that count over words: Gopher quality's
symbol words and mean length, Gopher repetition's top and duplicated n-grams. Python loops over the 5.4M words of
the e2e benchmark's pages took ~1 s of the filter stage's ~6 CPU s; these walks are compiled with numba.
"""

from __future__ import annotations

from collections import Counter
from functools import cache

import numpy as np
from datatrove.utils.text import PUNCTUATION_SET

from datapipe.kernels.interned import gather
from datapipe.kernels.jit import kernel
from datapipe.kernels.spans import same_span
from datapipe.languages.chunk_ids import WordTable

# code point -> whether it is one of datatrove's punctuation characters (a word made only of them is a symbol)
_PUNCTUATION = np.zeros(max(map(ord, PUNCTUATION_SET)) + 1, dtype=np.bool_)
_PUNCTUATION[[ord(c) for c in PUNCTUATION_SET]] = True


class WordIndex:
    """Word n-grams of one document, counted by compiled hash-table walks (one pass per n).

    Top n-grams compare word by word (datatrove joins them with spaces), so their table holds word ids. Duplicate
    n-grams compare as the concatenation of their words, as datatrove's ``find_all_duplicate`` does ("ab"+"c"
    equals "a"+"bc"): their table holds a polynomial hash of that character span, and a hash that matches is
    confirmed character by character, so the counts are exact.

    Built from the words (``WordIndex(words)``), or from their ids in a table of words (:meth:`from_ids`, what
    a chunk-memoizing splitter gives: the lengths and code points are gathered, not measured again).
    """

    def __init__(self, words: list[str]) -> None:
        self._words: list[str] | None = words
        self._table: WordTable | None = None
        self.lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        self.ends = np.cumsum(self.lengths)
        self._codes: np.ndarray | None = np.frombuffer("".join(words).encode("utf-32-le"), dtype=np.uint32)
        self._ids: np.ndarray | None = None

    @classmethod
    def from_ids(cls, ids: np.ndarray, table: WordTable) -> WordIndex:
        """The index of the words ``table.words[i] for i in ids``."""
        self = cls.__new__(cls)
        self._words, self._table = None, table
        self.lengths = table.lengths[ids]
        self.ends = np.cumsum(self.lengths)
        self._codes = (
            None  # gathered when a rule reads characters (a document the top n-grams remove never does)
        )
        self._ids = ids
        return self

    def __len__(self) -> int:
        return len(self.ends)

    @property
    def codes(self) -> np.ndarray:
        """The words' code points, one word after another (UTF-32)."""
        if self._codes is None:
            assert self._table is not None and self._ids is not None
            self._codes = gather(self._table.codes, self._table.starts, self._ids)
        return self._codes

    @property
    def words(self) -> list[str]:
        """The words, as text (made from the table on first use when built from ids)."""
        if self._words is None:
            assert self._table is not None and self._ids is not None
            self._words = self._table.texts(self._ids)
        return self._words

    def alphabetic(self) -> int:
        """How many words hold a letter (``any(ch.isalpha() for ch in w)``), counted with repeats."""
        if self._table is None:
            counts = Counter(self.words)  # each distinct word tested once
            return sum(c for w, c in counts.items() if any(ch.isalpha() for ch in w))
        assert self._ids is not None
        return int(np.count_nonzero(self._table.alpha[self._ids]))

    def present(self, words: tuple[str, ...]) -> int:
        """How many of ``words`` occur: ``len(set(words).intersection(self.words))``."""
        if self._table is None:
            return len(set(words).intersection(self.words))
        wanted = self._table.lookup(set(words))
        return int(_present(self.ids, np.array(wanted, dtype=np.int64))) if wanted else 0

    @property
    def ids(self) -> np.ndarray:
        """An id per word, equal for equal words."""
        if self._ids is None:
            self._ids = _word_ids(self.codes, self.ends)
        return self._ids

    def non_symbol(self) -> tuple[int, int]:
        """(words that are not only punctuation, their characters): datatrove's Gopher quality counts words
        with ``not PUNCTUATION_SET.issuperset(w)``, its mean word length over the same words."""
        n, chars = _non_symbol(self.codes, self.ends, _PUNCTUATION)
        return int(n), int(chars)

    def first_top(self, rules: tuple[tuple[int, float], ...], text_len: int) -> tuple[int, int]:
        """The first of ``rules`` (n, fraction) whose top n-gram covers more than that fraction of ``text_len``
        characters, and those characters (its words' characters joined by spaces, times its count; the earliest
        n-gram among the most counted, as ``Counter.most_common(1)`` breaks ties), from one compiled call; (-1, 0)
        when none does."""
        ns, fracs = _rule_arrays(rules)
        r, chars = _first_top(self.ids, self.lengths, ns, fracs, text_len)
        return int(r), int(chars)

    def first_duplicate(self, rules: tuple[tuple[int, float], ...], text_len: int) -> tuple[int, int]:
        """The first of ``rules`` (n, fraction) whose repeated n-grams cover more than that fraction of
        ``text_len`` characters, and those characters (datatrove's ``find_all_duplicate``: walk the n-grams; a
        repeat adds its characters and skips n words); (-1, 0) when none does."""
        ns, fracs = _rule_arrays(rules)
        r, chars = _first_duplicate(self.codes, self.ends, ns, fracs, text_len)
        return int(r), int(chars)


@cache
def _rule_arrays(rules: tuple[tuple[int, float], ...]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([n for n, _ in rules], dtype=np.int64), np.array([f for _, f in rules], dtype=np.float64)


_BASE = np.uint64(0x100000001B3)  # odd, so invertible modulo 2**64
_BASE_INV = np.uint64(pow(0x100000001B3, -1, 1 << 64))


@kernel
def _slots(m):  # pragma: no cover - compiled
    """A power of two >= 2m: open addressing stays short."""
    size = 16
    while size < 2 * m:
        size *= 2
    return size


@kernel
def _word_ids(codes, ends):  # pragma: no cover - compiled
    """An id per word, equal for equal words (numbered by first occurrence)."""
    size = _slots(len(ends))
    first = np.full(size, -1, dtype=np.int64)
    mask = np.uint64(size - 1)
    ids = np.empty(len(ends), dtype=np.int64)
    n_ids = 0
    for w in range(len(ends)):
        s = ends[w - 1] if w > 0 else 0
        e = ends[w]
        h = np.uint64(e - s)
        for k in range(s, e):
            h = (h ^ np.uint64(codes[k])) * _BASE
        slot = (h ^ (h >> np.uint64(29))) & mask
        while True:
            q = first[slot]
            if q < 0:
                first[slot] = w
                ids[w] = n_ids
                n_ids += 1
                break
            s2 = ends[q - 1] if q > 0 else 0
            if ends[q] - s2 == e - s and same_span(codes, s2, codes, s, e - s):
                ids[w] = ids[q]
                break
            slot = (slot + np.uint64(1)) & mask
    return ids


@kernel
def _prefix_hashes(codes):  # pragma: no cover - compiled
    """P[i] = sum_{j<i} c_j B^j and B^-i, modulo 2**64 (uint64 arithmetic wraps)."""
    prefix = np.zeros(len(codes) + 1, dtype=np.uint64)
    inverse = np.empty(len(codes) + 1, dtype=np.uint64)
    pw, inv = np.uint64(1), np.uint64(1)
    for i in range(len(codes)):
        inverse[i] = inv
        prefix[i + 1] = prefix[i] + np.uint64(codes[i]) * pw
        pw *= _BASE
        inv *= _BASE_INV
    inverse[len(codes)] = inv
    return prefix, inverse


@kernel
def _non_symbol(codes, ends, punctuation):  # pragma: no cover - compiled
    """(number of words with a character outside ``punctuation``, their total length); an empty word is a symbol
    (``issuperset`` of the empty set)."""
    n, chars, start = 0, 0, 0
    size = len(punctuation)
    for w in range(len(ends)):
        end = ends[w]
        for k in range(start, end):
            c = codes[k]
            if c >= size or not punctuation[c]:
                n += 1
                chars += end - start
                break
        start = end
    return n, chars


@kernel
def _present(ids, wanted):  # pragma: no cover - compiled
    """How many of the distinct ``wanted`` ids occur in ``ids`` (stops once all are found)."""
    found = np.zeros(len(wanted), dtype=np.bool_)
    left = len(wanted)
    for w in ids:
        for j in range(len(wanted)):
            if wanted[j] == w and not found[j]:
                found[j] = True
                left -= 1
                if left == 0:
                    return len(wanted)
    return len(wanted) - left


@kernel
def _first_top(ids, lengths, ns, fracs, text_len):  # pragma: no cover - compiled
    """(first rule r whose top ns[r]-gram's characters / text_len > fracs[r], those characters), else (-1, 0).

    datatrove's ``find_top_duplicate`` over ``get_n_grams`` for each n in turn: the n-grams of word ids counted in
    one open-addressing table for every n (sized for the most n-grams), the best kept as counts grow: the one counted
    most, the earliest among equals (``Counter.most_common(1)``'s tie); its characters are its words' joined by
    spaces, times its count."""
    size = _slots(len(ids))
    first = np.empty(size, dtype=np.int64)
    count = np.empty(size, dtype=np.int64)
    mask = np.uint64(size - 1)
    for r in range(len(ns)):
        n = ns[r]
        m = len(ids) - n + 1
        if m < 1:
            continue
        first[:] = -1
        best, start = 0, 0
        for i in range(m):
            h = np.uint64(0)
            for k in range(n):
                h = (h ^ np.uint64(ids[i + k])) * _BASE
            slot = (h ^ (h >> np.uint64(29))) & mask
            while True:
                q = first[slot]
                if q < 0:
                    first[slot], count[slot] = i, 1
                    c, q = 1, i
                    break
                if same_span(ids, q, ids, i, n):
                    count[slot] += 1
                    c = count[slot]
                    break
                slot = (slot + np.uint64(1)) & mask
            if c > best or (c == best and q < start):
                best, start = c, q
        chars = n - 1
        for k in range(start, start + n):
            chars += lengths[k]
        if chars * best / text_len > fracs[r]:
            return r, chars * best
    return -1, 0


@kernel
def _first_duplicate(codes, ends, ns, fracs, text_len):  # pragma: no cover - compiled
    """(first rule r whose repeated ns[r]-grams' characters / text_len > fracs[r], those characters), else
    (-1, 0). datatrove's ``find_all_duplicate`` for each n in turn: visited n-grams go into a set (keyed by the
    span's hash, shifted to start at B^0, and confirmed by its characters); a visited n-gram already there is a
    repeat: add its characters, skip n. The prefix hashes and one table are made once for all n."""
    prefix, inverse = _prefix_hashes(codes)
    size = _slots(len(ends))
    visited = np.empty(size, dtype=np.int64)
    hashes = np.empty(size, dtype=np.uint64)
    mask = np.uint64(size - 1)
    for r in range(len(ns)):
        n = ns[r]
        m = len(ends) - n + 1
        repeated = 0
        if m > 1:
            visited[:] = -1
            idx = 0
            while idx < m:
                s = ends[idx - 1] if idx > 0 else 0
                e = ends[idx + n - 1]
                h = (prefix[e] - prefix[s]) * inverse[s]
                slot = (h ^ (h >> np.uint64(29))) & mask
                found = False
                while visited[slot] >= 0:
                    if hashes[slot] == h:
                        q = visited[slot]
                        s2 = ends[q - 1] if q > 0 else 0
                        if ends[q + n - 1] - s2 == e - s and same_span(codes, s2, codes, s, e - s):
                            found = True
                            break
                    slot = (slot + np.uint64(1)) & mask
                if found:
                    repeated += e - s
                    idx += n
                else:
                    visited[slot], hashes[slot] = idx, h
                    idx += 1
        if repeated / text_len > fracs[r]:
            return r, repeated
    return -1, 0
