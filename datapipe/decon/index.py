"""The evaluation n-gram index: an exact table (n-gram -> items) when it fits, else a Bloom filter.

Items of at least ``n`` words contribute their distinct word n-grams; items of ``min_words`` to ``n - 1`` words
contribute one "n-gram" of all their words (so a short item is caught only whole, wherever it appears); shorter
items are skipped (too generic to match safely) and counted.

Exact mode answers, for a text, how many of each item's n-grams it contains: a text is contaminated by an item when
that share reaches the threshold (a short item: when it appears whole). Bloom mode (more distinct n-grams than
``max_exact_ngrams``) stores only membership, with the stated false-positive rate per lookup, of each n-gram salted
with its item's size class (the power of two at or below the item's n-gram count): a text is flagged when, in some
class ``b``, its distinct matching n-grams reach ``threshold * b``, or when a short item's words appear whole. An
item exact mode catches (``threshold * c`` of its ``c >= b`` n-grams) is always caught, a text sharing a short common
phrase with a long item is not (unless it also shares n-grams with other items of that size class: the matches are
summed over the class), and items cannot be named.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from datapipe.decon.evalsets import EvalItem
from datapipe.decon.ngrams import ngram_hashes, text_words, word_hashes

_MIX = np.uint64(0xBF58476D1CE4E5B9)


def _sieve(keys: np.ndarray) -> tuple[np.ndarray, int]:
    """A table with a slot per value of a hash's top bits (about 16 slots per key, at most 2**28), set for keys."""
    bits = min(28, max(16, (16 * max(1, len(keys))).bit_length()))
    shift = 64 - bits
    table = np.zeros(1 << bits, dtype=np.uint8)
    table[keys >> np.uint64(shift)] = 1
    return table, shift


def size_class(count: int) -> int:
    """The power of two at or below ``count`` (0 for a short item, caught whole)."""
    return 0 if count <= 1 else 1 << (count.bit_length() - 1)


