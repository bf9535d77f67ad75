"""Gopher's quality and repetition rules (Rae et al. 2021, Table A1), with datatrove's exact semantics.

Decisions and reason names equal datatrove's ``GopherQualityFilter`` and ``GopherRepetitionFilter`` on the same
text (tested on every fixture document); only the word splitting is faster (memoized, see ``words.py``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import cache

import numpy as np
from datatrove.utils.text import PUNCTUATION_SET

from datapipe.filters.document import FilterDoc

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
            return "gopher_short_doc"
        # per distinct word, then weighted by its count: the same sums as datatrove's per-word loops
        counts = Counter(words)
        non_symbol = [(w, c) for w, c in counts.items() if not PUNCTUATION_SET.issuperset(w)]
        n_non_symbol = sum(c for _, c in non_symbol)
        if self.min_doc_words and n_non_symbol < self.min_doc_words:
            return "gopher_short_doc"
        if self.max_doc_words and n_non_symbol > self.max_doc_words:
            return "gopher_long_doc"
        if n_non_symbol:  # datatrove takes the mean of an empty list as NaN, which fails no comparison
            avg = sum(len(w) * c for w, c in non_symbol) / n_non_symbol
            if self.min_avg_word_length and avg < self.min_avg_word_length:
                return "gopher_below_avg_threshold"
            if self.max_avg_word_length and avg > self.max_avg_word_length:
                return "gopher_above_avg_threshold"
        if self.max_symbol_word_ratio and text.count("#") / n_words > self.max_symbol_word_ratio:
            return "gopher_too_many_hashes"
        if (
            self.max_symbol_word_ratio
            and (text.count("...") + text.count("…")) / n_words > self.max_symbol_word_ratio
        ):
            return "gopher_too_many_ellipsis"
        lines = text.splitlines()
        if lines:
            if self.max_bullet_lines_ratio:
                bullets = sum(s.lstrip().startswith(("•", "-")) for s in lines)
                if bullets / len(lines) > self.max_bullet_lines_ratio:
                    return "gopher_too_many_bullets"
            if self.max_ellipsis_lines_ratio:
                ellipsis = sum(s.rstrip().endswith(("...", "…")) for s in lines)
                if ellipsis / len(lines) > self.max_ellipsis_lines_ratio:
                    return "gopher_too_many_end_ellipsis"
        if self.max_non_alpha_words_ratio:
            alpha = sum(c for w, c in counts.items() if any(ch.isalpha() for ch in w))
            if alpha / n_words < self.max_non_alpha_words_ratio:
                return "gopher_below_alpha_threshold"
        if self.min_stop_words and len(set(self.stop_words).intersection(counts)) < self.min_stop_words:
            return "gopher_enough_stop_words"
        return None


_PARAGRAPHS = re.compile(r"\n{2,}")
_LINES = re.compile("\n+")


def _duplicates(items: list[str]) -> tuple[int, int]:
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
    """Word n-grams of one document as integers, so counting and finding repeats runs in numpy.

    Top n-grams (compared word by word, as datatrove joins them with spaces) use exact word ids. Duplicate n-grams
    are compared as the concatenation of their words, as datatrove's ``find_all_duplicate`` does ("ab"+"c" equals
    "a"+"bc"), so they use a 2 x 31-bit polynomial hash of that character span.
    """

    def __init__(self, words: list[str]) -> None:
        self.words = words
        vocab = {w: i for i, w in enumerate(dict.fromkeys(words))}
        self.ids = np.fromiter(map(vocab.__getitem__, words), dtype=np.int64, count=len(words))
        self.vocab_size = max(len(vocab), 1)
        self.lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        self.ends = np.cumsum(self.lengths)
        self._prefix: list[tuple[np.ndarray, np.ndarray]] | None = None

    def top_chars(self, n: int) -> int:
        """Characters covered by the most frequent n-gram: (its length joined by spaces) x (its count).

        Ties go to the n-gram seen first, as ``Counter.most_common(1)`` breaks them.
        """
        m = len(self.words) - n + 1
        cols = [self.ids[i : i + m] for i in range(n)]
        if self.vocab_size**n < 2**62:
            key = cols[0].copy()
            for c in cols[1:]:
                key = key * self.vocab_size + c
            positions = _repeat_candidates(key)
            if not len(positions):  # every n-gram once: the first one is the most common
                best, start = 1, 0
            else:
                _, first, counts = np.unique(key[positions], return_index=True, return_counts=True)
                best = int(counts.max())
                start = int(positions[first[counts == best].min()]) if best > 1 else 0
        else:  # too many distinct words to pack n of them into 62 bits
            _, first, counts = np.unique(
                np.stack(cols, axis=1), axis=0, return_index=True, return_counts=True
            )
            best = counts.max()
            start = int(first[counts == best].min())
        chars = int(self.lengths[start : start + n].sum()) + n - 1
        return chars * int(best)

    def _hashes(self, n: int) -> np.ndarray:
        """62-bit hash of each n-gram's concatenated characters (two 31-bit polynomial hashes)."""
        if self._prefix is None:
            codes = np.frombuffer("".join(self.words).encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
            starts = np.concatenate([[0], self.ends[:-1]])  # each word's first character
            prefix = []
            for mod in (_M1, _M2):
                pw, inv = _powers(mod, len(codes))
                # P[i] = sum_{j<i} c_j * B^j: each term < 2^31, so the running sum stays exact in int64
                terms = codes * pw[: len(codes)] % mod
                p = np.concatenate([[0], np.cumsum(terms) % mod])
                # per word start: mod - P[start] (so a span's difference is positive) and B^-start
                prefix.append((p, mod - p[starts], inv[starts]))
            self._prefix = prefix
        m = len(self.words) - n + 1
        stops = self.ends[n - 1 : n - 1 + m]
        out = np.zeros(m, dtype=np.int64)
        for (p, neg_start, inv_start), mod in zip(self._prefix, (_M1, _M2), strict=True):
            # (P[stop] - P[start]) * B^-start, the span shifted to start at B^0: the difference plus mod is below
            # 2^32 and B^-start below 2^31, so the product stays exact in int64 and one modulo suffices
            h = (p[stops] + neg_start[:m]) * inv_start[:m] % mod
            out = (out << 31) | h
        return out

    def duplicate_chars(self, n: int) -> int:
        """datatrove's ``find_all_duplicate``: walk the n-grams; a repeat adds its characters and skips n words.

        Only n-grams that occur more than once can be repeats, so the walk visits just those positions: a position
        is passed over when an earlier repeat's skip covers it, and is a repeat when an earlier visited position
        had the same n-gram.
        """
        m = len(self.words) - n + 1
        if m <= 1:
            return 0
        hashes = self._hashes(n)
        positions = _repeat_candidates(hashes)
        if not len(positions):
            return 0
        _, inverse, counts = np.unique(hashes[positions], return_inverse=True, return_counts=True)
        repeats = counts[inverse] > 1
        candidates, inverse = positions[repeats], inverse[repeats]
        if not len(candidates):
            return 0
        seen: set[int] = set()
        repeated = 0
        next_idx = 0
        groups = inverse.tolist()
        for pos, group in zip(candidates.tolist(), groups, strict=True):
            if pos < next_idx:
                continue  # skipped by an earlier repeat
            if group in seen:
                start = int(self.ends[pos - 1]) if pos else 0
                repeated += int(self.ends[pos + n - 1]) - start
                next_idx = pos + n
            else:
                seen.add(group)
                next_idx = pos + 1
        return repeated


def _repeat_candidates(keys: np.ndarray) -> np.ndarray:
    """Positions (ascending) whose key may occur more than once: those sharing a bucket of a table with at least
    twice as many buckets as keys. Every repeated key is among them, and in most documents few others are, so the
    exact sort that follows runs over a small part of the n-grams."""
    size = 1 << (2 * len(keys)).bit_length()
    bucket = (keys ^ (keys >> 29)) & (size - 1)
    return np.flatnonzero(np.bincount(bucket, minlength=size)[bucket] > 1)


_M1, _M2, _BASE = 2_147_483_647, 2_147_483_629, 1_000_003


@cache
def _power_table(mod: int, log2_size: int) -> tuple[np.ndarray, np.ndarray]:
    """B^j and B^-j modulo ``mod`` for j < 2**log2_size, built by doubling (log2_size numpy steps)."""
    pw = np.ones(1, dtype=np.int64)
    inv = np.ones(1, dtype=np.int64)
    b, b_inv = _BASE % mod, pow(_BASE, mod - 2, mod)
    for _ in range(log2_size):
        k = len(pw)
        pw = np.concatenate([pw, pw * pow(b, k, mod) % mod])
        inv = np.concatenate([inv, inv * pow(b_inv, k, mod) % mod])
    return pw, inv


def _powers(mod: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    return _power_table(mod, max(10, (n + 1).bit_length()))


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
            return "empty"
        paragraphs = _PARAGRAPHS.split(text.strip())
        n_dup, chars = _duplicates(paragraphs)
        if self.dup_para_frac and n_dup / len(paragraphs) > self.dup_para_frac:
            return "dup_para_frac"
        if self.dup_para_char_frac and chars / len(text) > self.dup_para_char_frac:
            return "dup_para_char_frac"
        lines = _LINES.split(text)
        n_dup, chars = _duplicates(lines)
        if self.dup_line_frac and n_dup / len(lines) > self.dup_line_frac:
            return "dup_line_frac"
        if self.dup_line_char_frac and chars / len(text) > self.dup_line_char_frac:
            return "dup_line_char_frac"
        index = _NgramIndex(doc.words)
        for n, frac in self.top_n_grams:
            if len(doc.words) >= n and index.top_chars(n) / len(text) > frac:
                return f"top_{n}_gram"
        for n, frac in self.dup_n_grams:
            if index.duplicate_chars(n) / len(text) > frac:
                return f"duplicated_{n}_n_grams"
        return None
