"""spaCy's suffix and infix searches, asking only the pieces of the pattern that can match the string at hand.

A spaCy affix pattern is one alternation of pieces (82 suffixes and 8 infixes for English). Python's ``re`` tries
every piece at every position, so one suffix search of a ten-character chunk is ~800 failed attempts: 3.1 us a
call, 0.65 of the 1.6 CPU s that splitting the e2e benchmark's new chunks took, and the infix scan another 0.3 s
(`benchmarks/profile_e2e.py`, 2026-12-05). Both searches can skip pieces without changing their result:

- a suffix piece ends in ``$``, so one whose last character cannot be the string's last character never matches;
- an infix piece whose first character is none of the string's characters matches nowhere in it; a string
  that holds no character any piece starts with has no infix.

The suffix pieces that are left, kept in their order, find the same match with the same alternative, so the
result is the same. The pattern is split into its pieces once, and each piece's possible first or last characters
are read from its parse tree, as a superset: anything the analysis does not follow counts as "any character". A
reduced suffix pattern is compiled once per distinct set of pieces (~75 for a corpus). Nothing depends on the
language: every spaCy language's affixes go through here. On the e2e benchmark's 165k new chunks the suffix search
went from 3.1 to 0.5 us a call.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from re import _constants as sre_c  # type: ignore[attr-defined]  # no stub: the parse-tree opcodes
from re import _parser as sre_parse  # type: ignore[attr-defined]  # no stub: the parser behind re.compile
from typing import Any

from datapipe.kernels.tables import array_text, stored, text_array

_ENUMERATE_MAX = 65_536  # a character class with more members than this counts as "any character"
_CHARS_HELD = 4_096  # last characters whose pattern is remembered (text can hold up to 1.1M distinct ones)


def top_level_pieces(source: str) -> list[str] | None:
    """The alternatives of ``source`` split at its top-level ``|``, or None when it cannot be split with certainty.

    The split is accepted only if every piece compiles on its own and the pieces joined by ``|`` give ``source``
    back: a ``|`` taken wrongly from inside a group or a class leaves a piece that does not compile."""
    pieces, start, depth, i, n = [], 0, 0, 0, len(source)
    while i < n:
        ch = source[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            i += 1
            if i < n and source[i] == "^":
                i += 1
            if i < n and source[i] == "]":
                i += 1  # a ']' first in a class is a member
            while i < n and source[i] != "]":
                i += 2 if source[i] == "\\" else 1
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            pieces.append(source[start:i])
            start = i + 1
        i += 1
    pieces.append(source[start:])
    if "|".join(pieces) != source:
        return None
    try:
        for p in pieces:
            re.compile(p)
    except re.error:
        return None
    return pieces


def _class_members(items: list[tuple[Any, Any]]) -> frozenset[str] | None:
    """The characters an ``IN`` node matches, when it lists them (literals and ranges, not negated)."""
    out: set[str] = set()
    for op, av in items:
        if op is sre_c.LITERAL:
            out.add(chr(av))
        elif op is sre_c.RANGE and av[1] - av[0] < _ENUMERATE_MAX:
            out.update(map(chr, range(av[0], av[1] + 1)))
        else:
            return None  # NEGATE, a category (\d, \w), or a huge range
        if len(out) > _ENUMERATE_MAX:
            return None
    return frozenset(out)


def edge_of(seq: Any, last: bool) -> frozenset[str] | None:
    """The characters a match of the node sequence ``seq`` may end with (``last``) or start with; None for any."""
    items = list(seq)
    for op, av in reversed(items) if last else items:
        if op in (sre_c.ASSERT, sre_c.ASSERT_NOT, sre_c.AT):
            continue  # zero-width: the character comes from the next node
        if op is sre_c.LITERAL:
            return frozenset(chr(av))
        if op is sre_c.IN:
            return _class_members(av)
        if op is sre_c.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            return None if add_flags or del_flags else edge_of(sub, last)
        if op is sre_c.BRANCH:
            edges: set[str] = set()
            for alt in av[1]:
                e = edge_of(alt, last)
                if e is None:
                    return None
                edges |= e
            return frozenset(edges)
        if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT) and av[0] >= 1:
            return edge_of(av[2], last)
        return None  # an optional item (the character could come from the next one), a backreference, ...
    return None  # nothing consumed: a zero-width piece


class _Pieces:
    """A pattern's top-level pieces with the characters each may start or end with, and the reduced patterns."""

    def __init__(self, pattern: re.Pattern[str], last: bool) -> None:
        self.full = pattern
        self.pieces: list[str] = []
        self.edges: list[frozenset[str] | None] = []
        self._by_set: dict[tuple[int, ...], re.Pattern[str]] = {}
        if pattern.flags & re.IGNORECASE:
            return
        key = {"pattern": pattern.pattern, "flags": int(pattern.flags), "last": last}
        got = array_text(
            stored("affix-pieces", key, lambda: {"pieces": text_array(_split(pattern, last))})["pieces"]
        )
        if got is not None:
            self.pieces = got["pieces"]
            self.edges = [None if e is None else frozenset(e) for e in got["edges"]]

    def compiled(self, chosen: tuple[int, ...]) -> re.Pattern[str]:
        got = self._by_set.get(chosen)
        if got is None:
            source = "|".join(self.pieces[i] for i in chosen) if chosen else "(?!)"
            got = self._by_set[chosen] = re.compile(source, self.full.flags)
        return got


