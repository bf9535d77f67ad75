"""RefinedWeb's line modifiers as DCLM-Baseline rebuilt them, and the removed-words check that follows them.

Line modifiers rewrite the text: they drop lines that are mostly upper case or digits, counters and UI boilerplate
("5 comments", "Read more", "Sign in", "items in cart"), and lines of fewer than two words. When the edits removed
more than 5% of the document's words, the whole document goes: what is left of such a page is rarely worth keeping.

:meth:`LineModifiers.keep_line` states the rules for one line. A page's lines are judged together, in one compiled
pass over its UTF-8 bytes that counts each line's characters, upper-case letters, digits, letters and words; a
line is then asked of the two patterns only if it has few enough letters for them to match it (10 and 23, read
from the patterns' parse trees). Over the e2e benchmark's 3,415 pages (382k lines, 73k asked of a pattern) the
rule took 0.69 CPU s looping over the lines in Python and takes 0.24, with the same decisions and texts.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache
from re import _constants as sre  # type: ignore[attr-defined]  # the parse tree's opcodes
from re import _parser  # type: ignore[attr-defined]

import numpy as np

from datapipe.filters.document import FilterDoc
from datapipe.kernels.jit import kernel
from datapipe.kernels.tables import stored
from datapipe.kernels.utf8 import TABLE_END, decode, every_character
from datapipe.runtime.evidence import Removal

_COUNTER = re.compile(
    r"^\W*\d[\d,.]*\s*[kKmM]?\s*(likes?|shares?|comments?|retweets?|reposts?|views?|followers?|replies|reply|"
    r"votes?|points?|reviews?|ratings?|stars?|downloads?)\W*$",
    re.IGNORECASE,
)
_BOILERPLATE = re.compile(
    r"^\W*(read more|continue reading|sign in|sign up|log in|login|register|subscribe|share this|"
    r"click here|skip to (main )?content|back to top|(\d+\s+)?items? in (your )?(shopping )?cart|"
    r"your cart is empty|add to cart|view cart|checkout)\W*$",
    re.IGNORECASE,
)


_ASCII_UPPER = bytes(range(65, 91))
_ASCII_DIGITS = b"0123456789"


def _count_upper_digits(line: str) -> tuple[int, int]:
    """Upper-case letters and digits in a line (C-speed for ASCII lines, the usual case)."""
    if line.isascii():
        raw = line.encode("ascii")
        return len(raw) - len(raw.translate(None, _ASCII_UPPER)), len(raw) - len(
            raw.translate(None, _ASCII_DIGITS)
        )
    return sum(map(str.isupper, line)), sum(map(str.isdigit, line))


def _words_up_to(lines: list[str], bound: float) -> int:
    """The words in ``lines``, or any number >= ``bound`` once that many are counted."""
    count = 0
    for line in lines:
        count += len(line.split())
        if count >= bound:
            break
    return count


@dataclass(frozen=True)
class LineModifiers:
    """Drop upper-case, numeric, counter, boilerplate and short lines; then check how much was removed."""

    max_uppercase_ratio: float = 0.5  # upper-case letters / characters on a line
    max_numeric_ratio: float = 0.999999  # digits / characters on a line
    min_line_words: int = 2
    drop_counters: bool = True
    drop_boilerplate: bool = True
    max_removed_words_ratio: float = 0.05

    def keep_line(self, line: str) -> bool:
        stripped = line.strip()
        if not stripped:
            return True  # blank lines keep paragraph structure; they hold no words
        n = len(stripped)
        upper, digits = _count_upper_digits(stripped)
        if upper / n > self.max_uppercase_ratio:
            return False
        if digits / n > self.max_numeric_ratio:
            return False
        # a counter holds a digit, and every character \d matches is one str.isdigit counts
        if self.drop_counters and digits and _COUNTER.match(stripped):
            return False
        if self.drop_boilerplate and _BOILERPLATE.match(stripped):
            return False
        # stripped has no outer whitespace: k words are there once k - 1 splits succeed
        return len(stripped.split(maxsplit=self.min_line_words - 1)) >= self.min_line_words

    def _verdicts(self, text: str) -> tuple[np.ndarray, np.ndarray] | None:
        """Per line of ``text.split("\\n")``: its verdict (:data:`KEEP`, :data:`DROP`, or which patterns decide
        it) and its words. None when the text holds a character beyond the pass's table."""
        verdict, words, ok = _line_verdicts(
            np.frombuffer(text.encode("utf-8"), dtype=np.uint8),
            _char_table(),
            self.max_uppercase_ratio,
            self.max_numeric_ratio,
            self.min_line_words,
            _letters_bound(_COUNTER) if self.drop_counters else -1,
            _letters_bound(_BOILERPLATE) if self.drop_boilerplate else -1,
        )
        return (verdict, words) if ok else None

    def _dropped(self, lines: list[str], text: str) -> tuple[list[int], np.ndarray | None]:
        """The lines ``keep_line`` drops, by index; and every line's words when the compiled pass counted them."""
        got = self._verdicts(text)
        if got is None:
            return [i for i, line in enumerate(lines) if not self.keep_line(line)], None
        verdict, words = got
        drop = np.flatnonzero(verdict == DROP).tolist()
        for i in np.flatnonzero(verdict >= BOILERPLATE).tolist():
            s = lines[i].strip()
            if (verdict[i] == COUNTER_OR_BOILERPLATE and _COUNTER.match(s)) or (
                self.drop_boilerplate and _BOILERPLATE.match(s)
            ):
                drop.append(i)
        return drop, words

    def __call__(self, doc: FilterDoc) -> str | None:
        lines = doc.text.split("\n")
        drop, words = self._dropped(lines, doc.text)
        if not drop:
            return None
        # Words never span a line, so the edit removed the dropped lines' words and kept the rest (splitting the
        # text before and after gave the same figures, slower)
        share = self.max_removed_words_ratio
        if words is not None:
            removed, before = int(words[drop].sum()), int(words.sum())
        else:
            removed = sum(len(lines[i].split()) for i in drop)
            # from this many words on, removed / words <= share and words - removed >= 1: no need to count further
            enough = max(math.floor(removed / share) + 1, removed + 1) if share > 0 else math.inf
            before = _words_up_to(lines, enough)
        if before and removed / before > share:
            return Removal("removed_words_ratio", "removed_words_share", removed / before, ">", share)
        if before == removed:
            return Removal("empty_after_line_edits", "words_left", 0)
        dropped = set(drop)
        kept = [line for i, line in enumerate(lines) if i not in dropped]
        doc.text = _BLANK_RUNS.sub("\n\n", "\n".join(kept)).strip()
        return None


