"""Text normalization before hashing, as datatrove does for MinHash: lower case, numbers to 0, punctuation to
spaces, diacritics removed, whitespace collapsed. Two texts that differ only in these ways hash the same.

The same words as ``datatrove.utils.text.simplify_text`` with its default config (tested on every fixture
document), but built for speed: the ASCII
punctuation is removed with one ``bytes.translate`` over the UTF-8 bytes (which leaves multi-byte characters
alone), and only a text that still has non-ASCII characters pays for the other steps.

:func:`normalized_utf8`, the dedup stage's key text, goes further: after ``str.lower`` one compiled pass over the
UTF-8 bytes does every other step (numbers, punctuation, marks, whitespace), where the steps above each walk the
text and the final ``" ".join(t.split())`` makes a string per word. Over the e2e benchmark's 3,415 extracted pages
(28.5M characters, most with a non-ASCII character) ``normalize(t).encode()`` takes 604 ms and this 240 ms, with
the same bytes (best of three, 2026-12-05).

A kernel shared by two stages: dedup keys documents and lines by it, decontamination its n-grams.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

import numpy as np
import regex
from datatrove.utils.text import PUNCTUATION

from datapipe.kernels.jit import kernel
from datapipe.kernels.tables import array_text, stored, text_array
from datapipe.kernels.utf8 import TABLE_END, decode, every_character

# the separators that join two runs of digits into one number, in datatrove's NUMBERS_PATTERN
_JOINERS = ".,،٫⎖⎗⎘"
_NUMBERS = regex.compile(r"\p{Nd}+(?:[" + _JOINERS + r"]\p{Nd}+)?")  # datatrove's NUMBERS_PATTERN
_ASCII_PUNCT = bytes(32 if b < 128 and chr(b) in PUNCTUATION else b for b in range(256))
_OTHER_PUNCT = re.compile("[" + re.escape("".join(c for c in PUNCTUATION if ord(c) >= 128)) + "]")
_MARKS = regex.compile(r"\p{Mn}+")


def _simplify(text: str) -> str:
    t = _NUMBERS.sub("0", text.lower()).encode("utf-8").translate(_ASCII_PUNCT).decode("utf-8")
    if not t.isascii():
        t = _MARKS.sub("", unicodedata.normalize("NFD", _OTHER_PUNCT.sub(" ", t)))
    return t


def normalized_bytes(text: str) -> bytes:
    """UTF-8 of the normalized text, whose only whitespace is spaces, tabs and newlines (word separators)."""
    t = _simplify(text)
    if not t.isascii():
        t = " ".join(t.split())  # other Unicode spaces separate words too (2x faster than re's \s+)
    return t.encode("utf-8")


def normalize_words(text: str) -> list[str]:
    """The normalized text's words."""
    return _simplify(text).split()


def normalize(text: str) -> str:
    return " ".join(_simplify(text).split())


def normalized_utf8(text: str) -> bytes:
    """``normalize(text).encode("utf-8")``, in one compiled pass after ``str.lower`` where that is exact.

    The slow path replaces digits and punctuation, then decomposes (NFD), then removes marks. The pass decomposes
    first and then does the rest in one walk, which gives the same text when no character both decomposes and
    takes part in a replacement: replacing a starter (a digit, punctuation) with a starter ("0", a space) commutes
    with NFD, which only splits characters and reorders runs of combining marks. The few characters for which it
    does not (17 in Unicode 14: "≠" holds "=", the Greek question mark is ";") send their text to the slow path,
    as do a digit of another script and a character beyond the table.
    """
    fast = _one_pass_of(text)
    return normalize(text).encode("utf-8") if fast is None else fast


def _one_pass_of(text: str) -> bytes | None:
    """The compiled pass's result, or None where the text needs the slow path."""
    low = text.lower()
    classes, unsafe = _classes()
    if not unicodedata.is_normalized("NFD", low):
        if unsafe.search(low) is not None:
            return None
        low = unicodedata.normalize("NFD", low)
    out, fast = _one_pass(np.frombuffer(low.encode("utf-8"), dtype=np.uint8), classes)
    return out.tobytes() if fast else None


