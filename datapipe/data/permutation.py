"""Keyed permutations for shuffling without state: position i of epoch e maps to a row by a pure function.

A Feistel network over the smallest even number of bits that covers [0, n) is a bijection on that power-of-two
domain; cycle walking (apply again while the result is >= n) makes it a bijection on [0, n) for every n >= 1,
including 1 and non-powers of two. The domain is less than 4n, so walks are short. Round functions are
splitmix64 mixes of the right half with a per-round key derived from the seed (and epoch): no LCG, whose low bits
repeat with short periods and leave data looking unshuffled.
"""

from __future__ import annotations

import numpy as np

_M64 = (1 << 64) - 1


def _mix(z: np.ndarray) -> np.ndarray:
    z = z ^ (z >> np.uint64(30))
    z = z * np.uint64(0xBF58476D1CE4E5B9)
    z = z ^ (z >> np.uint64(27))
    z = z * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def derive_key(*parts: int) -> int:
    """A 64-bit key from integers (seed, epoch, block, ...), mixed so nearby inputs give unrelated keys."""
    z = np.array([0x9E3779B97F4A7C15], dtype=np.uint64)
    with np.errstate(over="ignore"):
        for p in parts:
            z = _mix(z ^ np.uint64(p & _M64))
    return int(z[0])


class FeistelPermutation:
    """A keyed bijection of [0, n)."""

    def __init__(self, n: int, key: int, rounds: int = 6) -> None:
        if n < 1:
            raise ValueError(f"a permutation needs n >= 1, got {n}")
        self.n = n
        bits = max(2, (n - 1).bit_length())
        bits += bits % 2
        self.half = np.uint64(bits // 2)
        self.mask = np.uint64((1 << (bits // 2)) - 1)
        self.keys = [np.uint64(derive_key(key, r)) for r in range(rounds)]

    def _round_trip(self, x: np.ndarray) -> np.ndarray:
        left, right = x >> self.half, x & self.mask
        with np.errstate(over="ignore"):
            for k in self.keys:
                left, right = right, left ^ (_mix(right ^ k) & self.mask)
        return (left << self.half) | right

    def apply(self, positions) -> np.ndarray:
        """The permuted index of every position (an array of ints in [0, n))."""
        x = np.asarray(positions, dtype=np.uint64)
        if x.size and int(x.max()) >= self.n:
            raise IndexError(f"position out of range for a permutation of {self.n}")
        y = self._round_trip(x)
        out_of_range = y >= np.uint64(self.n)
        while out_of_range.any():  # cycle walking
            y[out_of_range] = self._round_trip(y[out_of_range])
            out_of_range = y >= np.uint64(self.n)
        return y.astype(np.int64)

    def __call__(self, i: int) -> int:
        return int(self.apply(np.array([i]))[0])


class BlockShuffle:
    """Shuffle for read locality: permute blocks of ``block`` consecutive rows, then rows within each window of
    ``window`` consecutive (permuted) blocks. Every row appears exactly once; nearby positions read nearby rows.

    Only whole blocks are permuted; the last ``n % block`` rows join the last window, so every window but the last
    holds exactly ``block * window`` positions.
    """

    def __init__(self, n: int, key: int, block: int = 64, window: int = 8) -> None:
        if n < 1 or block < 1 or window < 1:
            raise ValueError("n, block and window must be >= 1")
        self.n, self.block, self.window, self.key = n, block, window, key
        self.full = n // block
        self.windows = max(1, -(-self.full // window))
        self.blocks = FeistelPermutation(self.full, derive_key(key, 1)) if self.full else None

    def _window_rows(self, w: int) -> np.ndarray:
        parts = []
        if self.blocks is not None:
            first = w * self.window
            for b in self.blocks.apply(np.arange(first, min(first + self.window, self.full))):
                parts.append(np.arange(b * self.block, (b + 1) * self.block))
        if w == self.windows - 1 and self.full * self.block < self.n:
            parts.append(np.arange(self.full * self.block, self.n))
        return np.concatenate(parts)

    def apply(self, positions) -> np.ndarray:
        pos = np.asarray(positions, dtype=np.int64)
        if pos.size and (pos.min() < 0 or pos.max() >= self.n):
            raise IndexError(f"position out of range for a shuffle of {self.n}")
        out = np.empty(len(pos), dtype=np.int64)
        span = self.block * self.window
        win = np.minimum(pos // span, self.windows - 1)
        for w in np.unique(win):
            rows = self._window_rows(int(w))
            inner = FeistelPermutation(len(rows), derive_key(self.key, 2, int(w)))
            sel = win == w
            out[sel] = rows[inner.apply(pos[sel] - int(w) * span)]
        return out


def block_counts(weights: dict[str, float], block: int) -> dict[str, int]:
    """Rows per component in a block of ``block`` rows: largest-remainder apportionment of the weights, exact sums.

    Ties in the remainders go to the component listed first. A component with a positive weight that would get no
    row is an error naming it (it would otherwise vanish from the mixture without a word).
    """
    names = list(weights)
    w = np.array([weights[k] for k in names], dtype=np.float64)
    if (w < 0).any() or w.sum() <= 0:
        raise ValueError("weights must be >= 0 and not all zero")
    quotas = w / w.sum() * block
    counts = np.floor(quotas).astype(np.int64)
    order = sorted(range(len(names)), key=lambda i: (-(quotas[i] - counts[i]), i))
    for i in order[: block - int(counts.sum())]:
        counts[i] += 1
    for name, weight, c in zip(names, w, counts, strict=True):
        if weight > 0 and c == 0:
            raise ValueError(
                f"component {name!r} (weight {weight:g}) gets no row in a block of {block}: raise its weight "
                f"or the block size"
            )
    return dict(zip(names, (int(c) for c in counts), strict=True))
