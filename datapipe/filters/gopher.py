"""Gopher's quality and repetition rules (Rae et al. 2021, Table A1), with datatrove's exact semantics.

Decisions and reason names equal datatrove's ``GopherQualityFilter`` and ``GopherRepetitionFilter`` on the same
text (tested on every fixture document); only the word splitting is faster (memoized, see ``words.py``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import partial

import numba
import numpy as np
from datatrove.utils.text import PUNCTUATION_SET

from datapipe.filters.document import FilterDoc
from datapipe.kernels.spans import same_span
from datapipe.runtime.evidence import Removal

STOP_WORDS = ("the", "be", "to", "of", "and", "that", "have", "with")


@dataclass(frozen=True)
class GopherQuality:
    min_doc_words: int | None = 50
    max_doc_words: int | None = 100_000
    min_avg_word_length: float | None = 3
    max_avg_word_length: float | None = 10
    max_symbol_word_ratio: float | None = 0.1
    max_bullet_lines_ratio: float | None = 0.9
    max_ellipsis_lines_ratio: float | None = 0.3
    max_non_alpha_words_ratio: float | None = 0.8  # at least this share of words must contain a letter
    min_stop_words: int | None = 2
    stop_words: tuple[str, ...] = STOP_WORDS

    def __call__(self, doc: FilterDoc) -> str | None:
        text = doc.text
        words = doc.words
        n_words = len(words)
        if n_words == 0:
            return Removal("gopher_short_doc", "words", 0)
        # per distinct word, then weighted by its count: the same sums as datatrove's per-word loops
        counts = Counter(words)
        non_symbol = [(w, c) for w, c in counts.items() if not PUNCTUATION_SET.issuperset(w)]
        n_non_symbol = sum(c for _, c in non_symbol)
        if self.min_doc_words and n_non_symbol < self.min_doc_words:
            return Removal("gopher_short_doc", "words", n_non_symbol, "<", self.min_doc_words)
        if self.max_doc_words and n_non_symbol > self.max_doc_words:
            return Removal("gopher_long_doc", "words", n_non_symbol, ">", self.max_doc_words)
        if n_non_symbol:  # datatrove takes the mean of an empty list as NaN, which fails no comparison
            avg = sum(len(w) * c for w, c in non_symbol) / n_non_symbol
            if self.min_avg_word_length and avg < self.min_avg_word_length:
                return Removal(
                    "gopher_below_avg_threshold", "mean_word_length", avg, "<", self.min_avg_word_length
                )
            if self.max_avg_word_length and avg > self.max_avg_word_length:
                return Removal(
                    "gopher_above_avg_threshold", "mean_word_length", avg, ">", self.max_avg_word_length
                )
        if self.max_symbol_word_ratio and (hashes := text.count("#") / n_words) > self.max_symbol_word_ratio:
            return Removal(
                "gopher_too_many_hashes", "hashes_per_word", hashes, ">", self.max_symbol_word_ratio
            )
        if (
            self.max_symbol_word_ratio
            and (dots := (text.count("...") + text.count("…")) / n_words) > self.max_symbol_word_ratio
        ):
            return Removal(
                "gopher_too_many_ellipsis", "ellipses_per_word", dots, ">", self.max_symbol_word_ratio
            )
        lines = text.splitlines()
        if lines:
            if self.max_bullet_lines_ratio:
                bullets = sum(s.lstrip().startswith(("•", "-")) for s in lines)
                if bullets / len(lines) > self.max_bullet_lines_ratio:
                    return Removal(
                        "gopher_too_many_bullets",
                        "bullet_lines_share",
                        bullets / len(lines),
                        ">",
                        self.max_bullet_lines_ratio,
                    )
            if self.max_ellipsis_lines_ratio:
                ellipsis = sum(s.rstrip().endswith(("...", "…")) for s in lines)
                if ellipsis / len(lines) > self.max_ellipsis_lines_ratio:
                    return Removal(
                        "gopher_too_many_end_ellipsis",
                        "ellipsis_lines_share",
                        ellipsis / len(lines),
                        ">",
                        self.max_ellipsis_lines_ratio,
                    )
        if self.max_non_alpha_words_ratio:
            alpha = sum(c for w, c in counts.items() if any(ch.isalpha() for ch in w))
            if alpha / n_words < self.max_non_alpha_words_ratio:
                return Removal(
                    "gopher_below_alpha_threshold",
                    "alphabetic_words_share",
                    alpha / n_words,
                    "<",
                    self.max_non_alpha_words_ratio,
                )
        if (
            self.min_stop_words
            and (stops := len(set(self.stop_words).intersection(counts))) < self.min_stop_words
        ):
            return Removal("gopher_enough_stop_words", "stop_words", stops, "<", self.min_stop_words)
        return None


def split_paragraphs_and_lines(text: str) -> tuple[list[str], list[str]]:
    """``(re.split(r"\n{2,}", text.strip()), re.split("\n+", text))``, the way datatrove splits them, from one
    ``str.split``: a run of k newlines leaves k - 1 empty pieces between two lines (~3x faster than the regexes)."""
    parts = text.split("\n")
    lines = parts if len(parts) < 3 else [parts[0], *filter(None, parts[1:-1]), parts[-1]]
    body = text.strip()
    if body is not text:
        parts = body.split("\n")
    # an empty piece is inside a run of two or more newlines (the stripped text neither starts nor ends with one)
    paragraphs, start = [], 0
    for i, part in enumerate(parts):
        if not part:
            if start < i:
                paragraphs.append("\n".join(parts[start:i]))
            start = i + 1
    paragraphs.append("\n".join(parts[start:]))
    return paragraphs, lines


def top_joined_chars(words: list[str], n: int) -> int:
    """Characters covered by the most frequent n-gram, its words joined by spaces, as datatrove counts them."""
    joined, count = Counter(" ".join(words[i : i + n]) for i in range(len(words) - n + 1)).most_common(1)[0]
    return len(joined) * count


def repeated_elements(items: list[str]) -> tuple[int, int]:
    """(number of repeated elements, characters in them), counting every occurrence after the first."""
    seen: set[str] = set()
    n = chars = 0
    for x in items:
        if x in seen:
            n += 1
            chars += len(x)
        else:
            seen.add(x)
    return n, chars


class _NgramIndex:
    """Word n-grams of one document, counted by compiled hash-table walks (one pass per n).

    Top n-grams compare word by word (datatrove joins them with spaces), so their table holds word ids. Duplicate
    n-grams compare as the concatenation of their words, as datatrove's ``find_all_duplicate`` does ("ab"+"c"
    equals "a"+"bc"): their table holds a polynomial hash of that character span, and a hash that matches is
    confirmed character by character, so the counts are exact.
    """

    def __init__(self, words: list[str]) -> None:
        self.words = words
        self.lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        self.ends = np.cumsum(self.lengths)
        self.codes = np.frombuffer("".join(words).encode("utf-32-le"), dtype=np.uint32)
        self.ids = _word_ids(self.codes, self.ends)
        self._prefix: tuple[np.ndarray, np.ndarray] | None = None

    def top_chars(self, n: int) -> int:
        """Characters covered by the most frequent n-gram: (its length joined by spaces) x (its count).

        Ties go to the n-gram seen first, as ``Counter.most_common(1)`` breaks them.
        """
        best, start = _top_ngram(self.ids, n)
        chars = int(self.lengths[start : start + n].sum()) + n - 1
        return chars * int(best)

    def duplicate_chars(self, n: int) -> int:
        """datatrove's ``find_all_duplicate``: walk the n-grams; a repeat adds its characters and skips n words."""
        if len(self.words) - n + 1 <= 1:
            return 0
        if self._prefix is None:
            self._prefix = _prefix_hashes(self.codes)
        prefix, inverse = self._prefix
        return int(_duplicate_chars(self.codes, self.ends, n, prefix, inverse))


