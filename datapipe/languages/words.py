"""Word splitting per language-script, word for word as datatrove's FineWeb-2 steps split it, and faster.

datatrove assigns every language-script a word tokenizer (its ``assets/tokenizer_assignment.csv``: spaCy's blank
tokenizers for most, jieba for Chinese, SudachiPy for Japanese, pyvi for Vietnamese, Kiwi for Korean, pythainlp,
Indic NLP, khmer-nltk, laonlp, ...), and every FineWeb-2 rule (Gopher repetition and quality, FineWeb quality,
MinHash shingles) is defined on those words. ``word_splitter(language).split(text)`` returns exactly
``load_word_tokenizer(language).word_tokenize(text)``; ``tests/test_languages.py`` and ``benchmarks/multilingual.py``
check it on real text in every benchmarked language.

Where it is faster, and why that is still exact:

- spaCy's rule-based tokenizers (German, French, Russian, ... and ``xx`` for the rest) split every
  whitespace-separated chunk on its own: :class:`datapipe.languages.spacy_words.WordSplitter` memoizes per chunk.
- jieba cuts maximal runs of Han characters, letters and digits, and whitespace is never in a run, so the words
  of a text are the words of its whitespace-separated chunks in order: memoized per chunk as well.
- SudachiPy (Japanese) is called directly on the 40,000-byte pieces datatrove cuts, without building a spaCy
  ``Doc`` (tags, lemmas and readings that no rule reads): spaCy's tokens are Sudachi's non-space surfaces.
- Vietnamese runs spaCy's own pyvi tokenizer without datatrove's sentencizer pipe (the tokens are the same).
- Khmer runs khmer-nltk's CRF with its features looked up directly (:mod:`datapipe.languages.khmer`, 1.5x).
- Every other tokenizer is datatrove's own instance, called once per text (datatrove's filters call it once per
  rule, three times per kept document, and once more for MinHash).

A splitter is built lazily, once per process and language (spaCy's tables, jieba's dictionary and Kiwi's model
take 0.1-3 s to load). A tokenizer whose package is missing, or whose models are downloaded at run time (Stanza,
botok), is a :class:`LanguageError` naming the language and the package before any document is read.
"""

from __future__ import annotations

import csv
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

from datapipe.languages.table import LanguageError

# the packages each of datatrove's tokenizer classes imports (module name, PyPI name)
NEEDS: dict[str, tuple[tuple[str, str], ...]] = {
    "SpaCyTokenizer": (("spacy", "spacy"),),
    "WhitespaceTokenizer": (("spacy", "spacy"),),
    "KiwiTokenizer": (
        ("kiwipiepy", "'kiwipiepy<0.22' kiwipiepy-model"),
        ("kiwipiepy_model", "kiwipiepy-model"),
    ),
    "ThaiTokenizer": (("pythainlp", "pythainlp"),),
    "IndicNLPTokenizer": (("indicnlp", "indic-nlp-library"),),
    "KhmerTokenizer": (("khmernltk", "khmer-nltk"),),
    "LaoTokenizer": (("laonlp", "laonlp"),),
    "BurmeseTokenizer": (("pyidaungsu", "pyidaungsu-numpy2"),),
}
SPACY_EXTRA = {
    "zh": (("jieba", "jieba"),),
    # a tokenizer's data packages too (dictionaries, models): without them it fails at its first document
    "ja": (("sudachipy", "sudachipy sudachidict-core"), ("sudachidict_core", "sudachidict-core")),
    "vi": (("pyvi", "pyvi"),),
}
# tokenizers whose models are fetched from the network at first use: not available offline, so not offered
DOWNLOADS = {"StanzaTokenizer": "Stanza", "TibetanTokenizer": "botok"}
# chunks memoized per language (the memo starts over when full): a worker holding 14 languages keeps at most
# ~14 x 131,072 chunks (~400 MB at worst) beside their models (~1 GB for the 18 benchmarked languages)
MEMO_SIZE = 1 << 17
JA_CHUNK_BYTES = 40_000  # datatrove's piece size: SudachiPy refuses one call over 49,149 bytes


class Splitter(Protocol):
    def split(self, text: str) -> list[str]: ...


@dataclass(frozen=True)
class Assignment:
    """datatrove's word tokenizer for one language-script: its class name and argument (a spaCy language code)."""

    language: str
    kind: str
    code: str


@cache
def assignments() -> dict[str, Assignment]:
    """datatrove's table, resolved as its ``load_tokenizer_assignments`` resolves it: ``code_3_script`` first, then
    ``code_3`` for the default script and ``code_1_script`` for the default ISO 639-1 code."""
    from datatrove.utils._import_utils import ASSETS_PATH

    out: dict[str, Assignment] = {}
    with open(os.path.join(ASSETS_PATH, "tokenizer_assignment.csv"), encoding="utf-8") as f:
        rows = csv.DictReader(f)
        next(rows)  # datatrove skips the first row after the header, and so must we
        for row in rows:
            kind = row["type"]
            if not kind:
                continue
            key = f"{row['code_3']}_{row['script']}"
            if key not in out:
                out[key] = Assignment(key, kind, row["tok_code"])
                if row["default_script"]:
                    out[row["code_3"]] = out[key]
            key1 = f"{row['code_1']}_{row['script']}"
            if row["code_1"] and row["default_code_1"] and key1 not in out:
                out[key1] = Assignment(key1, kind, row["tok_code"])
    return out


