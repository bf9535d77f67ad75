"""Text normalization before hashing, as datatrove does for MinHash: lower case, numbers to 0, punctuation to
spaces, diacritics removed, whitespace collapsed. Two texts that differ only in these ways hash the same."""

from __future__ import annotations

import re
import unicodedata

import regex
from datatrove.utils.text import PUNCTUATION

_NUMBERS = re.compile(r"\d+(\.\d+)?")
_PUNCT = str.maketrans(PUNCTUATION, " " * len(PUNCTUATION))
_MARKS = regex.compile(r"\p{Mn}+")


def normalize(text: str) -> str:
    t = _NUMBERS.sub("0", text.lower()).translate(_PUNCT)
    if not t.isascii():
        t = _MARKS.sub("", unicodedata.normalize("NFD", t))
    return " ".join(t.split())
