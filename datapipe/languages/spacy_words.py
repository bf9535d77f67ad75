"""Word splitting that gives exactly the words of spaCy's blank English tokenizer, several times faster.

datatrove splits words with ``spacy.blank(lang)`` and Gopher-style rules are defined on those words, so a filter
that should agree with datatrove must split the same way. spaCy tokenizes every whitespace-separated chunk on its
own; this module does the same per chunk, in three tiers:

1. a chunk of letters only that is not one of spaCy's special cases ("dont" -> "do", "nt") is one word (English
   only, as are the other shortcuts marked below: Greek's suffix pattern matches whole words, Indonesian's
   prefixes include currency codes such as "IDR", so other languages take tier 2 for every new chunk);
2. other chunks follow spaCy's affix algorithm (peel prefixes and suffixes with spaCy's own compiled patterns,
   split the rest on its infix pattern; the suffix and infix searches ask only the pieces of those patterns that
   can match, :mod:`datapipe.languages.affixes`), written here in Python without building a ``Doc``; any chunk
   that touches a special case (an exception such as "e.g." or ":)") is left to tier 3;
3. spaCy's own tokenizer, for the chunks tier 2 declines.

Results are memoized per chunk. ``tests/test_filters.py`` checks the output against spaCy on every fixture document.
``split_ids`` gives the same words as ids in a table of words, from a compiled split and a memo of each chunk's
ids (:mod:`datapipe.languages.chunk_ids`): what the filters count over. There tier 2 runs compiled, generated
from each language's own patterns (:mod:`datapipe.languages.affix_kernel`; tier 1 too for English; held to tier 2
here on every fixture chunk, every code point and generated chunks, and to spaCy itself in every language by
``tests/test_spacy_differential.py``), and only the chunks it declines come back to ``words_of``.
"""

from __future__ import annotations

import re
import sys
import types
from bisect import bisect_right
from functools import cache
from itertools import accumulate, chain
from typing import TYPE_CHECKING, Any, cast

from datapipe.languages.affixes import InfixScan, SuffixSearch

if TYPE_CHECKING:
    import numpy as np
    from spacy.tokenizer import Tokenizer

    from datapipe.languages.affix_kernel import AffixProgram
    from datapipe.languages.chunk_ids import ChunkIds, WordTable


