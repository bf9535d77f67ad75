"""Word splitting that gives exactly the words of spaCy's blank English tokenizer, several times faster.

datatrove splits words with ``spacy.blank(lang)`` and Gopher-style rules are defined on those words, so a filter
that should agree with datatrove must split the same way. spaCy tokenizes every whitespace-separated chunk on its
own (prefixes, suffixes, infixes, special cases), so a chunk made only of letters that is not one of its special
cases ("dont" -> "do", "nt") is always a single word. Those chunks, the large majority of running text, are taken as
they are; every other chunk goes through spaCy's own tokenizer once and is remembered.
"""

from __future__ import annotations

from collections import OrderedDict
from functools import cache


class WordSplitter:
    """``split(text)`` == ``[t.text.strip() for t in spacy.blank(lang)(text) if t.text.strip()]``."""

    def __init__(self, language: str = "en", memo_size: int = 200_000) -> None:
        import spacy

        self.language = language
        self._tokenizer = spacy.blank(language).tokenizer
        self._special = frozenset(self._tokenizer.rules or ())
        self._memo: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._memo_size = memo_size

    def _chunk(self, chunk: str) -> tuple[str, ...]:
        got = self._memo.get(chunk)
        if got is None:
            got = tuple(s for s in (t.text.strip() for t in self._tokenizer(chunk)) if s)
            self._memo[chunk] = got
            if len(self._memo) > self._memo_size:
                self._memo.popitem(last=False)
        return got

    def split(self, text: str) -> list[str]:
        out: list[str] = []
        special = self._special
        for chunk in text.split():
            if chunk.isalpha() and chunk not in special:
                out.append(chunk)
            else:
                out.extend(self._chunk(chunk))
        return out


@cache
def splitter(language: str = "en") -> WordSplitter:
    """One splitter per process and language (spaCy's tokenizer takes ~0.2 s to build)."""
    return WordSplitter(language)
