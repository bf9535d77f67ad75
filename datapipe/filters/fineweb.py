"""FineWeb's line-level quality rules (Penedo et al. 2024), with datatrove's ``FineWebQualityFilter`` semantics."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from datatrove.utils.text import TERMINAL_PUNCTUATION

from datapipe.filters.document import FilterDoc
from datapipe.filters.textstats import fineweb_stats
from datapipe.runtime.evidence import Removal

STOP_CHARS = tuple(TERMINAL_PUNCTUATION)


@dataclass(frozen=True)
class FineWebQuality:
    line_punct_thr: float = 0.12  # share of lines ending in terminal punctuation must reach this
    line_punct_exclude_zero: bool = False
    short_line_thr: float = 0.67  # share of lines of <= short_line_length characters must not exceed this
    short_line_length: int = 30
    char_duplicates_ratio: float = 0.01  # characters in duplicated lines / all non-newline characters
    new_line_ratio: float = 0.3  # newlines per word (list-like pages)

    def __call__(self, doc: FilterDoc) -> str | None:
        # the non-blank lines of split("\n") and what the rules count over them, in one compiled walk
        lines, punct, short, dup, newlines = fineweb_stats(doc.codes, stop_table(), self.short_line_length)
        if not lines:
            return Removal("empty", "lines", 0)
        ratio = punct / lines
        if ratio < self.line_punct_thr and not (ratio == 0 and self.line_punct_exclude_zero):
            return Removal("line_punct_ratio", "punctuated_lines_share", ratio, "<", self.line_punct_thr)
        if (ratio := short / lines) > self.short_line_thr:
            return Removal("short_line_ratio", "short_lines_share", ratio, ">", self.short_line_thr)
        if (ratio := dup / (len(doc.text) - newlines)) > self.char_duplicates_ratio:
            return Removal(
                "char_dup_ratio", "repeated_line_chars_share", ratio, ">", self.char_duplicates_ratio
            )
        # the number of words, not the words: made as strings from their ids, they took 0.15 of German's 0.28
        # warm CPU s over the multilingual benchmark's 500 pages
        n_words = len(doc.index)
        if n_words and (per_word := newlines / n_words) > self.new_line_ratio:
            return Removal("list_ratio", "newlines_per_word", per_word, ">", self.new_line_ratio)
        return None


@cache
def stop_table() -> np.ndarray:
    """Code point -> whether a line ending in it ends in terminal punctuation (every entry is one character)."""
    assert all(len(c) == 1 for c in STOP_CHARS)
    table = np.zeros(max(map(ord, STOP_CHARS)) + 1, dtype=np.bool_)
    table[[ord(c) for c in STOP_CHARS]] = True
    return table
