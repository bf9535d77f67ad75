"""Gopher's quality and repetition rules (Rae et al. 2021, Table A1), with datatrove's exact semantics.

Decisions and reason names equal datatrove's ``GopherQualityFilter`` and ``GopherRepetitionFilter`` on the same
text (tested on every fixture document); only the word splitting is faster (memoized, see ``words.py``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from datapipe.filters import textstats
from datapipe.filters.document import FilterDoc
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
        n_words = len(doc.index)
        if n_words == 0:
            return Removal("gopher_short_doc", "words", 0)
        # one compiled walk over the words: the same counts as datatrove's per-word loops
        n_non_symbol, non_symbol_chars = doc.index.non_symbol()
        if self.min_doc_words and n_non_symbol < self.min_doc_words:
            return Removal("gopher_short_doc", "words", n_non_symbol, "<", self.min_doc_words)
        if self.max_doc_words and n_non_symbol > self.max_doc_words:
            return Removal("gopher_long_doc", "words", n_non_symbol, ">", self.max_doc_words)
        if n_non_symbol:  # datatrove takes the mean of an empty list as NaN, which fails no comparison
            avg = non_symbol_chars / n_non_symbol
            if self.min_avg_word_length and avg < self.min_avg_word_length:
                return Removal(
                    "gopher_below_avg_threshold", "mean_word_length", avg, "<", self.min_avg_word_length
                )
            if self.max_avg_word_length and avg > self.max_avg_word_length:
                return Removal(
                    "gopher_above_avg_threshold", "mean_word_length", avg, ">", self.max_avg_word_length
                )
        if (
            self.max_symbol_word_ratio
            and (hashes := int(doc.line_counts()[textstats.HASHES]) / n_words) > self.max_symbol_word_ratio
        ):
            return Removal(
                "gopher_too_many_hashes", "hashes_per_word", hashes, ">", self.max_symbol_word_ratio
            )
        if (
            self.max_symbol_word_ratio
            and (dots := int(doc.line_counts()[textstats.ELLIPSES]) / n_words) > self.max_symbol_word_ratio
        ):
            return Removal(
                "gopher_too_many_ellipsis", "ellipses_per_word", dots, ">", self.max_symbol_word_ratio
            )
        stats = doc.line_counts()  # str.splitlines's lines, from the compiled walk
        if n_lines := int(stats[textstats.SPLITLINES]):
            if self.max_bullet_lines_ratio:
                bullets = int(stats[textstats.BULLET_LINES])
                if bullets / n_lines > self.max_bullet_lines_ratio:
                    return Removal(
                        "gopher_too_many_bullets",
                        "bullet_lines_share",
                        bullets / n_lines,
                        ">",
                        self.max_bullet_lines_ratio,
                    )
            if self.max_ellipsis_lines_ratio:
                ellipsis = int(stats[textstats.ELLIPSIS_LINES])
                if ellipsis / n_lines > self.max_ellipsis_lines_ratio:
                    return Removal(
                        "gopher_too_many_end_ellipsis",
                        "ellipsis_lines_share",
                        ellipsis / n_lines,
                        ">",
                        self.max_ellipsis_lines_ratio,
                    )
        if self.max_non_alpha_words_ratio:
            alpha = doc.index.alphabetic()
            if alpha / n_words < self.max_non_alpha_words_ratio:
                return Removal(
                    "gopher_below_alpha_threshold",
                    "alphabetic_words_share",
                    alpha / n_words,
                    "<",
                    self.max_non_alpha_words_ratio,
                )
        if self.min_stop_words and (stops := doc.index.present(self.stop_words)) < self.min_stop_words:
            return Removal("gopher_enough_stop_words", "stop_words", stops, "<", self.min_stop_words)
        return None


def top_joined_chars(words: list[str], n: int) -> int:
    """Characters covered by the most frequent n-gram, its words joined by spaces, as datatrove counts them."""
    joined, count = Counter(" ".join(words[i : i + n]) for i in range(len(words) - n + 1)).most_common(1)[0]
    return len(joined) * count


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
        # paragraphs and lines, split as datatrove splits them, from the compiled walk (paragraphs where a rule
        # reads them)
        stats = doc.stats if self.dup_para_frac or self.dup_para_char_frac else doc.line_counts()
        n_para, n_dup, chars = (
            int(x) for x in stats[textstats.PARAGRAPHS : textstats.DUP_PARAGRAPH_CHARS + 1]
        )
        if self.dup_para_frac and n_dup / n_para > self.dup_para_frac:
            return Removal(
                "dup_para_frac", "repeated_paragraphs_share", n_dup / n_para, ">", self.dup_para_frac
            )
        if self.dup_para_char_frac and chars / len(text) > self.dup_para_char_frac:
            return Removal(
                "dup_para_char_frac",
                "repeated_paragraph_chars_share",
                chars / len(text),
                ">",
                self.dup_para_char_frac,
            )
        n_lines, n_dup, chars = (int(x) for x in stats[textstats.LINES : textstats.DUP_LINE_CHARS + 1])
        if self.dup_line_frac and n_dup / n_lines > self.dup_line_frac:
            return Removal("dup_line_frac", "repeated_lines_share", n_dup / n_lines, ">", self.dup_line_frac)
        if self.dup_line_char_frac and chars / len(text) > self.dup_line_char_frac:
            return Removal(
                "dup_line_char_frac",
                "repeated_line_chars_share",
                chars / len(text),
                ">",
                self.dup_line_char_frac,
            )
        index = doc.index
        if doc.words_hold_spaces:
            # datatrove compares top n-grams as words joined by spaces: where a word holds a space (pyvi's
            # Vietnamese "kiểm tra"), two different splits can join to one string, so those documents count
            # joined strings
            for n, frac in self.top_n_grams:
                if len(index) >= n and (share := top_joined_chars(doc.words, n) / len(text)) > frac:
                    return Removal(f"top_{n}_gram", f"top_{n}_gram_chars_share", share, ">", frac)
        elif self.top_n_grams:  # every top n-gram rule in one compiled call
            r, chars = index.first_top(self.top_n_grams, len(text))
            if r >= 0:
                n, frac = self.top_n_grams[r]
                return Removal(f"top_{n}_gram", f"top_{n}_gram_chars_share", chars / len(text), ">", frac)
        if self.dup_n_grams:
            r, chars = index.first_duplicate(self.dup_n_grams, len(text))
            if r >= 0:
                n, frac = self.dup_n_grams[r]
                share = chars / len(text)
                return Removal(f"duplicated_{n}_n_grams", f"repeated_{n}_gram_chars_share", share, ">", frac)
        return None