def import_spacy() -> Any:
    """spaCy, imported without torch under its machine-learning library and without its command line.

    thinc (under spaCy) imports torch whenever torch is installed (``thinc/compat.py``), though splitting words
    needs none of it: with the ``transformers`` extra installed, a worker that loads every benchmarked language held
    1,926 MiB against 1,536 allowed (tests/test_languages.py), torch being the difference. So thinc's compatibility
    module is imported first with ``torch`` hidden (``import torch`` then fails, and thinc records that it has no
    torch); torch stays importable for everything else (the transformers scorer imports it as usual).

    spaCy's ``__init__`` imports ``spacy.cli.info`` for its ``spacy.info`` function, and with it the whole command
    line (every command, typer, weasel, httpx): 0.1 s of the 0.95 s a build's workers import, on the local engine's
    critical path (its fork server imports before any worker starts), for nothing a word splitter calls. So
    ``spacy.cli`` is absent while spaCy imports, and ``spacy.info`` imports the real one when called;
    ``import spacy.cli`` later imports it as usual. Nothing is hidden when torch, thinc or spaCy is already
    loaded."""
    if "torch" not in sys.modules and "thinc.compat" not in sys.modules:
        sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` raises ImportError
        try:
            import thinc.compat  # noqa: F401
        except ImportError:
            pass
        finally:
            if sys.modules.get("torch", False) is None:
                del sys.modules["torch"]
    if "spacy" not in sys.modules and "spacy.cli" not in sys.modules:
        stand_ins = _without_cli()
        try:
            import spacy
        finally:
            for name, module in stand_ins.items():
                if sys.modules.get(name) is module:
                    del sys.modules[name]
        if getattr(spacy, "cli", None) is stand_ins["spacy.cli"]:
            delattr(spacy, "cli")
    import spacy

    return spacy


def _without_cli() -> dict[str, types.ModuleType]:
    """Stand-ins for ``spacy.cli`` and ``spacy.cli.info`` in ``sys.modules``, whose ``info`` imports the real one."""
    package, module = types.ModuleType("spacy.cli"), types.ModuleType("spacy.cli.info")
    package.__path__ = []

    def info(*args: Any, **kwargs: Any) -> Any:
        from spacy.cli.info import info as real

        return real(*args, **kwargs)

    module.info = info  # type: ignore[attr-defined]
    stand_ins = {"spacy.cli": package, "spacy.cli.info": module}
    sys.modules.update(stand_ins)
    return stand_ins


class WordSplitter:
    """``split(text)`` == ``[t.text.strip() for t in spacy.blank(lang)(text) if t.text.strip()]``."""

    def __init__(self, language: str = "en", memo_size: int = 1_000_000) -> None:
        spacy = import_spacy()

        self.language = language
        # shortcuts that hold for English's affix patterns (checked against spaCy on every fixture document)
        self._english = language == "en"
        # spaCy types ``Language.tokenizer`` as any callable; a blank pipeline's is the rule-based Tokenizer
        tok = cast("Tokenizer", spacy.blank(language).tokenizer)
        # only the tokens' texts are read here: a new word's lexeme need not compute the language's lexical
        # attributes (shape, norm, prefix, suffix, like_num, ... ~20 Python calls a new word), which the split
        # never reads and does not depend on (the tokenizer reads the strings, its patterns and the special
        # cases' ORTH). Over the 3,225 fixture texts of benchmarks/extract.py, cold memo, the English chain
        # spent 0.136 s of its ~1.0 in this tier 3, most of it making 1,871 new lexemes (2026-12-07)
        tok.vocab.lex_attr_getters = {}
        self._tokenizer = tok
        self._special = frozenset(tok.rules or ())
        none = re.compile("a^")
        self._prefix = tok.prefix_search or none.search
        suffix_re = getattr(tok.suffix_search, "__self__", None)
        # spaCy's compiled patterns are searched piece by piece (datapipe.languages.affixes: suffixes ~6x faster)
        if isinstance(suffix_re, re.Pattern):
            self._suffix_re: SuffixSearch | re.Pattern[str] = SuffixSearch(suffix_re)
            self._suffix_full = self._suffix_re.search
        else:
            self._suffix_full = tok.suffix_search or none.search
            self._suffix_re = getattr(self._suffix_full, "__self__", none)
        infix_re = getattr(tok.infix_finditer, "__self__", None)
        if isinstance(infix_re, re.Pattern):
            self._infix = InfixScan(infix_re).finditer
        else:
            self._infix = tok.infix_finditer or none.finditer
        self._token_match = tok.token_match
        self._url_match = tok.url_match or none.match
        # special cases that spaCy re-applies over the split tokens (those containing an affix, e.g. "e.g." or
        # ":)"), as the token sequences it looks for; a chunk whose tokens contain one is left to spaCy itself
        self._patterns: dict[str, tuple[tuple[str, ...], ...]] = {}  # first token -> token sequences
        by_start: dict[str, set[tuple[str, ...]]] = {}
        from spacy.attrs import ORTH

        for s, rule in (tok.rules or {}).items():
            if s.strip() and (self._prefix(s) or self._suffix(s) or list(self._infix(s))):
                pattern = self._affix_split(s, with_specials=False)
                if not pattern:
                    continue
                if len(pattern) == 1 and tuple(t[ORTH] for t in rule) == pattern:
                    # a one-token case that leaves the text as it is ("'" stays "'"); it cannot block another
                    # case either, since spaCy applies longer cases first
                    continue
                by_start.setdefault(pattern[0], set()).add(pattern)
        self._patterns = {k: tuple(sorted(v)) for k, v in by_start.items()}
        # special cases that span whitespace (Spanish "EE. UU."): spaCy merges their tokens across chunks, so a
        # text that holds one is tokenized by spaCy whole
        self._spaced = tuple(sorted(s for s in (tok.rules or ()) if any(ch.isspace() for ch in s.strip())))
        self._spaced_by_piece = _by_shared_piece(self._spaced)
        # every word is a piece of a whitespace-separated chunk, unless a text goes to spaCy whole for such a case
        self.spaceless = not self._spaced
        self._memo: dict[str, tuple[str, ...]] = {}
        self._memo_size = memo_size
        self._ids: ChunkIds | None = None  # split_ids's memo, made on first use

    _WINDOW = 32  # longer than any bounded suffix pattern (units, quotes, "'s": at most ~10 characters)

    def _suffix(self, string: str):
        """``suffix_search(string)``, scanning only the last characters of a long string.

        A suffix match ends at the end of the string; every pattern but runs of dots is at most ~10 characters
        long, and lookbehinds still see the characters before ``pos``. A match found right at the window's start
        may extend further left (a run of dots), so that one case searches the whole string.
        """
        if not self._english:
            return self._suffix_full(string)
        n = len(string)
        # a suffix ending in a letter or digit is a unit or currency after a number ("10km") or "'s"; with two
        # letters/digits at the end and no digit anywhere, neither can match
        if n > 1 and string[-1].isalnum() and string[-2].isalnum() and not _DIGIT.search(string):
            return None
        if n <= self._WINDOW:
            return self._suffix_full(string)
        pos = n - self._WINDOW
        m = self._suffix_re.search(string, pos)
        if m is not None and m.start() == pos:
            return self._suffix_full(string)
        return m

    # -- tier 2: spaCy's affix algorithm -------------------------------------------------------------------------
    def _affix_split(self, chunk: str, with_specials: bool = True) -> tuple[str, ...] | None:
        """Tokens of ``chunk`` by spaCy's affix rules (its ``token_match`` too, where the language has one: French,
        Turkish, Hungarian), or None when a special case is involved."""
        specials = self._special if with_specials else frozenset()
        if chunk in specials:
            return None
        token_match = self._token_match
        prefix_search, suffix_search = self._prefix, self._suffix
        string = chunk
        prefixes: list[str] = []
        suffixes: list[str] = []
        last_size = -1
        english = self._english
        while string and len(string) != last_size:
            if token_match is not None and token_match(string):
                break
            if string in specials:
                return None
            if english and string.isalpha():
                break  # no English prefix or suffix matches letters only (they need punctuation, a digit or '$')
            last_size = len(string)
            m = prefix_search(string)
            pre_len = (m.end() - m.start()) if m is not None else 0
            if pre_len:
                prefix, minus_pre = string[:pre_len], string[pre_len:]
                if minus_pre and minus_pre in specials:
                    return None
            m = suffix_search(string[pre_len:])
            suf_len = (m.end() - m.start()) if m is not None else 0
            if suf_len:
                suffix, minus_suf = string[-suf_len:], string[:-suf_len]
                if minus_suf and minus_suf in specials:
                    return None
            if pre_len and suf_len and pre_len + suf_len <= len(string):
                string = string[pre_len:-suf_len]
                prefixes.append(prefix)
                suffixes.append(suffix)
            elif pre_len:
                string = minus_pre
                prefixes.append(prefix)
            elif suf_len:
                string = minus_suf
                suffixes.append(suffix)
        middle: list[str] = []
        if string:
            if string in specials:
                return None
            # every English URL pattern needs a dot, and no English infix splits letters and digits
            if (
                token_match is not None
                and token_match(string)
                or (not self._english or "." in string)
                and self._url_match(string)
                or self._english
                and string.isalnum()
            ):
                middle = [string]
            else:
                start = 0
                for match in self._infix(string):
                    s, e = match.start(), match.end()
                    if s == 0:
                        continue
                    if s != start:
                        middle.append(string[start:s])
                    if s != e:
                        middle.append(string[s:e])
                    start = e
                if start < len(string):
                    middle.append(string[start:])
        tokens = (*prefixes, *middle, *reversed(suffixes))
        if with_specials:
            patterns = self._patterns
            for i, t in enumerate(tokens):
                for p in patterns.get(t, ()):
                    if tokens[i : i + len(p)] == p:
                        return None
            # a chunk of split() holds no whitespace, so neither do its pieces, and none is empty
            return tokens
        return tuple(p for p in (x.strip() for x in tokens) if p)

    def _compiled_tiers(self) -> AffixProgram | None:
        """Tier 2 in compiled code (:mod:`datapipe.languages.affix_kernel`), generated from this language's own
        prefix, suffix and infix patterns, special cases and URL pattern (and tier 1 for English, where its
        shortcuts hold); None for a language whose patterns hold a piece it cannot compile exactly, or whose
        ``token_match`` it can neither run (Turkish's and Hungarian's it runs) nor decline by a few characters
        (French's hyphens and apostrophes): those keep the Python tier for every new chunk."""
        from datapipe.languages.affix_kernel import AffixProgram, Unsupported

        try:
            return AffixProgram(self._tokenizer, self._special, self._patterns, english=self._english)
        except Unsupported:
            return None

    # -- tier 3: spaCy itself ----------------------------------------------------------------------------------
    def _with_spacy(self, chunks: list[str]) -> dict[str, tuple[str, ...]]:
        """Tokenize chunks with spaCy itself, all in one call, one chunk per line.

        The newline between chunks becomes a token of its own, so no special case can join the end of one chunk
        to the start of the next (as a plain space would let it).
        """
        joined = "\n".join(chunks)
        starts = list(accumulate((len(c) + 1 for c in chunks[:-1]), initial=0))
        words: list[list[str]] = [[] for _ in chunks]
        for tok in self._tokenizer(joined):
            text = tok.text.strip()
            if text:
                words[bisect_right(starts, tok.idx) - 1].append(text)
        return {c: tuple(w) for c, w in zip(chunks, words, strict=True)}

    def words_of(self, chunks: list[str]) -> list[tuple[str, ...]]:
        """The words of each chunk (no white space in any), by the first tier that takes it."""
        special, english = self._special, self._english
        got: dict[str, tuple[str, ...]] = {}
        hard = []
        for c in chunks:
            if english and c.isalpha() and c not in special:
                got[c] = (c,)
            else:
                words = self._affix_split(c)
                if words is None:
                    hard.append(c)
                else:
                    got[c] = words
        if hard:
            got.update(self._with_spacy(sorted(set(hard))))
        return [got[c] for c in chunks]

    def _holds_spaced(self, text: str) -> bool:
        """``any(s in text for s in self._spaced)``, asking first for a piece that several cases share (Russian's
        91 cases: 15 pieces, 5x less time over its benchmark pages): a case is in a text only where each of its
        pieces is."""
        return any(piece in text and any(s in text for s in cases) for piece, cases in self._spaced_by_piece)

    def split(self, text: str) -> list[str]:
        if self._spaced and self._holds_spaced(text):
            return [t for t in (tok.text.strip() for tok in self._tokenizer(text)) if t]
        chunks = text.split()
        memo = self._memo
        new = set(chunks).difference(memo)
        if new:
            if len(memo) + len(new) > self._memo_size:
                memo.clear()  # a memo, not a cache of record: starting over changes no result
            ordered = sorted(new)
            memo.update(zip(ordered, self.words_of(ordered), strict=True))
        return list(chain.from_iterable(map(memo.__getitem__, chunks)))

    def split_ids(self, text: str) -> tuple[np.ndarray, WordTable] | None:
        """``split(text)`` as ids in a table of words (:mod:`datapipe.languages.chunk_ids`), for the rules that
        count over every word; None for a text that ``split`` alone takes (a special case spanning white space,
        a lone surrogate, over a million characters)."""
        if self._ids is None:
            from datapipe.languages.chunk_ids import ChunkIds  # compiled code: only the filters need it

            self._ids = ChunkIds(self.words_of, self._memo_size, program=self._compiled_tiers())
        if self._spaced and self._holds_spaced(text):
            return self._by_lines(text)
        return self._ids.split(text)

    def _by_lines(self, text: str) -> tuple[np.ndarray, WordTable] | None:
        """``split_ids`` of a text that holds a special case across a space: the runs of its lines that hold one
        tokenized by spaCy (as ``split`` tokenizes the whole text), the others split as any text. Exact because
        spaCy makes each newline a token of white space (its tokens start and end where white space starts and
        ends), which no special case's tokens match, so none of its cases matches across one (Russian's one
        such page of the benchmark: 0.07 CPU s by spaCy whole). None where a case holds a newline, or the memo
        started over between the runs (``split`` then takes the text)."""
        import numpy as np

        ids = self._ids
        if ids is None or any("\n" in s for s in self._spaced):
            return None
        table = ids.table
        parts: list[np.ndarray] = []
        lines = text.split("\n")
        start = 0
        while start < len(lines):
            spaced = self._holds_spaced(lines[start])
            end = start + 1
            while end < len(lines) and self._holds_spaced(lines[end]) == spaced:
                end += 1
            run = "\n".join(lines[start:end])
            if spaced:
                words = [t for t in (tok.text.strip() for tok in self._tokenizer(run)) if t]
                parts.append(table.runs([words])[0])
            else:
                got = ids.split(run)
                if got is None or got[1] is not table:
                    return None
                parts.append(got[0])
            start = end
        if ids.table is not table:
            return None
        return (np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)), table


_DIGIT = re.compile(r"\d")


def _by_shared_piece(cases: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The cases grouped under a piece of each (a part between its spaces) that many of them share, of three
    characters or more where a case has one (a piece of one letter is in nearly every text): chosen greedily,
    the piece that the most cases left hold first."""
    left = set(cases)
    out = []
    while left:
        counts: dict[str, int] = {}
        for s in left:
            pieces = set(s.split())
            long = {p for p in pieces if len(p) >= 3} or {max(pieces, key=len)}
            for p in long:
                counts[p] = counts.get(p, 0) + 1
        piece = max(sorted(counts), key=lambda p: (counts[p], len(p)))
        group = tuple(sorted(s for s in left if piece in s.split()))
        out.append((piece, group))
        left.difference_update(group)
    return tuple(out)


@cache
def splitter(language: str = "en") -> WordSplitter:
    """One splitter per process and language (spaCy's tokenizer takes ~0.2 s to build)."""
    return WordSplitter(language)
