"""Gopher's quality and repetition rules (Rae et al. 2021, Table A1), with datatrove's exact semantics.

Decisions and reason names equal datatrove's ``GopherQualityFilter`` and ``GopherRepetitionFilter`` on the same
text (tested on every fixture document); only the word splitting is faster (memoized, see ``words.py``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

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
        non_symbol = [w for w in words if any(ch not in PUNCTUATION_SET for ch in w)]
        n_non_symbol = len(non_symbol)
        if self.min_doc_words and n_non_symbol < self.min_doc_words:
            return "gopher_short_doc"
        if self.max_doc_words and n_non_symbol > self.max_doc_words:
            return "gopher_long_doc"
        if non_symbol:  # datatrove takes the mean of an empty list as NaN, which fails no comparison
            avg = sum(len(w) for w in non_symbol) / n_non_symbol
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
            alpha = sum(any(c.isalpha() for c in w) for w in words)
            if alpha / n_words < self.max_non_alpha_words_ratio:
                return "gopher_below_alpha_threshold"
        if self.min_stop_words and len(set(self.stop_words).intersection(words)) < self.min_stop_words:
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


def _top_ngram_chars(words: list[str], n: int) -> int:
    """Characters covered by the most frequent word n-gram (its length joined by spaces x its count)."""
    grams = Counter(zip(*(words[i:] for i in range(n)), strict=False))
    (gram, count), *_ = grams.most_common(1)
    return (sum(map(len, gram)) + n - 1) * count


def _all_duplicate_chars(words: list[str], n: int) -> int:
    """Characters in repeated n-grams, each repeat skipping ahead n words (datatrove's ``find_all_duplicate``).

    n-grams are compared as the concatenation of their words (no separator), as datatrove does.
    """
    seen: set[str] = set()
    repeated = idx = 0
    last = len(words) - n + 1
    while idx < last:
        gram = "".join(words[idx : idx + n])
        if gram in seen:
            repeated += len(gram)
            idx += n
        else:
            seen.add(gram)
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
        words = doc.words
        for n, frac in self.top_n_grams:
            if len(words) >= n and _top_ngram_chars(words, n) / len(text) > frac:
                return f"top_{n}_gram"
        for n, frac in self.dup_n_grams:
            if _all_duplicate_chars(words, n) / len(text) > frac:
                return f"duplicated_{n}_n_grams"
        return None