def _salted(h: np.ndarray, cls: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        return h ^ (np.uint64(cls + 1) * _MIX)


@dataclass
class Bloom:
    bits: np.ndarray  # uint8, one bit per slot
    m: int
    k: int

    @classmethod
    def for_count(cls, n: int, fp_rate: float) -> Bloom:
        m = max(64, math.ceil(-n * math.log(fp_rate) / math.log(2) ** 2))
        k = max(1, round(m / max(1, n) * math.log(2)))
        return cls(np.zeros((m + 7) // 8, dtype=np.uint8), m, k)

    def _positions(self, h: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            h2 = (h * _MIX) | np.uint64(1)
            steps = np.arange(self.k, dtype=np.uint64)
            return ((h[:, None] + steps[None, :] * h2[:, None]) % np.uint64(self.m)).astype(np.int64)

    def add(self, h: np.ndarray) -> None:
        pos = self._positions(h).ravel()
        np.bitwise_or.at(self.bits, pos >> 3, (1 << (pos & 7)).astype(np.uint8))

    def contains(self, h: np.ndarray) -> np.ndarray:
        if not len(h):
            return np.zeros(0, dtype=bool)
        pos = self._positions(h)
        return ((self.bits[pos >> 3] >> (pos & 7)) & 1).astype(bool).all(axis=1)

    def fp_rate(self, n: int) -> float:
        return (1 - math.exp(-self.k * n / self.m)) ** self.k


@dataclass
class Match:
    """What one text matched: the contaminating items (exact mode) and the hashes that made them."""

    contaminated: bool
    items: list[int] = field(default_factory=list)
    hashes: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.uint64))


@dataclass
class EvalIndex:
    n: int
    threshold: float
    item_ids: list[str]
    item_ngrams: np.ndarray  # distinct n-grams per item (1 for a short item)
    short_lengths: tuple[int, ...]
    keys: np.ndarray | None  # exact: sorted distinct hashes
    offsets: np.ndarray | None  # exact: items of keys[i] are members[offsets[i]:offsets[i + 1]]
    members: np.ndarray | None
    bloom: Bloom | None
    classes: tuple[int, ...]  # Bloom mode: the size classes present
    stats: dict[str, object]
    sieve: np.ndarray | None = None  # exact mode: one bit per top bits of a key, to skip most lookups cheaply
    sieve_shift: int = 64

    @classmethod
    def build(
        cls,
        items: list[EvalItem],
        n: int = 13,
        min_words: int = 8,
        threshold: float = 0.5,
        max_exact_ngrams: int = 50_000_000,
        bloom_fp_rate: float = 1e-9,
    ) -> EvalIndex:
        ids: list[str] = []
        counts: list[int] = []
        parts: list[np.ndarray] = []
        owners: list[np.ndarray] = []
        shorts: set[int] = set()
        too_short = 0
        for item in items:
            wh = word_hashes(text_words(item.text))
            if len(wh) >= n:
                hs = np.unique(ngram_hashes(wh, n))
            elif len(wh) >= min_words:
                hs = ngram_hashes(wh, len(wh))
                shorts.add(len(wh))
            else:
                too_short += 1
                continue
            parts.append(hs)
            owners.append(np.full(len(hs), len(ids), dtype=np.int32))
            ids.append(item.id)
            counts.append(len(hs))
        hashes = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
        owner = np.concatenate(owners) if owners else np.empty(0, dtype=np.int32)
        item_ngrams = np.array(counts, dtype=np.int64)
        distinct = int(len(np.unique(hashes)))
        stats: dict[str, object] = {
            "items": len(ids),
            "items_too_short": too_short,
            "short_items": int(sum(1 for c in counts if c == 1)),
            "distinct_ngrams": distinct,
            "ngram": n,
        }
        keys: np.ndarray | None
        offsets: np.ndarray | None
        members: np.ndarray | None  # the items of each key, in key order (exact mode)
        classes: tuple[int, ...]
        if distinct <= max_exact_ngrams:
            order = np.lexsort((owner, hashes))
            hashes, owner = hashes[order], owner[order]
            keep = np.ones(len(hashes), dtype=bool)
            keep[1:] = (hashes[1:] != hashes[:-1]) | (owner[1:] != owner[:-1])
            hashes, owner = hashes[keep], owner[keep]
            keys, starts = np.unique(hashes, return_index=True)
            offsets = np.append(starts, len(hashes)).astype(np.int64)
            stats.update(mode="exact", bytes=int(keys.nbytes + offsets.nbytes + owner.nbytes))
            members = owner
            bloom, classes = None, ()
        else:
            cls_of_item = np.array([size_class(c) for c in counts], dtype=np.int64)
            cls_of = cls_of_item[owner] if len(owner) else np.empty(0, dtype=np.int64)
            classes = tuple(sorted(set(cls_of_item.tolist())))
            salted = np.unique(np.concatenate([_salted(hashes[cls_of == c], c) for c in classes] or [hashes]))
            bloom = Bloom.for_count(len(salted), bloom_fp_rate)
            bloom.add(salted)
            distinct = len(salted)
            keys = offsets = members = None
            stats.update(
                mode="bloom",
                bytes=int(bloom.bits.nbytes),
                bloom_bits=bloom.m,
                bloom_hashes=bloom.k,
                false_positive_rate=float(f"{bloom.fp_rate(distinct):.3g}"),
            )
        sieve, shift = (None, 64) if keys is None else _sieve(keys)
        return cls(
            n,
            threshold,
            ids,
            item_ngrams,
            tuple(sorted(shorts)),
            keys,
            offsets,
            members,
            bloom,
            classes,
            stats,
            sieve,
            shift,
        )

    def candidates(self, words: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(hash, first word, length in words) of every n-gram of the text and of every short-item length."""
        wh = word_hashes(words)
        hs, starts, lengths = [], [], []
        for length in (self.n, *self.short_lengths):
            h = ngram_hashes(wh, length)
            hs.append(h)
            starts.append(np.arange(len(h), dtype=np.int64))
            lengths.append(np.full(len(h), length, dtype=np.int64))
        return np.concatenate(hs), np.concatenate(starts), np.concatenate(lengths)

    def match(self, hashes: np.ndarray, lengths: np.ndarray) -> Match:
        """Whether a text with these candidate hashes is contaminated, by which items, through which hashes."""
        if not len(hashes):
            return Match(False)
        if self.bloom is not None:  # probe every occurrence; only the hits are made distinct (few)
            longs = hashes[lengths == self.n]
            for cls in self.classes:
                if cls == 0:  # items with one n-gram (short ones, or exactly n words): caught whole
                    hit = np.unique(hashes[self.bloom.contains(_salted(hashes, 0))])
                    if len(hit):
                        return Match(True, [], hit)
                    continue
                hit = np.unique(longs[self.bloom.contains(_salted(longs, cls))])
                if len(hit) >= math.ceil(self.threshold * cls):
                    return Match(True, [], hit)
            return Match(False)
        assert self.keys is not None and self.offsets is not None and self.members is not None
        if not len(self.keys):
            return Match(False)
        assert self.sieve is not None
        maybe = self.sieve[hashes >> np.uint64(self.sieve_shift)].astype(bool)
        hashes = hashes[maybe]
        if not len(hashes):
            return Match(False)
        pos = np.minimum(np.searchsorted(self.keys, hashes), len(self.keys) - 1)
        found = self.keys[pos] == hashes
        if not found.any():
            return Match(False)
        hit_keys, first = np.unique(hashes[found], return_index=True)
        hit_pos = pos[found][first]
        groups = [self.members[self.offsets[p] : self.offsets[p + 1]] for p in hit_pos]
        per_item = np.bincount(np.concatenate(groups), minlength=len(self.item_ids))
        items = np.flatnonzero(per_item / np.maximum(self.item_ngrams, 1) >= self.threshold)
        if not len(items):
            return Match(False)
        bad = np.zeros(len(self.item_ids), dtype=bool)
        bad[items] = True
        via = [h for h, g in zip(hit_keys, groups, strict=True) if bad[g].any()]
        return Match(True, items.tolist(), np.array(via, dtype=np.uint64))
