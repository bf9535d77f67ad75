"""MinHash signatures and LSH band keys, computed for many documents at once.

Shingles are word n-grams of the normalized text, hashed to 64 bits in one compiled pass over the text's bytes
(a polynomial hash per word, n of them mixed, finalized with splitmix64): no Python loop over words. Signatures use datasketch's ``affine64`` scheme exactly:
each shingle hash is pre-mixed with MurmurHash3's 64-bit finalizer, then permutation k maps it to
``a_k * h + b_k mod 2**64`` (``a_k`` odd, so a bijection: no collisions, unlike the legacy fold of a 61-bit prime
range to 32 bits, which inflates similarity on large sets), with datasketch's ``RandomState(seed)`` draws of a and b.
A signature therefore equals datasketch's ``MinHash(scheme="affine64")`` fed the same shingle hashes. The loop over
shingles x permutations is compiled with numba instead of materializing a shingles x permutations matrix.

LSH: ``b`` bands of ``r`` rows; two documents become candidates when all ``r`` values of some band agree, which
happens with probability ``1 - (1 - s**r)**b`` for Jaccard similarity ``s``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xxhash
from datatrove.utils.text import PUNCTUATION

from datapipe.config.stages import MinHashConfig
from datapipe.kernels.jit import kernel
from datapipe.kernels.normalize import normalized_bytes

MAX_HASH = np.uint64((1 << 64) - 1)


def s_curve(s: float, bands: int, rows: int) -> float:
    """Probability that two documents of Jaccard similarity ``s`` share at least one band."""
    return 1.0 - (1.0 - s**rows) ** bands


def permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The (a, b) arrays datasketch draws for ``MinHash(num_perm, seed, scheme="affine64")``."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 63, num_perm, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    b = gen.randint(0, 1 << 64, num_perm, dtype=np.uint64)
    return np.ascontiguousarray(a), np.ascontiguousarray(b)


@kernel
def _signatures(hashes, offsets, a, b, out):  # pragma: no cover - compiled
    k_count = a.shape[0]
    for d in range(offsets.shape[0] - 1):
        for k in range(k_count):
            out[d, k] = np.uint64(0xFFFFFFFFFFFFFFFF)
        for i in range(offsets[d], offsets[d + 1]):
            h = hashes[i]  # MurmurHash3 fmix64, a bijection
            h ^= h >> np.uint64(33)
            h *= np.uint64(0xFF51AFD7ED558CCD)
            h ^= h >> np.uint64(33)
            h *= np.uint64(0xC4CEB9FE1A85EC53)
            h ^= h >> np.uint64(33)
            for k in range(k_count):
                v = a[k] * h + b[k]  # wraps modulo 2**64
                if v < out[d, k]:
                    out[d, k] = v


_SEPARATORS = np.zeros(256, dtype=np.bool_)
_SEPARATORS[[9, 10, 32]] = True
for _b in range(128):
    if chr(_b) in PUNCTUATION:
        _SEPARATORS[_b] = True


@kernel
def _mix64(z):  # pragma: no cover - compiled; splitmix64's finalizer
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@kernel
def _shingles(data, separators, numbers, ngram):  # pragma: no cover - compiled
    """Distinct sorted hashes of word n-grams of normalized UTF-8 ``data``, in one pass over its bytes.

    Bytes in ``separators`` end a word; with ``numbers`` an ASCII number (digits, optionally one '.' or ',' and
    more digits) becomes the single character '0' (datatrove's number rule, done here for ASCII text).
    """
    n = data.shape[0]
    words = np.empty(n // 2 + 2, dtype=np.uint64)
    count = 0
    h = np.uint64(0)
    length = 0
    i = 0
    base = np.uint64(0x100000001B3)
    while i < n:
        c = data[i]
        if numbers and 48 <= c <= 57:
            j = i + 1
            while j < n and 48 <= data[j] <= 57:
                j += 1
            if j + 1 < n and (data[j] == 46 or data[j] == 44) and 48 <= data[j + 1] <= 57:
                j += 2
                while j < n and 48 <= data[j] <= 57:
                    j += 1
            h = h * base + np.uint64(48)
            length += 1
            i = j
            continue
        if separators[c]:
            if length:
                words[count] = _mix64(h ^ (np.uint64(length) << np.uint64(56)))
                count += 1
                h = np.uint64(0)
                length = 0
        else:
            h = h * base + np.uint64(c)
            length += 1
        i += 1
    if length:
        words[count] = _mix64(h ^ (np.uint64(length) << np.uint64(56)))
        count += 1
    if count == 0:
        return np.empty(0, dtype=np.uint64)
    k = min(ngram, count)  # a text shorter than n words is one shingle of all its words
    m = count - k + 1
    out = np.empty(m, dtype=np.uint64)
    for s in range(m):
        acc = words[s]
        for t in range(1, k):
            acc = acc * np.uint64(0x9E3779B97F4A7C15) + words[s + t]
        out[s] = _mix64(acc)
    out.sort()
    keep = 1
    for s in range(1, m):
        if out[s] != out[keep - 1]:
            out[keep] = out[s]
            keep += 1
    return out[:keep].copy()


def shingle_hashes(text: str, ngram: int = 5) -> np.ndarray:
    """Sorted distinct 64-bit hashes of the word n-grams of ``text`` normalized as datatrove does."""
    low = text.lower()
    if low.isascii():  # the common case: everything happens in the compiled pass
        return _shingles(np.frombuffer(low.encode("ascii"), dtype=np.uint8), _SEPARATORS, True, ngram)
    return _shingles(np.frombuffer(normalized_bytes(text), dtype=np.uint8), _SEPARATORS, False, ngram)


def shingle_hashes_of_normalized(normalized: bytes, ngram: int = 5) -> np.ndarray:
    """:func:`shingle_hashes` of a text whose UTF-8 normalization (:func:`datapipe.kernels.normalize.normalize`) is
    ``normalized``: what a stage that also hashes the normalized text for exact dedup gives, so that a text is
    normalized once (on the e2e benchmark's non-ASCII documents the second normalization was 0.58 of the 1.34 CPU
    s that signing took)."""
    return _shingles(np.frombuffer(normalized, dtype=np.uint8), _SEPARATORS, False, ngram)


@dataclass
class Shingler:
    """Word n-gram shingles of normalized text as a sorted array of distinct 64-bit hashes."""

    ngram: int = 5

    def __call__(self, text: str) -> np.ndarray:
        return shingle_hashes(text, self.ngram)

    def of_normalized(self, normalized: bytes) -> np.ndarray:
        return shingle_hashes_of_normalized(normalized, self.ngram)


class MinHasher:
    def __init__(self, config: MinHashConfig) -> None:
        self.config = config
        self.a, self.b = permutations(config.num_perm, config.seed)

    def signatures(self, shingle_sets: list[np.ndarray]) -> np.ndarray:
        """One uint64 signature row per document (all-max for a document without shingles)."""
        offsets = np.zeros(len(shingle_sets) + 1, dtype=np.int64)
        np.cumsum([len(s) for s in shingle_sets], out=offsets[1:])
        flat = np.concatenate(shingle_sets) if shingle_sets else np.zeros(0, dtype=np.uint64)
        out = np.empty((len(shingle_sets), self.config.num_perm), dtype=np.uint64)
        _signatures(flat.astype(np.uint64, copy=False), offsets, self.a, self.b, out)
        return out

    def band_keys(self, signature: np.ndarray) -> list[int]:
        """One 64-bit key per band (seeded by the band's index, so equal rows in different bands differ)."""
        r = self.config.rows
        return [
            xxhash.xxh3_64_intdigest(signature[i * r : (i + 1) * r].tobytes(), seed=i)
            for i in range(self.config.bands)
        ]


@kernel
def _shared(a, b):  # pragma: no cover - compiled
    """How many values two sorted arrays of distinct values share: one merge, no arrays made."""
    i = j = n = 0
    na, nb = a.shape[0], b.shape[0]
    while i < na and j < nb:
        x, y = a[i], b[j]
        if x == y:
            n += 1
            i += 1
            j += 1
        elif x < y:
            i += 1
        else:
            j += 1
    return n


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Exact Jaccard similarity of two sorted arrays of distinct shingle hashes.

    The global phase verifies every candidate pair in one task (8,602 pairs on the e2e build); a merge counts
    their shared shingles in 8 us where ``np.intersect1d`` took 18 us (it concatenates and sorts both)."""
    if not len(a) and not len(b):
        return 1.0
    inter = int(_shared(a, b))
    return inter / (len(a) + len(b) - inter)


def estimate(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    return float(np.mean(sig_a == sig_b))
