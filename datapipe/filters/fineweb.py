"""FineWeb's line-level quality rules (Penedo et al. 2024), with datatrove's ``FineWebQualityFilter`` semantics."""

from __future__ import annotations

from dataclasses import dataclass

from datatrove.utils.text import TERMINAL_PUNCTUATION

from datapipe.filters.document import FilterDoc
from datapipe.filters.gopher import repeated_elements
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
        lines = [line for line in doc.text.split("\n") if line.strip() != ""]
        if not lines:
            return Removal("empty", "lines", 0)
        ratio = sum(1 for line in lines if line.endswith(STOP_CHARS)) / len(lines)
        if ratio < self.line_punct_thr and not (ratio == 0 and self.line_punct_exclude_zero):
            return Removal("line_punct_ratio", "punctuated_lines_share", ratio, "<", self.line_punct_thr)
        short = sum(1 for line in lines if len(line) <= self.short_line_length) / len(lines)
        if short > self.short_line_thr:
            return Removal("short_line_ratio", "short_lines_share", short, ">", self.short_line_thr)
        dup = repeated_elements(lines)[1] / len(doc.text.replace("\n", ""))
        if dup > self.char_duplicates_ratio:
            return Removal(
                "char_dup_ratio", "repeated_line_chars_share", dup, ">", self.char_duplicates_ratio
            )
        # the number of words, not the words: made as strings from their ids, they took 0.15 of German's 0.28
        # warm CPU s over the multilingual benchmark's 500 pages
        n_words = len(doc.index)
        if n_words and (per_word := doc.text.count("\n") / n_words) > self.new_line_ratio:
            return Removal("list_ratio", "newlines_per_word", per_word, ">", self.new_line_ratio)
        return None
