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
from datapipe.kernels.jit import kernel, leaf
from datapipe.kernels.utf8 import every_character
from datapipe.kernels.xxh64 import xxh64
from datapipe.languages import LanguageError, Splitter, word_splitter

MERSENNE = (1 << 61) - 1


@cache
def _marks() -> dict[int, None]:
    """Every nonspacing mark (Unicode category Mn) of this Python's Unicode tables, for ``str.translate``."""
    return {int(c): None for c in np.flatnonzero(_tables()["marks"])}


@cache
def _tables() -> dict[str, np.ndarray]:
    """What the compiled steps of :func:`simplify` read, each a flag per code point: datatrove's punctuation
    (``PUNCTUATION_TRANS``'s keys, each mapped to a space), Python's white space (``str.isspace``, which ``\\s``
    of a ``str`` pattern and ``str.strip`` both use) and the nonspacing marks (Unicode category Mn of this Python:
    kept on disk, :mod:`datapipe.kernels.tables`, as testing 1.1M code points takes 0.3 s)."""
    from datapipe.kernels.tables import stored
    from datapipe.languages.chunk_ids import white_space

    def build() -> dict[str, np.ndarray]:
        chars = every_character(sys.maxunicode + 1)
        return {"marks": np.fromiter((unicodedata.category(c) == "Mn" for c in chars), np.bool_, len(chars))}

    marks = stored("nonspacing-marks", unicodedata.unidata_version, build)["marks"]
    punctuation = np.zeros(max(PUNCTUATION_TRANS) + 1, dtype=np.bool_)
    if set(PUNCTUATION_TRANS.values()) <= {32, " "}:
        punctuation[list(PUNCTUATION_TRANS)] = True
    return {"marks": marks, "punctuation": punctuation, "space": white_space(), **_numbers()}


@cache
def _numbers() -> dict[str, np.ndarray]:
    """What the compiled numbers step reads: each code point, whether ``NUMBERS_PATTERN``'s digit class matches it
    (``regex``'s own ``\\p{Nd}``, of its Unicode version: kept on disk), and the separators its decimal part may
    start with; both empty (the step left to ``regex``) when the pattern is not the one this step was written for."""
    import regex

    from datapipe.kernels.tables import stored

    if NUMBERS_PATTERN.pattern != NUMBERS_SOURCE:
        return {"digits": np.zeros(0, dtype=np.bool_), "separators": np.zeros(0, dtype=np.uint32)}

    def build() -> dict[str, np.ndarray]:
        chars = every_character(sys.maxunicode + 1)
        flags = np.zeros(len(chars), dtype=np.bool_)
        flags[[m.start() for m in regex.finditer(r"\p{Nd}", chars)]] = True
        return {"digits": flags}

    digits = stored("decimal-digits", [regex.__version__, NUMBERS_SOURCE], build)["digits"]
    return {"digits": digits, "separators": np.array([ord(c) for c in NUMBER_SEPARATORS], dtype=np.uint32)}


# datatrove's NUMBERS_PATTERN (a run of digits, optionally one separator and another run: "0"), as the compiled
# step reads it; another pattern is left to ``regex``
NUMBER_SEPARATORS = ".,،٫⎖⎗⎘"
NUMBERS_SOURCE = r"\p{Nd}+([" + NUMBER_SEPARATORS + r"]{1}\p{Nd}+)?"


def _rest_in_python(text: str) -> str:
    """:func:`simplify`'s steps after the numbers, in Python's own string methods (a text with a lone surrogate,
    which UTF-32 cannot hold)."""
    text = WHITESPACE_PATTERN.sub(" ", text.translate(PUNCTUATION_TRANS).strip())
    if not text.isascii():
        text = unicodedata.normalize("NFD", text).translate(_marks())
    return text.strip()


