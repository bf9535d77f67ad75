"""MinHash signatures over a language's own words, bit for bit as datatrove's ``MinhashDedupSignature`` computes
them with ``language=`` set (FineWeb-2's per-language dedup: 14 buckets x 8 hashes, word 5-grams, 64-bit xxhash).

The text is simplified as datatrove simplifies it (lower case, digits to 0, punctuation to spaces, whitespace
runs to one space, diacritics removed: :func:`simplify`, the same string as datatrove's ``simplify_text``), split into words by the language's
word tokenizer (:func:`datapipe.languages.word_splitter`, the same words as datatrove's), and each word n-gram,
joined by spaces, is hashed with XXH64. Permutation k maps a shingle ``s`` to ``(a_k * s + b_k) mod 2**64 mod
(2**61 - 1)`` (numpy's uint64 product wraps before the modulo, and so does ours) with datatrove's
``RandomState(seed)`` draws of a and b; the signature is each permutation's minimum. A text with fewer words than
the n-gram size has no shingles and no signature (datatrove writes none for it).

What is faster than datatrove: the words (memoized per chunk where that is exact, see ``languages/words.py``),
and the minimum over shingles x permutations, one compiled loop instead of a (shingles x 112) matrix.
"""

from __future__ import annotations

import sys
import unicodedata
from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np
import xxhash
from datatrove.utils.text import NUMBERS_PATTERN, PUNCTUATION_TRANS, WHITESPACE_PATTERN

from datapipe.config.stages import MinHashConfig
from datapipe.dedup.minhash import shingle_hashes
from datapipe.kernels.jit import kernel
from datapipe.languages import LanguageError, Splitter, word_splitter

MERSENNE = (1 << 61) - 1


@cache
def _marks() -> dict[int, None]:
    """Every nonspacing mark (Unicode category Mn) of this Python's Unicode tables, for ``str.translate``."""
    return {c: None for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Mn"}


def simplify(text: str) -> str:
    """datatrove's ``simplify_text`` with its default settings, the same string, 1.5x faster: the diacritics go in
    one ``str.translate`` (datatrove tests each character's category in a Python generator, a third of the
    MinHash step's time on German pages) and an ASCII text skips the Unicode steps."""
    text = NUMBERS_PATTERN.sub("0", text.lower())
    text = WHITESPACE_PATTERN.sub(" ", text.translate(PUNCTUATION_TRANS).strip())
    if not text.isascii():
        text = unicodedata.normalize("NFD", text).translate(_marks())
    return text.strip()


def permutations(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """datatrove's ``MinhashDedupSignature.parameters``: ``RandomState(seed)`` draws of a in [1, p) and b in [0, p)."""
    gen = np.random.RandomState(seed)
    a = gen.randint(1, MERSENNE, dtype=np.uint64, size=(1, n))
    b = gen.randint(0, MERSENNE, dtype=np.uint64, size=(1, n))
    return np.ascontiguousarray(a[0]), np.ascontiguousarray(b[0])


@dataclass(frozen=True)
class WordMinHash:
    """FineWeb-2's MinHash over one language's words: ``signature(text)`` -> uint64[buckets * rows] or None."""

    splitter: Splitter
    buckets: int = 14
    rows: int = 8
    ngram: int = 5
    seed: int = 1

    @cached_property
    def parameters(self) -> tuple[np.ndarray, np.ndarray]:
        return permutations(self.buckets * self.rows, self.seed)

    def shingles(self, text: str) -> np.ndarray:
        words = self.splitter.split(simplify(text))
        n = self.ngram
        h = xxhash.xxh64_intdigest
        return np.fromiter(
            (h(" ".join(words[i : i + n])) for i in range(len(words) - n + 1)),
            dtype=np.uint64,
            count=max(0, len(words) - n + 1),
        )

    def signature(self, text: str) -> np.ndarray | None:
        shingles = self.shingles(text)
        if shingles.size == 0:
            return None
        a, b = self.parameters
        return _minimum(shingles, a, b)


@kernel
def _minimum(shingles, a, b):  # pragma: no cover - compiled
    p = np.uint64(MERSENNE)
    out = np.full(a.shape[0], np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
    for i in range(shingles.shape[0]):
        s = shingles[i]
        for k in range(a.shape[0]):
            v = (a[k] * s + b[k]) % p  # the product and sum wrap modulo 2**64, as numpy's do
            if v < out[k]:
                out[k] = v
    return out


class LanguageSigner:
    """The dedup stage's MinHash per language (``minhash.words: language``): shingles over each document's
    language's words, datatrove's signatures, and band keys salted with the language, so that two documents of
    different languages never share a bucket and so never join one cluster.

    A document whose language has no word tokenizer here (``unknown``, a language whose tokenizer downloads its
    models) is shingled over normalized text instead, still inside its own language's buckets."""

    def __init__(self, config: MinHashConfig) -> None:
        self.config = config
        self._by_language: dict[str, WordMinHash | None] = {}
        self._params = permutations(config.bands * config.rows, config.seed)

    def _signer(self, language: str) -> WordMinHash | None:
        if language not in self._by_language:
            try:
                words = word_splitter(language)
            except LanguageError:
                self._by_language[language] = None
            else:
                c = self.config
                self._by_language[language] = WordMinHash(words, c.bands, c.rows, c.ngram, c.seed)
        return self._by_language[language]

    def shingles(self, text: str, language: str) -> np.ndarray:
        """Sorted distinct shingle hashes (what the store keeps and the verification compares)."""
        signer = self._signer(language)
        if signer is None:
            return shingle_hashes(text, self.config.ngram)
        return np.unique(signer.shingles(text))

    def signatures(self, shingle_sets: list[np.ndarray]) -> np.ndarray:
        """One row per document; all-max for one without shingles (it has no signature and joins no bucket)."""
        a, b = self._params
        out = np.full((len(shingle_sets), len(a)), np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
        for i, s in enumerate(shingle_sets):
            if len(s):
                out[i] = _minimum(s, a, b)
        return out

    def band_keys(self, signature: np.ndarray, language: str) -> list[int]:
        r, salt = self.config.rows, language.encode("utf-8") + b"\0"
        return [
            xxhash.xxh3_64_intdigest(salt + signature[i * r : (i + 1) * r].tobytes(), seed=i)
            for i in range(self.config.bands)
        ]