# r"\n{3,}" as a pattern that starts with a literal, which re searches for 7x faster
_BLANK_RUNS = re.compile("\n\n\n+")
# a line's verdict from the compiled pass: kept, dropped, or dropped only if a pattern matches it
KEEP, DROP, BOILERPLATE, COUNTER_OR_BOILERPLATE = 0, 1, 2, 3

# what the pass reads of each code point below _TABLE (a text with one at or above it is judged line by line)
_SPACE, _UPPER, _DIGIT, _LETTER = 1, 2, 4, 8
_TABLE = TABLE_END


@cache
def _char_table() -> np.ndarray:
    """``str.isspace`` (what ``strip`` and ``split`` use), ``str.isupper``, ``str.isdigit``, and letters as the
    patterns see them: word characters (``\\w``: alphanumeric or "_") that are not decimal digits (``\\d``). Kept on
    disk (:mod:`datapipe.kernels.tables`): 0.04 s of each worker's first filter shard to build."""
    return stored("refinedweb-chars", _TABLE, lambda: {"table": _build_char_table()})["table"]


def _build_char_table() -> np.ndarray:
    every = every_character(_TABLE)

    def flags(test) -> np.ndarray:
        return np.fromiter(map(test, every), dtype=np.bool_, count=len(every)).astype(np.uint8)

    letter = flags(lambda c: (c.isalnum() or c == "_") and not c.isdecimal())
    return (
        flags(str.isspace) * _SPACE
        | flags(str.isupper) * _UPPER
        | flags(str.isdigit) * _DIGIT
        | letter * _LETTER
    )


