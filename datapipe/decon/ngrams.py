"""Word n-gram hashes of normalized text, vectorized.

Text is normalized like the dedup normalizer (lower case, digits to 0, punctuation to spaces, diacritics removed)
and split into words; each word is hashed once (xxh3, 64 bits) and the hash of the n-gram starting at word ``i`` is
``sum(h[i + j] * P**(n - 1 - j))`` modulo 2**64, computed for all ``i`` at once with numpy. Evaluation items and
documents go through the same function, so an n-gram matches exactly when its words do (up to 64-bit collisions).
"""

from __future__ import annotations

import numpy as np
import xxhash

from datapipe.kernels.normalize import normalize_words

_P = np.uint64(0x9E3779B97F4A7C15)  # odd multiplier (golden ratio): a bijection on each step


def word_hashes(words: list[str]) -> np.ndarray:
    return np.fromiter(map(xxhash.xxh3_64_intdigest, words), dtype=np.uint64, count=len(words))


def ngram_hashes(hashes: np.ndarray, n: int) -> np.ndarray:
    """Hash of every run of ``n`` consecutive words (empty when there are fewer than ``n``)."""
    count = len(hashes) - n + 1
    if count <= 0:
        return np.empty(0, dtype=np.uint64)
    out = np.zeros(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(n):
            out = out * _P + hashes[j : j + count]
    return out


def text_words(text: str) -> list[str]:
    return normalize_words(text)