# what the pass does with each code point below _TABLE (code points at or above it take the slow path)
_COPY, _SPACE, _MARK, _DIGIT, _SLOW = 0, 1, 2, 3, 4
_TABLE = TABLE_END
_NUMBER_JOINERS = np.array([ord(c) for c in _JOINERS], dtype=np.int64)


@cache
def _classes() -> tuple[np.ndarray, re.Pattern[str]]:
    """Each code point's part in the slow path's steps, read from the same definitions: ``str.isspace`` (what
    ``str.split`` splits on), ``PUNCTUATION`` (to a space), the ``regex`` module's ``\\p{Mn}`` (removed) and
    ``\\p{Nd}`` (ASCII digits are handled; any other digit takes the slow path); and a pattern for the characters
    whose decomposition would change what the replacements do. ~60 ms to build: kept on disk
    (:mod:`datapipe.kernels.tables`)."""
    key = {"regex": regex.__version__, "punctuation": PUNCTUATION}  # datatrove's: a library's constant
    got = stored("dedup-normalize", key, _build_classes)
    return got["table"], re.compile(array_text(got["unsafe"]))


def _build_classes() -> dict[str, np.ndarray]:
    every = every_character(_TABLE)
    table = np.zeros(_TABLE, dtype=np.uint8)
    table[[i for i, c in enumerate(every) if c.isspace() or c in PUNCTUATION]] = _SPACE
    marks = [i for m in _MARKS.finditer(every) for i in range(m.start(), m.end())]
    # a mark that is also a separator would be counted twice; none is, and one would only take the slow path
    table[marks] = np.where(table[marks] == _COPY, _MARK, _SLOW)
    digits = np.array([m.start() for m in regex.finditer(r"\p{Nd}", every)], dtype=np.int64)
    table[digits] = _SLOW
    table[ord("0") : ord("9") + 1] = _DIGIT
    joiners = set(_NUMBER_JOINERS.tolist())

    def plain(c: str) -> bool:  # copied or removed, whether before or after the decomposition
        return ord(c) < _TABLE and table[ord(c)] in (_COPY, _MARK) and ord(c) not in joiners

    unsafe = [
        c
        for c in every
        if not 0xD800 <= ord(c) < 0xE000
        and (d := unicodedata.normalize("NFD", c)) != c
        and not (plain(c) and all(map(plain, d)))
    ]
    return {"table": table, "unsafe": text_array("[" + re.escape("".join(unsafe)) + "]")}


@kernel
def _one_pass(data, classes):  # pragma: no cover - compiled
    """(normalized UTF-8, True), or (anything, False) when a code point needs the slow path."""
    n = data.shape[0]
    out = np.empty(n, dtype=np.uint8)  # every step keeps or shortens the text
    o = 0
    pending = False  # a separator since the last character written: a space before the next one
    i = 0
    while i < n:
        cp, size = decode(data, i)
        if cp >= classes.shape[0]:
            return out[:0], False
        kind = classes[cp]
        if kind == 4:  # _SLOW
            return out[:0], False
        if kind == 1:  # _SPACE
            pending = True
            i += size
            continue
        if kind == 2:  # _MARK
            i += size
            continue
        if pending and o > 0:
            out[o] = 32
            o += 1
        pending = False
        if kind == 3:  # _DIGIT: the number's digits, a joiner and more digits if they follow, become "0"
            j = i + 1
            while j < n and 48 <= data[j] <= 57:
                j += 1
            if j < n:
                sep, sep_size = decode(data, j)
                joiner = False
                for k in range(_NUMBER_JOINERS.shape[0]):
                    if _NUMBER_JOINERS[k] == sep:
                        joiner = True
                if joiner and j + sep_size < n:
                    after, _ = decode(data, j + sep_size)
                    if after < classes.shape[0] and classes[after] == 4:
                        return out[:0], False  # another script's digit: the slow path decides
                    if 48 <= after <= 57:
                        j += sep_size + 1
                        while j < n and 48 <= data[j] <= 57:
                            j += 1
            out[o] = 48
            o += 1
            i = j
            continue
        for k in range(size):
            out[o + k] = data[i + k]
        o += size
        i += size
    return out[:o], True
