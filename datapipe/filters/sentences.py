"""Sentences counted the way spaCy's rule-based ``sentencizer`` counts them, from a document's word ids.

C4's rule counts the sentences of every line it keeps, and datatrove counts them with ``spacy.blank(lang)`` plus the
``sentencizer``: a new sentence starts at a token that is neither punctuation (``is_punct``: every character of
Unicode category P) nor one of the sentencizer's ``punct_chars``, after a token that is one of those characters.
So a line of ``k`` tokens has 1 + (number of such starts) sentences, which needs only each token's class. spaCy
tokenized each line again, built a ``Doc`` and ran the pipe: 0.72 of the 0.75 s C4's rule took over the fixture
documents' 3,225 texts (the FineWeb chain of ``benchmarks/extract.py``).

Here the kept lines are joined by newlines and split once (:meth:`datapipe.languages.spacy_words.WordSplitter.split_ids`,
the words datatrove's tokenizer gives), each distinct word is classed once per table of words, and one compiled
walk counts every line's sentences: a line's words are the next ones whose lengths add up to the line's characters
outside white space (a word is a piece of a whitespace-separated chunk, and the pieces of a chunk make it up).

spaCy also makes a token of white space that is not one plain space between two chunks (two spaces, a tab, a
no-break space, white space at a line's ends), and such a token starts a sentence after a period. Those lines (the
fixture documents: 407 of 5,725 kept lines) are counted token by token (:func:`_with_spaces`), white-space tokens
made where spaCy's tokenizer makes them.
"""

from __future__ import annotations

import re
import unicodedata
import weakref
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from datapipe.kernels.jit import kernel

if TYPE_CHECKING:
    from spacy.language import Language

    from datapipe.languages.chunk_ids import WordTable

# a word's class: starts a sentence after a period, is punctuation, ends a sentence
OTHER, PUNCT, PUNCT_CHAR = 0, 1, 2


@cache
def _sentencizer() -> Language:
    from datapipe.languages.spacy_words import import_spacy

    nlp = import_spacy().blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


@cache
def punct_chars() -> frozenset[str]:
    """The sentencizer's own ``punct_chars`` (the pipe datatrove adds, with its defaults)."""
    pipe = _sentencizer().get_pipe("sentencizer")  # imports spaCy as the splitter does (no torch)
    from spacy.pipeline import Sentencizer

    assert isinstance(pipe, Sentencizer)
    return frozenset(pipe.punct_chars)


def spacy_sentences(line: str) -> int:
    """Sentences of ``line`` by spaCy itself (datatrove's ``split_into_sentences``)."""
    nlp = _sentencizer()
    nlp.max_length = len(line) + 10
    return sum(1 for _ in nlp(line).sents)


def word_class(word: str, chars: frozenset[str]) -> int:
    """:data:`PUNCT_CHAR` for one of the sentencizer's characters, :data:`PUNCT` for a word of category-P characters
    only (spaCy's ``is_punct``), else :data:`OTHER`."""
    if word in chars:
        return PUNCT_CHAR
    return PUNCT if all(unicodedata.category(c).startswith("P") for c in word) else OTHER


class _Classes:
    """Each word's class, by its id in one table of words (filled for the ids asked about; -1: not yet)."""

    def __init__(self) -> None:
        self.of = np.full(1 << 14, -1, dtype=np.int8)

    def get(self, ids: np.ndarray, table: WordTable) -> np.ndarray:
        if len(table) > len(self.of):
            grown = np.full(max(2 * len(self.of), len(table)), -1, dtype=np.int8)
            grown[: len(self.of)] = self.of
            self.of = grown
        out = self.of[ids]
        if (out < 0).any():
            new = np.unique(ids[out < 0])
            # a word holding a letter is neither punctuation nor one of the sentencizer's characters (all of them
            # category P): only the others are asked in Python
            lettered = table.alpha[new]
            self.of[new[lettered]] = OTHER
            rest = new[~lettered]
            if len(rest):
                chars = punct_chars()
                self.of[rest] = [word_class(w, chars) for w in table.texts(rest)]
            out = self.of[ids]
        return out