def simplify(text: str) -> str:
    """datatrove's ``simplify_text`` with its default settings, the same string, ~4x faster.

    Lower case and the canonical decomposition stay Python's own (C); the character steps around them run
    compiled over the text's code points: numbers to "0" (``regex``'s sub took ~20 us of a page's ~90 us),
    punctuation to spaces, white space stripped and runs of it made one space, then nonspacing marks dropped and
    the ends stripped. In Python, ``str.translate`` with a dict looks up
    every non-ASCII character: 0.29 of the 0.4 CPU s that simplifying the multilingual benchmark's German pages
    took (``tests/test_languages.py`` holds this to ``simplify_text`` on every fixture document and on generated
    strings)."""
    text = text.lower()
    t = _tables()
    try:
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    except UnicodeEncodeError:  # a lone surrogate
        return _rest_in_python(NUMBERS_PATTERN.sub("0", text))
    if not t["punctuation"].any() or not len(t["digits"]):  # a datatrove of other steps: its own
        return _rest_in_python(NUMBERS_PATTERN.sub("0", text))
    spaced = _spaced(codes, t["punctuation"], t["space"], t["digits"], t["separators"])
    d = _decompositions()
    got, exact = _decomposed_unmarked(spaced, d["starts"], d["points"], d["odd"], t["marks"], t["space"])
    if exact:
        return got.tobytes().decode("utf-32-le")
    text = spaced.tobytes().decode("utf-32-le")
    codes = np.frombuffer(unicodedata.normalize("NFD", text).encode("utf-32-le"), dtype=np.uint32)
    return _unmarked(codes, t["marks"], t["space"]).tobytes().decode("utf-32-le")


@cache
def _decompositions() -> dict[str, np.ndarray]:
    """Each code point's canonical decomposition (``unicodedata.normalize("NFD", c)``, where it is not ``c``
    itself): ``points[starts[c]:starts[c + 1]]`` (empty for a code point that stays as it is), and ``odd``: the
    code points of canonical combining class above 0 that are not nonspacing marks (kept on disk, as deciding
    1.1M code points takes ~1 s)."""
    from datapipe.kernels.tables import stored

    def build() -> dict[str, np.ndarray]:
        sizes = np.zeros(sys.maxunicode + 2, dtype=np.int32)
        odd = np.zeros(sys.maxunicode + 1, dtype=np.bool_)
        parts: list[str] = []
        for c, ch in enumerate(every_character(sys.maxunicode + 1)):
            if unicodedata.combining(ch) and unicodedata.category(ch) != "Mn":
                odd[c] = True
            d = unicodedata.normalize("NFD", ch)
            if d != ch:
                sizes[c + 1] = len(d)
                parts.append(d)
        points = np.array([ord(x) for x in "".join(parts)] or [0], dtype=np.uint32)
        return {"starts": np.cumsum(sizes, dtype=np.int32), "points": points, "odd": odd}

    return stored("canonical-decompositions", unicodedata.unidata_version, build)


@kernel
def _decomposed_unmarked(codes, starts, points, odd, marks, space):  # pragma: no cover - compiled
    """``unicodedata.normalize("NFD", text)`` without its nonspacing marks, then ``str.strip``, over the code points
    of a text: each code point's canonical decomposition, marks dropped. NFD is those decompositions in order,
    then the canonical reordering, which only swaps adjacent characters of combining class above 0; when every
    such character is a nonspacing mark they are all dropped, and the order of what is kept is the order of the
    decompositions. Returns (the code points, True), or (empty, False) where a character of class above 0 is not
    a nonspacing mark (``odd``: Python's ``normalize`` then decides).

    Why: ``normalize`` and the UTF-32 copies around it were ~a third of :func:`simplify`'s time on the
    multilingual benchmark's European pages (nearly every one holds a letter with a diacritic)."""
    out = np.empty(4 * len(codes) + 1, dtype=np.uint32)  # no canonical decomposition is longer than 4
    n = 0
    for c in codes:
        s, e = starts[c], starts[c + 1]
        if s == e:
            if odd[c]:
                return out[:0], False
            if not marks[c]:
                out[n] = c
                n += 1
        else:
            for q in range(s, e):
                d = points[q]
                if odd[d]:
                    return out[:0], False
                if not marks[d]:
                    out[n] = d
                    n += 1
    a, b = _strip(out, n, space)
    return out[a:b], True


@leaf
def _strip(out, n, space):  # pragma: no cover - compiled
    """Where ``str.strip`` would cut the first ``n`` code points of ``out``: (start, end) without the white space
    (``space``) at either end."""
    a, b = 0, n
    while a < b and out[a] < len(space) and space[out[a]]:
        a += 1
    while b > a and out[b - 1] < len(space) and space[out[b - 1]]:
        b -= 1
    return a, b