_BASE = np.uint64(0x100000001B3)  # odd, so invertible modulo 2**64
_BASE_INV = np.uint64(pow(0x100000001B3, -1, 1 << 64))


@numba.njit(cache=True, nogil=True)
def _slots(m):  # pragma: no cover - compiled
    """A power of two >= 2m: open addressing stays short."""
    size = 16
    while size < 2 * m:
        size *= 2
    return size


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True)
def _top_ngram(ids, n):  # pragma: no cover - compiled
    """(count of the most frequent n-gram of word ids, its first position); the earliest among equal counts."""
    m = len(ids) - n + 1
    size = _slots(m)
    first = np.full(size, -1, dtype=np.int64)
    count = np.zeros(size, dtype=np.int64)
    mask = np.uint64(size - 1)
    for i in range(m):
        h = np.uint64(0)
        for k in range(n):
            h = (h ^ np.uint64(ids[i + k])) * _BASE
        slot = (h ^ (h >> np.uint64(29))) & mask
        while True:
            q = first[slot]
            if q < 0:
                first[slot], count[slot] = i, 1
                break
            if same_span(ids, q, ids, i, n):
                count[slot] += 1
                break
            slot = (slot + np.uint64(1)) & mask
    best, start = 0, 0
    for cell in range(size):
        q = first[cell]
        if q >= 0 and (count[cell] > best or (count[cell] == best and q < start)):
            best, start = count[cell], q
    return best, start


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True)
def _duplicate_chars(codes, ends, n, prefix, inverse):  # pragma: no cover - compiled
    """``find_all_duplicate``: visited n-grams go into a set (keyed by the span's hash, shifted to start at B^0,
    and confirmed by its characters); a visited n-gram already there is a repeat: add its characters, skip n."""
    m = len(ends) - n + 1
    size = _slots(m)
    visited = np.full(size, -1, dtype=np.int64)
    hashes = np.zeros(size, dtype=np.uint64)
    mask = np.uint64(size - 1)
    repeated = 0
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
    return repeated