_CLASSES: weakref.WeakKeyDictionary[WordTable, _Classes] = weakref.WeakKeyDictionary()


def classes(ids: np.ndarray, table: WordTable) -> np.ndarray:
    """The class of each word of ``ids``."""
    got = _CLASSES.get(table)
    if got is None:
        got = _CLASSES[table] = _Classes()
    return got.get(ids, table)


def count_lines(
    lines: list[str], ids: np.ndarray, table: WordTable, chunks: Sequence[list[str] | None] = ()
) -> int:
    """Sentences in all of ``lines``, whose words, joined by newlines, are ``ids``; ``chunks``, where given, are
    the lines' ``split()`` (None: not known)."""
    n = len(lines)
    chars = np.empty(n, dtype=np.int64)
    regular = np.empty(n, dtype=np.bool_)
    for i, line in enumerate(lines):
        parts = (chunks[i] if chunks else None) or line.split()
        # no white-space token: the chunks are separated by one plain space each, and nothing is at either end
        regular[i] = " ".join(parts) == line
        chars[i] = len(line) - max(len(parts) - 1, 0) if regular[i] else sum(map(len, parts))
    lengths, word_classes = table.lengths[ids], classes(ids, table)
    starts = np.empty(n + 1, dtype=np.int64)
    total = int(_count(lengths, word_classes, chars, regular, starts))
    if total < 0:  # the words do not make up the lines: never seen; spaCy decides
        return sum(spacy_sentences(line) for line in lines)
    for i in np.flatnonzero(~regular).tolist():
        a, b = int(starts[i]), int(starts[i + 1])
        total += _with_spaces(lines[i], lengths[a:b].tolist(), word_classes[a:b].tolist())
    return total


SPACE_RUNS = re.compile(r"(\s+)")


def _with_spaces(line: str, lengths: list[int], word_classes: list[int]) -> int:
    """Sentences of a line whose white space makes tokens, as spaCy's tokenizer makes them: a run at the start is
    one; a later run is one unless it is a single plain space (spaCy keeps that as the previous token's trailing
    space, and only that one character). A white-space token is of class OTHER, so however spaCy splits a run, the
    count is the same."""
    tokens: list[int] = []
    w = 0
    for k, piece in enumerate(SPACE_RUNS.split(line)):
        if k % 2 == 0:  # a chunk ("" before a leading run and after a trailing one)
            got = 0
            while got < len(piece):
                tokens.append(word_classes[w])
                got += lengths[w]
                w += 1
        elif k == 1 and not tokens or piece != " ":
            tokens.append(OTHER)
    return sentencizer_count(tokens)


def sentencizer_count(tokens: list[int]) -> int:
    """spaCy's ``Sentencizer.predict`` over tokens given by class: the number of sentence starts."""
    if not tokens:
        return 0
    total, seen = 1, False
    for cls in tokens:
        if seen and cls == OTHER:
            total += 1
            seen = False
        elif cls == PUNCT_CHAR:
            seen = True
    return total


@kernel
def _count(lengths, word_classes, chars, counted, starts):  # pragma: no cover - compiled
    """The sentencizer's sentences over the lines marked ``counted``; each line takes the next words whose lengths
    add up to its ``chars`` (``starts[i]``: line i's first word). -1 when they do not."""
    w, total = 0, 0
    for line in range(len(chars)):
        starts[line] = w
        got, seen, first = 0, False, True
        while got < chars[line]:
            if w >= len(lengths):
                return -1
            cls = word_classes[w]
            got += lengths[w]
            w += 1
            if not counted[line]:
                continue
            if first:
                total += 1  # the line's first sentence
                first = False
            elif seen and cls == 0:
                total += 1
                seen = False
            if cls == 2:
                seen = True
        if got != chars[line]:
            return -1
    starts[len(chars)] = w
    return total if w == len(lengths) else -1