@cache
def _letters_bound(pattern: re.Pattern[str]) -> float:
    """The most letters (word characters that are not decimal digits) a whole-line match of ``pattern`` can hold,
    read from its parse tree: each element that can match such a character counts once per repeat; a literal
    matches one character, in whichever case. Anything the walk does not know counts as unbounded."""

    def one(op, av) -> float:
        if op is sre.LITERAL:
            return _literal_letters(av)
        if op is sre.IN:
            return max((_in_item(o, a) for o, a in av), default=0)
        if op is sre.AT:
            return 0
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            _, high, sub = av
            inner = seq(sub)
            if inner == 0:
                return 0
            return math.inf if high is sre.MAXREPEAT else high * inner
        if op is sre.SUBPATTERN:
            return seq(av[-1])
        if op is sre.BRANCH:
            return max(seq(b) for b in av[1])
        return math.inf

    def seq(items) -> float:
        return sum(one(op, av) for op, av in items)

    return seq(_parser.parse(pattern.pattern, pattern.flags))


def _literal_letters(code: int) -> int:
    """Whether a literal can match a letter (1) or not (0): it is one, or, ignoring case, may match one (a mark
    such as U+0345, whose upper case is a letter)."""
    c = chr(code)
    return 1 if (c.isalnum() or c == "_" or c.lower() != c or c.upper() != c) and not c.isdecimal() else 0


def _in_item(op, av) -> float:
    """Whether one item of a character class can match a letter (1) or not (0)."""
    if op is sre.CATEGORY:
        return 0 if av in (sre.CATEGORY_DIGIT, sre.CATEGORY_SPACE, sre.CATEGORY_NOT_WORD) else 1
    if op is sre.LITERAL:
        return _literal_letters(av)
    return 1  # a range, a negation: assume it can


@kernel
def _line_verdicts(
    data, table, max_upper, max_numeric, min_words, counter_bound, boilerplate_bound
):  # pragma: no cover
    """One pass over a page's UTF-8 (compiled): each line's verdict, its words, and whether every character was in
    the table. The rules in ``keep_line``'s order, except that the last three only drop a line, so a line of too
    few words is dropped without asking the patterns."""
    n_lines = 1
    for b in data:
        if b == 10:
            n_lines += 1
    verdict = np.zeros(n_lines, dtype=np.int8)  # KEEP
    words = np.zeros(n_lines, dtype=np.int64)
    n = data.shape[0]
    i = 0
    for line in range(n_lines):  # code points up to the next newline
        chars = last = upper = digits = letters = count = 0
        first = -1
        in_word = False
        while i < n and data[i] != 10:
            cp, size = decode(data, i)
            i += size
            if cp >= table.shape[0]:
                return verdict, words, False
            f = table[cp]
            if f & 1:  # _SPACE
                in_word = False
            else:
                if first < 0:
                    first = chars
                last = chars
                if not in_word:
                    count += 1
                    in_word = True
                if f & 2:  # _UPPER
                    upper += 1
                if f & 4:  # _DIGIT
                    digits += 1
                if f & 8:  # _LETTER
                    letters += 1
            chars += 1
        i += 1  # the newline
        words[line] = count
        if first < 0:
            continue  # a blank line is kept
        width = last - first + 1  # the stripped line's length
        if upper / width > max_upper or digits / width > max_numeric or count < min_words:
            verdict[line] = 1  # DROP
        elif digits and letters <= counter_bound:
            verdict[line] = 3  # COUNTER_OR_BOILERPLATE
        elif letters <= boilerplate_bound:
            verdict[line] = 2  # BOILERPLATE
    return verdict, words, True