def assignment(language: str) -> Assignment:
    """The tokenizer datatrove assigns to ``language``, after checking that it can run here."""
    a = assignments().get(language)
    if a is None:
        raise LanguageError(f"language {language}: datatrove assigns it no word tokenizer")
    if a.kind in DOWNLOADS:
        raise LanguageError(
            f"language {language}: its word tokenizer ({DOWNLOADS[a.kind]}) downloads models at run time, "
            "which datapipe does not do"
        )
    needs = NEEDS.get(a.kind)
    if needs is None:
        raise LanguageError(f"language {language}: unknown word tokenizer {a.kind!r}")
    if a.kind == "SpaCyTokenizer":
        needs = needs + SPACY_EXTRA.get(a.code, ())
    for module, package in needs:
        if importlib.util.find_spec(module) is None:
            raise LanguageError(
                f"language {language}: its word tokenizer ({a.kind} {a.code}".rstrip() + f") needs {module}: "
                f"pip install {package}"
            )
    return a


def _stripped(tokens) -> list[str]:
    return [s for s in (t.strip() for t in tokens) if s]


class _ChunkMemo:
    """Words of a text = words of its whitespace-separated chunks in order, each chunk's words computed once."""

    def __init__(self, words_of: Callable[[str], list[str]], memo_size: int = 1_000_000) -> None:
        self._words_of = words_of
        self._memo: dict[str, tuple[str, ...]] = {}
        self._memo_size = memo_size

    def split(self, text: str) -> list[str]:
        memo = self._memo
        out: list[str] = []
        for chunk in text.split():
            words = memo.get(chunk)
            if words is None:
                if len(memo) >= self._memo_size:
                    memo.clear()  # a memo, not a record: starting over changes no result
                words = memo[chunk] = tuple(self._words_of(chunk))
            out.extend(words)
        return out


class _Sudachi:
    """spaCy's Japanese tokens, from SudachiPy directly (split mode A, as datatrove and spaCy default to)."""

    def __init__(self) -> None:
        from datatrove.utils.word_tokenizers import chunk_text_on_bytes
        from sudachipy import dictionary, tokenizer

        self._chunks = chunk_text_on_bytes
        self._tok = dictionary.Dictionary().create(mode=tokenizer.Tokenizer.SplitMode.A)

    def split(self, text: str) -> list[str]:
        out: list[str] = []
        for piece in self._chunks(text, JA_CHUNK_BYTES) if text else ():
            out.extend(_stripped(m.surface() for m in self._tok.tokenize(piece)))
        return out


class _SpacyTokens:
    """A spaCy tokenizer that is not rule-based (pyvi's), without the pipeline around it."""

    def __init__(self, code: str) -> None:
        from datapipe.languages.spacy_words import import_spacy

        self._tok: Any = import_spacy().blank(code).tokenizer

    def split(self, text: str) -> list[str]:
        return _stripped(t.text for t in self._tok(text))


class _Datatrove:
    """datatrove's own tokenizer instance (Kiwi, pythainlp, Indic NLP, khmer-nltk, laonlp, ...)."""

    def __init__(self, language: str) -> None:
        from datatrove.utils.word_tokenizers import load_word_tokenizer

        self._tok = load_word_tokenizer(language)
        if assignments()[language].kind == "KhmerTokenizer":
            from datapipe.languages.khmer import quiet_khmer_nltk

            quiet_khmer_nltk()

    def split(self, text: str) -> list[str]:
        return self._tok.word_tokenize(text) if text else []


def _jieba_words(chunk: str) -> list[str]:
    import jieba

    return _stripped(jieba.cut(chunk, cut_all=False))


@cache
def word_splitter(language: str) -> Splitter:
    """One splitter per process and language-script (or datatrove's short keys: ``deu``, ``de_Latn``)."""
    from datapipe.languages.spacy_words import import_spacy

    import_spacy()  # datatrove's tokenizers import spaCy too: without torch (see there)
    a = assignment(language)
    if a.kind in ("SpaCyTokenizer", "WhitespaceTokenizer"):
        code = a.code if a.kind == "SpaCyTokenizer" else "xx"
        if code == "zh":
            import jieba

            jieba.setLogLevel(60)  # its "Building prefix dict" lines go to stderr at first use
            jieba.initialize()
            return _ChunkMemo(_jieba_words, MEMO_SIZE)
        if code == "ja":
            return _Sudachi()
        if code == "vi":
            return _SpacyTokens(code)
        from datapipe.languages.spacy_words import WordSplitter, splitter

        return splitter(code) if code == "en" else WordSplitter(code, memo_size=MEMO_SIZE)
    if a.kind == "KhmerTokenizer":
        from datapipe.languages.khmer import KhmerWords

        try:
            return KhmerWords()
        except ValueError:  # a khmer-nltk model whose file we cannot read exactly: its own tagger then
            pass
    return _Datatrove(language)