@kernel
def _spaced(codes, punctuation, space, digits, separators):  # pragma: no cover - compiled
    """``WHITESPACE_PATTERN.sub(" ", NUMBERS_PATTERN.sub("0", text).translate(PUNCTUATION_TRANS).strip())`` over
    code points. A number is a run of digits, then one separator and a run of digits if they follow (the pattern's
    greedy run and optional group: no other way of matching it is ever tried), left to right as ``sub`` finds
    them; its "0" then meets the other steps as any character."""
    out = np.empty(len(codes), dtype=np.uint32)
    n = 0
    pending = False  # white space seen since the last character kept (none is written before the first)
    i, end = 0, len(codes)
    while i < end:
        c = codes[i]
        i += 1
        if digits[c]:
            while i < end and digits[codes[i]]:
                i += 1
            if i + 1 < end and digits[codes[i + 1]]:
                for s in separators:
                    if codes[i] == s:
                        i += 2
                        while i < end and digits[codes[i]]:
                            i += 1
                        break
            c = np.uint32(48)
        if c < len(punctuation) and punctuation[c]:
            c = np.uint32(32)
        if c < len(space) and space[c]:
            pending = n > 0
            continue
        if pending:
            out[n] = 32
            n += 1
            pending = False
        out[n] = c
        n += 1
    return out[:n]


@kernel
def _unmarked(codes, marks, space):  # pragma: no cover - compiled
    """The code points without nonspacing marks, then ``str.strip``."""
    out = np.empty(len(codes), dtype=np.uint32)
    n = 0
    for c in codes:
        if not marks[c]:
            out[n] = c
            n += 1
    s, e = _strip(out, n, space)
    return out[s:e]


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
        """XXH64 of each word n-gram of the simplified text, its words joined by spaces, hashed in compiled code
        from the words' UTF-8 bytes: from the table of words where the splitter numbers them (``split_ids``),
        else from its words."""
        simple = simplify(text)
        split_ids = getattr(self.splitter, "split_ids", None)
        got = split_ids(simple) if split_ids is not None else None
        if got is not None:
            ids, table = got
            arena, starts = table.interned.arena, table.interned.starts
        else:
            encoded = [w.encode("utf-8", errors="surrogatepass") for w in self.splitter.split(simple)]
            arena = np.frombuffer(b"".join(encoded) or b"\0", dtype=np.uint8)
            starts = np.zeros(len(encoded) + 1, dtype=np.int64)
            np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=starts[1:])
            ids = np.arange(len(encoded), dtype=np.int64)
        return _ngram_hashes(arena, starts, ids, self.ngram)

    def signature(self, text: str) -> np.ndarray | None:
        shingles = self.shingles(text)
        if shingles.size == 0:
            return None
        a, b = self.parameters
        return _minimum(shingles, a, b)


@kernel
def _ngram_hashes(arena, starts, ids, n):  # pragma: no cover - compiled
    """XXH64 of each n-gram of the words ``ids`` (word w's UTF-8: ``arena[starts[w]:starts[w + 1]]``) joined by
    spaces, as ``xxh64_intdigest(" ".join(words[i : i + n]))``.

    The words are joined by spaces once, and each n-gram is hashed where it lies in that joined text (the bytes
    from its first word's start to its last word's end): each word's bytes are copied once, not once for each of
    the n n-grams that hold it (as the first version did)."""
    m = len(ids) - n + 1
    if m <= 0:
        return np.zeros(0, dtype=np.uint64)
    size = 0
    for w in ids:
        size += starts[w + 1] - starts[w] + 1
    joined = np.empty(size, dtype=np.uint8)
    # where each word starts in ``joined``, and one past the end
    begins = np.empty(len(ids) + 1, dtype=np.int64)
    k = 0
    for j in range(len(ids)):
        begins[j] = k
        w = ids[j]
        for q in range(starts[w], starts[w + 1]):
            joined[k] = arena[q]
            k += 1
        joined[k] = 32
        k += 1
    begins[len(ids)] = k
    out = np.empty(m, dtype=np.uint64)
    for i in range(m):
        out[i] = xxh64(joined, begins[i], begins[i + n] - 1)  # without the space after its last word
    return out


@kernel
def _minimum(shingles, a, b):  # pragma: no cover - compiled
    """Each permutation's minimum of ``(a * s + b) mod 2**64 mod (2**61 - 1)`` over the shingles. The modulo of a
    Mersenne prime is a mask, a shift and at most one subtraction (x = hi * 2**61 + lo = hi + lo, mod p; hi < 8, so
    hi + lo < 2p), not a 64-bit division: 0.2 -> 0.05 CPU s over the German pages' signatures."""
    p = np.uint64(MERSENNE)
    out = np.full(a.shape[0], np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
    for i in range(shingles.shape[0]):
        s = shingles[i]
        for k in range(a.shape[0]):
            x = a[k] * s + b[k]  # the product and sum wrap modulo 2**64, as numpy's do
            v = (x & p) + (x >> np.uint64(61))
            if v >= p:
                v -= p
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
