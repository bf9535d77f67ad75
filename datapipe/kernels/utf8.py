"""Compiled UTF-8 reading for the passes that walk a text's bytes and need its code points (the dedup key's
normalization, RefinedWeb's line statistics): encoding a ``str`` as UTF-8 is a copy for ASCII text, where
UTF-32 would quadruple it."""

from __future__ import annotations

from functools import cache

import numpy as np

from datapipe.kernels.jit import leaf

# the code points the compiled passes keep tables for: the Basic and Supplementary Multilingual Planes, every
# script in use and the emoji; a text with a character beyond takes its pass's slower, exact path
TABLE_END = 0x20000


@leaf
def decode(data, i):  # pragma: no cover - compiled
    """The code point of valid UTF-8 starting at ``data[i]`` and its length in bytes."""
    b = np.int64(data[i])
    if b < 0x80:
        return b, 1
    if b < 0xE0:
        return ((b & 0x1F) << 6) | (np.int64(data[i + 1]) & 0x3F), 2
    if b < 0xF0:
        return ((b & 0x0F) << 12) | ((np.int64(data[i + 1]) & 0x3F) << 6) | (np.int64(data[i + 2]) & 0x3F), 3
    return (
        ((b & 0x07) << 18)
        | ((np.int64(data[i + 1]) & 0x3F) << 12)
        | ((np.int64(data[i + 2]) & 0x3F) << 6)
        | (np.int64(data[i + 3]) & 0x3F)
    ), 4


@cache
def every_character(below: int) -> str:
    """Every code point below ``below``, in order, as one string (surrogates included), for building tables of
    what Python's ``str`` methods and regular expressions say of each. Decoded from UTF-32 in one call (1 ms for
    the 131,072 below ``TABLE_END``, where joining ``chr`` of each took 10 ms) and kept: four tables a worker
    builds read it."""
    return np.arange(below, dtype="<u4").tobytes().decode("utf-32-le", errors="surrogatepass")


def utf8_within(text: str, max_chars: int) -> bytes | None:
    """The text's UTF-8 for a compiled pass, or None for a text the pass leaves to its caller's exact path: one over
    ``max_chars`` characters (a pass's arrays are sized by the text), or one with a lone surrogate (no UTF-8)."""
    if len(text) > max_chars:
        return None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return None