def _split(pattern: re.Pattern[str], last: bool) -> dict[str, list] | None:
    """``pattern``'s pieces and each one's possible last (``last``) or first characters (None: any), or None when it
    cannot be split. Parsing the pieces of English's suffixes and infixes took 0.08 s of each worker's first
    filter shard: kept on disk (:mod:`datapipe.kernels.tables`)."""
    pieces = top_level_pieces(pattern.pattern)
    if pieces is None:
        return None
    edges: list[list[str] | None] = []
    for p in pieces:
        tree = sre_parse.parse(p, pattern.flags)
        if last and not _ends_at_end(tree):
            edges.append(None)  # not anchored at the end: it can match anywhere
        else:
            edge = edge_of(tree, last)
            edges.append(None if edge is None else sorted(edge))
    return {"pieces": pieces, "edges": edges}


def _ends_at_end(tree: Any) -> bool:
    items = list(tree)
    return bool(items) and items[-1] == (sre_c.AT, sre_c.AT_END)


class SuffixSearch:
    """``pattern.search(s)`` for an alternation of ``$``-anchored pieces, with only the pieces that may end in ``s[-1]``.

    Falls back to the whole pattern when it cannot be split into pieces with certainty, or is case-insensitive."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self._pieces = _Pieces(pattern, last=True)
        self._by_char: dict[str, re.Pattern[str]] = {}

    @property
    def dispatches(self) -> bool:
        """Whether searches go by the last character (False: every search uses the whole pattern)."""
        return bool(self._pieces.pieces)

    def pattern_for(self, last: str) -> re.Pattern[str]:
        """The pattern of the pieces that may end in ``last``, in their order."""
        got = self._by_char.get(last)
        if got is None:
            p = self._pieces
            if not p.pieces:
                return p.full
            got = p.compiled(tuple(i for i, e in enumerate(p.edges) if e is None or last in e))
            if len(self._by_char) < _CHARS_HELD:
                self._by_char[last] = got
        return got

    def search(self, string: str, pos: int = 0) -> re.Match[str] | None:
        if not string:
            return self._pieces.full.search(string, pos)
        return self.pattern_for(string[-1]).search(string, pos)


class InfixScan:
    """``pattern.finditer(s)``, skipped when no piece may start with any of the characters of ``s``.

    A scan with only the pieces that may start with one of the string's characters found the same matches 2x
    faster, but compiling the ~45 distinct reduced patterns a corpus needs cost what it saved, so a string either
    gets the whole pattern or, holding no character any piece starts with, none (0.45 -> 0.38 s over the e2e
    chunks). Without pieces (a pattern that cannot be split, or a piece that may start anywhere) every string
    gets the whole pattern."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self._full = pattern
        p = _Pieces(pattern, last=False)
        starts: set[str] = set()
        for e in p.edges:
            if e is None:
                starts.clear()
                break
            starts |= e
        self._starts = frozenset(starts)

    @property
    def dispatches(self) -> bool:
        return bool(self._starts)

    def finditer(self, string: str) -> Iterator[re.Match[str]]:
        if self._starts and self._starts.isdisjoint(string):
            return iter(())
        return self._full.finditer(string)
