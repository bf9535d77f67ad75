"""XXH64 (seed 0) in compiled code: the hash datatrove gives each MinHash shingle (``xxhash.xxh64_intdigest`` of
the n-gram's words joined by spaces), computed without making the joined string.

Why: hashing the 5-grams of the multilingual benchmark's German pages one Python string at a time took 0.2 of the
0.8 CPU s of their signatures. ``tests/test_wordsig_compiled.py`` holds it to the ``xxhash`` package on every
length from 0 to 100 bytes and on real shingles.
"""

from __future__ import annotations

import numpy as np

from datapipe.kernels.jit import leaf

P1 = np.uint64(0x9E3779B185EBCA87)
P2 = np.uint64(0xC2B2AE3D27D4EB4F)
P3 = np.uint64(0x165667B19E3779F9)
P4 = np.uint64(0x85EBCA77C2B2AE63)
P5 = np.uint64(0x27D4EB2F165667C5)


@leaf
def _rotl(x, r):  # pragma: no cover - compiled
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@leaf
def _read64(data, i):  # pragma: no cover - compiled
    v = np.uint64(0)
    for k in range(8):
        v |= np.uint64(data[i + k]) << np.uint64(8 * k)
    return v


@leaf
def _read32(data, i):  # pragma: no cover - compiled
    v = np.uint64(0)
    for k in range(4):
        v |= np.uint64(data[i + k]) << np.uint64(8 * k)
    return v


@leaf
def _round(acc, lane):  # pragma: no cover - compiled
    return _rotl(acc + lane * P2, 31) * P1


@leaf
def _merge(acc, v):  # pragma: no cover - compiled
    acc ^= _round(np.uint64(0), v)
    return acc * P1 + P4


@leaf
def xxh64(data, s, e):  # pragma: no cover - compiled
    """XXH64 with seed 0 of the bytes ``data[s:e]`` (uint8), as ``xxhash.xxh64_intdigest``."""
    n = e - s
    i = s
    if n >= 32:
        v1 = P1 + P2
        v2 = P2
        v3 = np.uint64(0)
        v4 = np.uint64(0) - P1
        while i + 32 <= e:
            v1 = _round(v1, _read64(data, i))
            v2 = _round(v2, _read64(data, i + 8))
            v3 = _round(v3, _read64(data, i + 16))
            v4 = _round(v4, _read64(data, i + 24))
            i += 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        h = _merge(h, v1)
        h = _merge(h, v2)
        h = _merge(h, v3)
        h = _merge(h, v4)
    else:
        h = P5
    h += np.uint64(n)
    while i + 8 <= e:
        h ^= _round(np.uint64(0), _read64(data, i))
        h = _rotl(h, 27) * P1 + P4
        i += 8
    if i + 4 <= e:
        h ^= _read32(data, i) * P1
        h = _rotl(h, 23) * P2 + P3
        i += 4
    while i < e:
        h ^= np.uint64(data[i]) * P5
        h = _rotl(h, 11) * P1
        i += 1
    h ^= h >> np.uint64(33)
    h *= P2
    h ^= h >> np.uint64(29)
    h *= P3
    h ^= h >> np.uint64(32)
    return h