@dataclass(frozen=True)
class GopherRepetition:
    dup_line_frac: float | None = 0.3
    dup_para_frac: float | None = 0.3
    dup_line_char_frac: float | None = 0.2
    dup_para_char_frac: float | None = 0.2
    top_n_grams: tuple[tuple[int, float], ...] = ((2, 0.2), (3, 0.18), (4, 0.16))
    dup_n_grams: tuple[tuple[int, float], ...] = (
        (5, 0.15),
        (6, 0.14),
        (7, 0.13),
        (8, 0.12),
        (9, 0.11),
        (10, 0.10),
    )

    def __call__(self, doc: FilterDoc) -> str | None:
        text = doc.text
        if not text:
            return Removal("empty", "chars", 0)
        paragraphs, lines = split_paragraphs_and_lines(text)
        n_dup, chars = repeated_elements(paragraphs)
        if self.dup_para_frac and n_dup / len(paragraphs) > self.dup_para_frac:
            return Removal(
                "dup_para_frac", "repeated_paragraphs_share", n_dup / len(paragraphs), ">", self.dup_para_frac
            )
        if self.dup_para_char_frac and chars / len(text) > self.dup_para_char_frac:
            return Removal(
                "dup_para_char_frac",
                "repeated_paragraph_chars_share",
                chars / len(text),
                ">",
                self.dup_para_char_frac,
            )
        n_dup, chars = repeated_elements(lines)
        if self.dup_line_frac and n_dup / len(lines) > self.dup_line_frac:
            return Removal(
                "dup_line_frac", "repeated_lines_share", n_dup / len(lines), ">", self.dup_line_frac
            )
        if self.dup_line_char_frac and chars / len(text) > self.dup_line_char_frac:
            return Removal(
                "dup_line_char_frac",
                "repeated_line_chars_share",
                chars / len(text),
                ">",
                self.dup_line_char_frac,
            )
        index = _NgramIndex(doc.words)
        # datatrove compares top n-grams as words joined by spaces: where a word holds a space (pyvi's Vietnamese
        # "kiểm tra"), two different splits can join to one string, so those documents count joined strings
        top = index.top_chars if " " not in "".join(doc.words) else partial(top_joined_chars, doc.words)
        for n, frac in self.top_n_grams:
            if len(doc.words) >= n and (share := top(n) / len(text)) > frac:
                return Removal(f"top_{n}_gram", f"top_{n}_gram_chars_share", share, ">", frac)
        for n, frac in self.dup_n_grams:
            if (share := index.duplicate_chars(n) / len(text)) > frac:
                return Removal(f"duplicated_{n}_n_grams", f"repeated_{n}_gram_chars_share", share, ">", frac)
        return None
