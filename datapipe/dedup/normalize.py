"""Text normalization before hashing, as datatrove does for MinHash: lower case, numbers to 0, punctuation to
spaces, diacritics removed, whitespace collapsed. Two texts that differ only in these ways hash the same.

The same words as ``datatrove.utils.text.simplify_text`` with its default config (tested on every fixture
document), but built for speed: the ASCII
punctuation is removed with one ``bytes.translate`` over the UTF-8 bytes (which leaves multi-byte characters
alone), and only a text that still has non-ASCII characters pays for the other steps.
"""

from __future__ import annotations

import re
import unicodedata

import regex
from datatrove.utils.text import PUNCTUATION

_NUMBERS = regex.compile(r"\p{Nd}+(?:[.,،٫⎖⎗⎘]\p{Nd}+)?")  # datatrove's NUMBERS_PATTERN
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
