"""The compiled pieces of FineWeb-2's MinHash (:mod:`datapipe.dedup.wordsig`): XXH64 against the ``xxhash`` package,
``simplify`` against datatrove's ``simplify_text`` on strings made to hit its edges (lone surrogates, marks at the
ends, every kind of white space, numbers in other scripts), and the shingles against datatrove's way of making
them, from the table of words and from a splitter that has none."""

from __future__ import annotations

import random

import numpy as np
import xxhash
from datatrove.utils.text import simplify_text

from datapipe.dedup.wordsig import WordMinHash, simplify
from datapipe.kernels.xxh64 import xxh64
from datapipe.languages import word_splitter


def test_xxh64_is_xxhash_on_every_length() -> None:
    rng = random.Random(0)
    for n in range(130):
        raw = bytes(rng.randrange(256) for _ in range(n))
        data = np.frombuffer(b"pad" + raw + b"\0", dtype=np.uint8)
        assert int(xxh64(data, 3, 3 + n)) == xxhash.xxh64_intdigest(raw), n


EDGES = [
    " ", "\n", "\t", "\u00a0", "\u2028", "\u3000", "\x1c", "\x85", "\u0301", "\u0308", "\u20dd", "a", "Z", "ß",
    "İ", "ǅ", "Ω", "ё", "é", "1", "٣", "١٫٥", "12,5", "…", "—", "!", "¿", "€", "😀", "\U0001d400", "\ud800",
    "ﬁ", "Ǆ", ";", "\u037e", "ـ", "\u200b",
    # numbers: datatrove's pattern takes a run of digits (any script's), then one separator and a run if they follow
    "0", "7", ".", ",", "،", "٫", "⎖", "⎗", "⎘", "３", "𝟙", "߃", "²", "½", "Ⅻ", "1.2", "3,", ".4", "5⎘6", "٣٫",
]  # fmt: skip


def test_simplify_is_simplify_text_on_edges() -> None:
    rng = random.Random(1)
    for _ in range(3000):
        text = "".join(rng.choice(EDGES) for _ in range(rng.randint(0, 12)))
        assert simplify(text) == simplify_text(text), repr(text)
    for text in ("", " ", "\u0301 a \u0301", "a \u0301 b", "\u0301", "x\ud800y. 3,5"):
        assert simplify(text) == simplify_text(text), repr(text)


def test_shingles_are_datatrove_shingles() -> None:
    text = "Ça coûte 12,5 € — déjà! " * 3 + "Die Straße ist lang, der Weg (auch) weit. 北京大学 生物 系"
    for language in ("deu_Latn", "fra_Latn", "cmn_Hani"):
        words = word_splitter(language).split(simplify_text(text))
        want = [xxhash.xxh64_intdigest(" ".join(words[i : i + 5])) for i in range(len(words) - 4)]
        assert WordMinHash(word_splitter(language)).shingles(text).tolist() == want, language
    assert WordMinHash(word_splitter("deu_Latn")).shingles("zu kurz").size == 0


def test_minimum_is_the_modulo_of_datatrove() -> None:
    from datapipe.dedup.wordsig import MERSENNE, _minimum, permutations

    rng = np.random.default_rng(3)
    shingles = np.concatenate(
        (
            rng.integers(0, 2**64, size=2000, dtype=np.uint64),
            np.array([0, 2**64 - 1, MERSENNE, MERSENNE - 1], np.uint64),
        )
    )
    a, b = permutations(112, 1)
    want = ((a[None, :] * shingles[:, None] + b[None, :]) % np.uint64(MERSENNE)).min(axis=0)
    assert np.array_equal(_minimum(shingles, a, b), want)
    # values at and around the prime and its multiples, where the folded sum needs its subtraction
    for x in (MERSENNE, MERSENNE - 1, MERSENNE + 1, 2 * MERSENNE, 2**64 - 1, 7 * MERSENNE + 6):
        one, zero = np.array([1], np.uint64), np.array([0], np.uint64)
        got = _minimum(np.array([x], np.uint64), one, zero)
        assert int(got[0]) == x % MERSENNE


def test_simplify_is_simplify_text_on_every_code_point_and_combining_marks() -> None:
    """The compiled decomposition (each code point's NFD, marks dropped) where Python's ``normalize`` was: every
    code point beside letters with diacritics, and marks of every kind in random order (classes 0 and above,
    nonspacing or not: a spacing mark of class above 0 sends the text to ``normalize``)."""
    import sys

    points = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c < 0xE000]
    for i in range(0, len(points), 64):
        group = points[i : i + 64]
        text = "a" + " b".join(group) + "Ä" + "".join(group) + " é\u0301\u0323"
        assert simplify(text) == simplify_text(text), hex(ord(group[0]))
    rng = random.Random(5)
    parts = ["\u0301", "\u0323", "\u0345", "\U0001d165", "\U0001d16d", "\u0f71", "\u302a", "ǅ", "ᾂ", "ä", "a"]
    parts += [" ", "1", ".", "가", "\u05b0", "\u0903", "\u093c"]
    for _ in range(20_000):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(0, 8)))
        assert simplify(text) == simplify_text(text), repr(text)
