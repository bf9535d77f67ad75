"""spaCy's affix algorithm (tier 2 of :mod:`datapipe.languages.spacy_words`) in compiled code, for every language
whose words datatrove splits with a blank spaCy tokenizer, generated from that language's own rules.

Why: a chunk met for the first time cost ~4.7 us in the Python tier (the loop around the searches, not the
searches), ~0.46 CPU s of each e2e build worker's filter stage, and the words it gave were then numbered as Python
strings (:class:`datapipe.languages.chunk_ids.WordTable`). Here the tier runs inside the compiled pass that numbers
a text's new chunks (:mod:`datapipe.languages.chunk_ids`), on the chunk's code points, so that no Python string is
made for a chunk this tier takes. (The eleventh session compiled this tier alone, returning strings: 0.1 s of a
build for ~600 lines, not kept; what cost was the strings.)

What is compiled is the patterns' own pieces, read from their parse trees: each piece of the prefix, suffix and
infix alternations is a lookbehind of fixed width (a character or class per place), a body and an optional
one-character lookahead (positive or negative), where a body is a literal, a set of literals (a group of
alternatives), one character of a class, or a run of one character (``\\.\\.+``). Any other piece (German's
group around a class of quotes, Polish's words before a hyphen, Greek's number patterns, Italian's empty split
after an elision, Indonesian's HTML tags) becomes a small backtracking program (:class:`_VmCompiler`), run in
``re``'s order of trying; what that cannot express exactly is :class:`Unsupported`, and the language keeps the
Python tier. A search that runs past :data:`VM_STEPS` steps declines its chunk. The searches keep ``re``'s
semantics:

- prefix: the first piece, in the pattern's order, that matches at the string's start (with what follows it);
- suffix: the leftmost start from which some piece matches through to the end (a ``$`` search), its length;
- infix: ``finditer``: from left to right, at each place the first piece that matches, then on after it (after
  an empty match, no empty match at the same place).

Around them the loop is ``WordSplitter._affix_split``'s, with its English shortcuts for English only (a string of
letters has no affix, one of letters and digits no infix). A language's ``token_match`` is a program too where
:class:`_VmCompiler` expresses it (Turkish's dates, numbers and roman numerals with their suffixes, Hungarian's
numbers and currencies before a hyphenated suffix: spaCy asks only whether it matches, which any way of matching
answers), asked where spaCy asks it, first in each turn of the affix loop and of the middle; where it is not one
(French's: ``IGNORECASE``, 1.45M characters) but every one of its matches needs one of a few characters (hyphens,
apostrophes), a chunk holding one is declined and the others are split without it; otherwise the language is
:class:`Unsupported`. A chunk is declined (left to the Python tiers, which pass it on to
spaCy where they must) when it holds a character at or beyond :data:`~datapipe.kernels.utf8.TABLE_END`, when any
string the loop looks up is a special case, when the middle holds a dot (spaCy's URL pattern, every language's, decides those), or
when its tokens hold one of the special-case patterns spaCy re-applies. Special cases and pattern tokens are
looked up by their UTF-8 bytes, as the chunk's own bytes. ``tests/test_affix_kernel.py`` holds the compiled tier to
the Python one on every fixture chunk, on every code point and on generated chunks (English), and
``tests/test_spacy_differential.py`` every language's to spaCy itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from functools import cache
from re import _constants as sre_c  # type: ignore[attr-defined]  # no stub: the parse-tree opcodes
from re import _parser as sre_parse  # type: ignore[attr-defined]  # no stub: the parser behind re.compile
from typing import Any

import numpy as np

from datapipe.kernels.interned import Interned, fill, find, fnv
from datapipe.kernels.jit import leaf
from datapipe.kernels.tables import stored
from datapipe.kernels.utf8 import TABLE_END, every_character
from datapipe.languages.affixes import top_level_pieces

LIT, CLASS, RUN, VM = (
    0,
    1,
    2,
    3,
)  # a piece's body: literals (one, or a group of alternatives), a class, a run,
# or any other piece as a small backtracking program (:class:`_VmCompiler`)
PREFIX, SUFFIX, INFIX = 0, 1, 2
MAX_CLASSES = 64  # one bit each in the class table
DECLINED = -1  # what :func:`affix_tokens` returns for a chunk it leaves to Python
ASK_URL = -2  # ... for a chunk whose middle holds a dot, when the caller has not said whether it is a URL
# the ``url`` to hand :func:`affix_tokens` where it should ask ``re`` only for a middle that spaCy's URL pattern
# could match (:func:`may_be_url`), the pattern being the one that test was written for (:data:`URL_SOURCE`)
ASK_PLAUSIBLE_URL = -3
# sha256 of spaCy's ``URL_MATCH`` pattern (spaCy 3.x's ``"(?u)" + URL_PATTERN``) that :func:`may_be_url` reads
URL_SOURCE = "7adb1342672774f94ffb32ef3bc6eb2f7a5a803ab8c51920bba19c34fd9cec14"
# the backtracking program's instructions (a row each: op, a, b, c)
OP_CHAR, OP_CLASS, OP_SPLIT, OP_JMP, OP_BOL, OP_EOL, OP_LOOK, OP_MATCH = range(8)
VM_STEPS = (
    20_000  # a search that takes more steps declines its chunk (spaCy then splits it): none did on real text
)
VM_STACK = 1_024  # backtracking entries per search (two places each); more declines the chunk too
MAX_EXPANSION = 64  # a counted repeat {m,n} is written out n times: at most this many


class Unsupported(Exception):
    """A pattern with a piece outside the shapes above."""


def _members(items: list[tuple[Any, Any]]) -> np.ndarray:
    """The code points below ``TABLE_END`` a class lists (literals and ranges), sorted: a class of letters holds
    ~130k, so they are numpy arrays, not sets (building English's program took 0.07-0.15 s with sets, 0.02 s so)."""
    flags = np.zeros(TABLE_END, dtype=np.bool_)
    for op, av in items:
        if op is sre_c.LITERAL:
            if av < TABLE_END:
                flags[av] = True
        elif op is sre_c.RANGE:
            flags[av[0] : av[1] + 1] = True
        else:
            raise Unsupported(f"class item {op}")
    return np.flatnonzero(flags)


def _one_char(item: tuple[Any, Any]) -> np.ndarray:
    op, av = item
    if op is sre_c.LITERAL:
        return np.array([av] if av < TABLE_END else [], dtype=np.int64)
    if op is sre_c.IN:
        return _members(av)
    raise Unsupported(f"not one character: {op}")


def _literals(items: list[tuple[Any, Any]]) -> tuple[int, ...]:
    if not items or any(op is not sre_c.LITERAL for op, _ in items):
        raise Unsupported("not a literal")
    return tuple(av for _, av in items)


@cache
def _category(code: int) -> np.ndarray:
    """The code points below ``TABLE_END`` that a class's category (``\\d``, ``\\w``, ``\\s`` and their negations)
    holds, as Python's ``re`` decides it for a ``str`` pattern."""
    source = {
        sre_c.CATEGORY_DIGIT: r"\d",
        sre_c.CATEGORY_NOT_DIGIT: r"\D",
        sre_c.CATEGORY_SPACE: r"\s",
        sre_c.CATEGORY_NOT_SPACE: r"\S",
        sre_c.CATEGORY_WORD: r"\w",
        sre_c.CATEGORY_NOT_WORD: r"\W",
    }.get(code)
    if source is None:
        raise Unsupported(f"category {code}")
    flags = np.zeros(TABLE_END, dtype=np.bool_)
    # every character alone on a line: a one-character class matches each character at its own place
    chars = every_character(TABLE_END)
    flags[[m.start() for m in re.finditer(source, chars)]] = True
    return flags


def _class_flags(items: list[tuple[Any, Any]]) -> np.ndarray:
    """Whether each code point below ``TABLE_END`` matches a class (``IN``): literals, ranges, categories and
    negation, as ``re`` reads them."""
    flags = np.zeros(TABLE_END, dtype=np.bool_)
    negate = False
    for op, av in items:
        if op is sre_c.NEGATE:
            negate = True
        elif op is sre_c.LITERAL:
            if av < TABLE_END:
                flags[av] = True
        elif op is sre_c.RANGE:
            flags[av[0] : av[1] + 1] = True
        elif op is sre_c.CATEGORY:
            flags |= _category(av)
        else:
            raise Unsupported(f"class item {op}")
    return ~flags if negate else flags


class _VmCompiler:
    """A piece of a pattern as a backtracking program, for the pieces that are not one of the simple shapes above
    (German's capturing group around a class of quotes, Polish's words before a hyphen, Greek's number and word
    patterns). The program is what ``re`` does for the same parse tree: the alternatives of a group tried in their
    order, greedy repeats trying the longest first and giving back one at a time (lazy ones the other way), a
    lookaround a sub-search at that place (a lookbehind of fixed width ``w`` matched from ``w`` back), ``^`` and
    ``$`` at the searched string's ends. What it cannot express exactly (backreferences, word boundaries, flags
    inside the pattern, a lookaround inside a lookaround, a repeat of something that can match nothing, a counted
    repeat written out more than :data:`MAX_EXPANSION` times) is :class:`Unsupported`, and the language keeps the
    Python tier."""

    def __init__(self, rows: list[list[int]], classes: dict[bytes, int]) -> None:
        self.rows = rows
        self.classes = classes  # a class's members (bytes of its flags) -> its bit

    def emit(self, op: int, a: int = 0, b: int = 0, c: int = 0) -> int:
        self.rows.append([op, a, b, c])
        return len(self.rows) - 1

    def cls(self, flags: np.ndarray) -> int:
        key = np.packbits(flags).tobytes()
        if key not in self.classes:
            if len(self.classes) == MAX_CLASSES:
                raise Unsupported("too many classes")
            self.classes[key] = len(self.classes)
        return self.classes[key]

    def program(self, tree: Any, in_look: bool = False) -> int:
        """Emit ``tree`` followed by a match; returns where it starts. Lookarounds' own programs follow it."""
        looks: list[tuple[int, Any]] = []
        start = len(self.rows)
        self.seq(tree, looks, in_look)
        self.emit(OP_MATCH)
        for at, sub in looks:
            self.rows[at][1] = self.program(sub, in_look=True)
        return start

    def seq(self, items: Any, looks: list[tuple[int, Any]], in_look: bool) -> None:
        for op, av in items:
            self.item(op, av, looks, in_look)

    def item(self, op: Any, av: Any, looks: list[tuple[int, Any]], in_look: bool) -> None:
        if op is sre_c.LITERAL:
            self.emit(OP_CHAR, av)
        elif op is sre_c.NOT_LITERAL:
            flags = np.ones(TABLE_END, dtype=np.bool_)
            if av < TABLE_END:
                flags[av] = False
            self.emit(OP_CLASS, self.cls(flags))
        elif op is sre_c.ANY:
            flags = np.ones(TABLE_END, dtype=np.bool_)
            flags[10] = False  # no DOTALL in spaCy's patterns (checked by the caller)
            self.emit(OP_CLASS, self.cls(flags))
        elif op is sre_c.IN:
            self.emit(OP_CLASS, self.cls(_class_flags(av)))
        elif op is sre_c.BRANCH:
            alts = av[1]
            jumps = []
            for alt in alts[:-1]:
                split = self.emit(OP_SPLIT)
                self.rows[split][1] = len(self.rows)
                self.seq(alt, looks, in_look)
                jumps.append(self.emit(OP_JMP))
                self.rows[split][2] = len(self.rows)
            self.seq(alts[-1], looks, in_look)
            for j in jumps:
                self.rows[j][1] = len(self.rows)
        elif op is sre_c.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            if add_flags or del_flags:
                raise Unsupported("flags inside the pattern")
            self.seq(sub, looks, in_look)
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT):
            low, high, sub = av
            if sub.getwidth()[0] == 0:
                raise Unsupported("a repeat of something that can match nothing")
            greedy = op is sre_c.MAX_REPEAT
            for _ in range(low):
                self.seq(sub, looks, in_look)
            if high == sre_c.MAXREPEAT:
                loop = self.emit(OP_SPLIT)
                body = len(self.rows)
                self.seq(sub, looks, in_look)
                self.emit(OP_JMP, loop)
                out = len(self.rows)
                self.rows[loop][1:3] = [body, out] if greedy else [out, body]
            else:
                if high > MAX_EXPANSION:
                    raise Unsupported("a counted repeat too long to write out")
                splits = []
                for _ in range(high - low):
                    splits.append(self.emit(OP_SPLIT))
                    self.rows[splits[-1]][1 if greedy else 2] = len(self.rows)
                    self.seq(sub, looks, in_look)
                for at in splits:
                    self.rows[at][2 if greedy else 1] = len(self.rows)
        elif op is sre_c.AT:
            if av in (sre_c.AT_BEGINNING, sre_c.AT_BEGINNING_STRING):
                self.emit(OP_BOL)
            elif av in (sre_c.AT_END, sre_c.AT_END_STRING):
                self.emit(OP_EOL)  # ``$`` also matches before a final newline: a chunk holds none
            else:
                raise Unsupported(f"position {av}")
        elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
            direction, sub = av
            if in_look:
                raise Unsupported("a lookaround inside a lookaround")
            low, high = sub.getwidth()
            if direction < 0 and low != high:
                raise Unsupported("a lookbehind of varying width")
            kind = (1 if direction < 0 else 0) | (2 if op is sre_c.ASSERT_NOT else 0)
            looks.append((self.emit(OP_LOOK, 0, kind, low if direction < 0 else 0), sub))
        else:
            raise Unsupported(f"{op}")


class _Builder:
    """The pieces of the three patterns as flat arrays, and their classes as bits of one table."""

    def __init__(self) -> None:
        self.classes: dict[bytes, tuple[int, np.ndarray]] = {}  # members' bytes -> (bit, members)
        # per piece: kind, lb_off, lb_len, la_cls, la_neg, alt_off, alt_cnt, cls, run_c, run_min
        self.rows: list[tuple[int, ...]] = []
        self.lb: list[int] = []
        self.alt_off: list[int] = []
        self.alt_len: list[int] = []
        self.lits: list[int] = []
        # each piece's bodies (an alternative of a group of literals, or -1: the piece's class or run) with the
        # code points each may start and end with: (piece, alternative, first characters, last characters)
        self.edges: list[tuple[int, int, np.ndarray, np.ndarray]] = []
        self.vm = _VmCompiler([], {})  # the pieces of no simple shape, as programs, with their own classes
        self.floating: list[int] = []  # prefix pieces without ``^`` (Indonesian's HTML tags), in their order

    def piece(self, source: str, flags: int, role: int) -> None:
        """One piece, in a simple shape where it has one (:meth:`simple_piece`), else as a program."""
        classes = dict(self.classes)
        try:
            self.simple_piece(source, flags, role)
        except Unsupported:
            self.classes = classes  # what the attempt added
            self.vm_piece(source, flags, role)

    def vm_piece(self, source: str, flags: int, role: int) -> None:
        """A piece as a program (:class:`_VmCompiler`). The searches ask a prefix piece only at the string's
        start and a suffix piece only through to its end, so a prefix piece must begin with ``^`` and a suffix
        piece end with ``$`` (as spaCy's compiled patterns do)."""
        from datapipe.languages.affixes import edge_of

        if flags & (re.IGNORECASE | re.DOTALL | re.MULTILINE | re.VERBOSE):
            raise Unsupported("flags")
        tree = sre_parse.parse(source, flags)
        items = list(tree)
        if role == PREFIX and items[:1] != [(sre_c.AT, sre_c.AT_BEGINNING)]:
            self.floating.append(len(self.rows))  # searched further on when nothing matches at the start
        if role == SUFFIX and items[-1:] != [(sre_c.AT, sre_c.AT_END)]:
            raise Unsupported("a suffix piece that is not anchored at the end")
        _low, high = tree.getwidth()  # a piece that can match nothing (Italian's split after an elision) is
        # searched as ``finditer`` does: after an empty match, not empty again at the same place
        start = self.vm.program(tree)
        piece = len(self.rows)
        every = np.arange(TABLE_END, dtype=np.int64)
        edges = []
        for last in (False, True):
            edge = edge_of(tree, last)
            edges.append(
                every if edge is None else np.array(sorted(ord(c) for c in edge if ord(c) < TABLE_END))
            )
        self.edges.append((piece, -1, edges[0], edges[1]))
        longest = -1 if high >= sre_c.MAXREPEAT else high
        # characters of which every match holds one (Greek's hyphenated words: "-"): a string without any is not
        # searched (a program tried at each start of a word cost ~2 us a Greek chunk); a class's bit, or -1
        needs = -1
        required = _required_in(source, flags)
        if required is not None:
            with contextlib.suppress(Unsupported):  # no bit left: the piece is searched everywhere
                needs = self.cls(np.array(sorted(ord(c) for c in required if ord(c) < TABLE_END), np.int64))
        self.rows.append((VM, 0, 0, -1, 0, 0, 0, needs, start, longest))

    def vm_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The programs' rows, their classes' bits per code point, and the prefix pieces without ``^``."""
        rows = np.array(self.vm.rows or [[OP_MATCH, 0, 0, 0]], dtype=np.int64).reshape(-1, 4)
        mask = np.zeros(TABLE_END, dtype=np.uint64)
        for key, bit in self.vm.classes.items():
            members = np.unpackbits(np.frombuffer(key, dtype=np.uint8))[:TABLE_END].astype(np.bool_)
            mask[members] |= np.uint64(1) << np.uint64(bit)
        return np.ascontiguousarray(rows), mask, np.array(self.floating, dtype=np.int64)

    def cls(self, members: np.ndarray) -> int:
        key = members.tobytes()
        if key not in self.classes:
            if len(self.classes) == MAX_CLASSES:
                raise Unsupported("too many classes")
            self.classes[key] = (len(self.classes), members)
        return self.classes[key][0]

    def simple_piece(self, source: str, flags: int, role: int) -> None:
        items = list(sre_parse.parse(source, flags))
        at_start = items[:1] == [(sre_c.AT, sre_c.AT_BEGINNING)]
        at_end = items[-1:] == [(sre_c.AT, sre_c.AT_END)]
        if at_start != (role == PREFIX) or at_end != (role == SUFFIX):
            raise Unsupported("anchors")
        items = items[1:] if at_start else items[:-1] if at_end else items
        lb: list[int] = []
        if items and items[0][0] is sre_c.ASSERT and items[0][1][0] == -1:
            lb = [self.cls(_one_char(x)) for x in items[0][1][1]]
            items = items[1:]
        la_cls, la_neg = -1, 0
        if items and items[-1][0] in (sre_c.ASSERT, sre_c.ASSERT_NOT) and items[-1][1][0] == 1:
            op, (_, sub) = items[-1]
            if len(sub) != 1:
                raise Unsupported("lookahead of more than one character")
            la_cls, la_neg = self.cls(_one_char(sub[0])), int(op is sre_c.ASSERT_NOT)
            items = items[:-1]
        alts: list[tuple[int, ...]] = []
        kind, body_cls, run_c, run_min = LIT, -1, -1, 0
        if len(items) == 1 and items[0][0] is sre_c.IN:
            kind, body_cls = CLASS, self.cls(_members(items[0][1]))
        elif len(items) == 1 and items[0][0] is sre_c.BRANCH:
            alts = [_literals(list(alt)) for alt in items[0][1][1]]
        elif items and items[-1][0] is sre_c.MAX_REPEAT:
            low, high, sub = items[-1][1]
            c = _literals(list(sub))
            head = _literals(items[:-1]) if len(items) > 1 else ()
            if len(c) != 1 or high != sre_c.MAXREPEAT or any(x != c[0] for x in head) or low + len(head) < 1:
                raise Unsupported("repeat")
            kind, run_c, run_min = RUN, c[0], low + len(head)
        else:
            alts = [_literals(items)]
        if any(c >= TABLE_END for alt in alts for c in alt) or run_c >= TABLE_END:
            raise Unsupported("a literal beyond the table")
        piece, off = len(self.rows), len(self.alt_off)
        if kind == CLASS:
            members = _members(items[0][1])
            self.edges.append((piece, -1, members, members))
        elif kind == RUN:
            self.edges.append((piece, -1, np.array([run_c]), np.array([run_c])))
        else:
            self.edges.extend(
                (piece, off + i, np.array([a[0]]), np.array([a[-1]])) for i, a in enumerate(alts)
            )
        for alt in alts:
            self.alt_off.append(len(self.lits))
            self.alt_len.append(len(alt))
            self.lits.extend(alt)
        self.rows.append(
            (kind, len(self.lb), len(lb), la_cls, la_neg, off, len(alts), body_cls, run_c, run_min)
        )
        self.lb.extend(lb)

    def candidates(self, bounds: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """For each role and character, the role's bodies (piece and alternative, in the pattern's order) that can
        start (prefix, infix) or end (suffix) with it: rows ``off[role, c]`` to ``off[role, c + 1]`` of ``idx``.
        The searches ask only those: a group of a hundred units is one or two alternatives for a given letter."""
        idx: list[np.ndarray] = []
        off = np.zeros((3, TABLE_END + 1), dtype=np.int64)
        used = 0
        for role in (PREFIX, SUFFIX, INFIX):
            edges = [e for e in self.edges if bounds[role] <= e[0] < bounds[role + 1]]
            chars = [e[3] if role == SUFFIX else e[2] for e in edges]
            c = np.concatenate(chars) if chars else np.zeros(0, dtype=np.int64)
            p = np.repeat([e[0] for e in edges], list(map(len, chars))).astype(np.int64)
            a = np.repeat([e[1] for e in edges], list(map(len, chars))).astype(np.int64)
            order = np.lexsort((a, p, c))  # by character, then the pattern's order
            off[role, 0] = used
            np.cumsum(np.bincount(c, minlength=TABLE_END), out=off[role, 1:])
            off[role, 1:] += used
            idx.append(np.stack((p[order], a[order]), axis=1))
            used += len(c)
        got = np.concatenate(idx)
        return (got if len(got) else np.array([[0, -1]], dtype=np.int64)), off

    def table(self) -> np.ndarray:
        mask = np.zeros(TABLE_END, dtype=np.uint64)
        for i, members in self.classes.values():
            mask[members] |= np.uint64(1) << np.uint64(i)
        return mask


def _digest(text: str) -> str:
    """A short name for a pattern's source (French's ``token_match`` is 1.45M characters: not a table's key)."""
    import hashlib

    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def _required_chars(pattern: re.Pattern[str]) -> frozenset[str] | None:
    """:func:`_required_in` of a compiled pattern."""
    return _required_in(pattern.pattern, pattern.flags)


def _required_in(source: str, flags: int) -> frozenset[str] | None:
    """Characters of which every match of ``pattern`` holds one, or None when the parse tree does not say.

    A language's ``token_match`` is asked of every string spaCy's affix loop looks at; the compiled tier cannot
    ask ``re``, so it declines every chunk holding one of these characters (French's: hyphens, apostrophes and
    the space, its hyphenated and elided words) and splits the others as spaCy does, without the token match
    (which matches none of their pieces). Under ``IGNORECASE`` only characters that no other character matches
    case-insensitively count."""
    tree = sre_parse.parse(source, flags)
    fold = bool(tree.state.flags & re.IGNORECASE)

    def required(items: Any) -> frozenset[str] | None:
        best: frozenset[str] | None = None
        for op, av in items:
            got: frozenset[str] | None = None
            if op is sre_c.LITERAL:
                got = frozenset(chr(av))
            elif op is sre_c.IN and all(o is sre_c.LITERAL for o, _ in av):
                got = frozenset(chr(a) for _, a in av)
            elif op is sre_c.SUBPATTERN and not av[1] and not av[2]:
                got = required(av[3])
            elif op is sre_c.BRANCH:
                union: set[str] = set()
                for alt in av[1]:
                    r = required(alt)
                    if r is None:
                        union = set()
                        break
                    union |= r
                got = frozenset(union) or None
            elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT) and av[0] >= 1:
                got = required(av[2])
            if got is not None and fold and not all(_uncased(c) for c in got):
                got = None
            if got is not None and (best is None or len(got) < len(best)):
                best = got
        return best

    return required(list(tree))


def _uncased(c: str) -> bool:
    """Whether ``c`` matches only itself under ``IGNORECASE``: it has no other case, and no other character
    lowers, uppers or folds to it."""
    return c.lower() == c == c.upper() == c.casefold() and c not in _case_targets()


@cache
def _case_targets() -> frozenset[str]:
    """Every character that another character lowers, uppers or folds to."""
    out = set()
    for x in every_character(TABLE_END):
        for v in (x.lower(), x.upper(), x.casefold()):
            if v != x:
                out.add(v)
    return frozenset(out)


def scratch_size(points: int) -> int:
    """The places :func:`affix_tokens` needs for a chunk of up to ``points`` code points."""
    return 2 * (points + 1) + 2 * VM_STACK


@cache
def letters() -> np.ndarray:
    """Each code point below ``TABLE_END``: whether ``str.isalpha`` says it is a letter (the affix tier and the
    table of words read it; kept on disk, :mod:`datapipe.kernels.tables`, as Python's version decides it)."""

    def build() -> dict[str, np.ndarray]:
        chars = every_character(TABLE_END)
        return {"letters": np.fromiter(map(str.isalpha, chars), dtype=np.bool_, count=len(chars))}

    return stored("letters", TABLE_END, build)["letters"]


def _strings_table(strings: list[str]) -> tuple[Interned, np.ndarray]:
    """The strings' UTF-8 bytes in an interning table (membership only), and for each first and last byte the
    lengths (up to 63) the strings with them have, one bit each: most strings the loop looks up are no special
    case, and these bits say so without hashing them."""
    encoded = [s.encode("utf-8") for s in strings]
    seen = np.zeros((256, 256), dtype=np.uint64)
    for e in encoded:
        if e:
            seen[e[0], e[-1]] |= np.uint64(1) << np.uint64(min(len(e), 63))
    t = Interned(len(encoded) + 1, sum(map(len, encoded)) + 1, 1)
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    joined = np.frombuffer(b"".join(encoded) or b"\0", np.uint8)
    fill(t.table, t.hashes, t.starts, t.arena, t.counts, joined, lengths)
    return t, seen


def _program(
    searches: list[tuple[str, int]],
    specials: frozenset[str],
    patterns: dict[str, tuple[tuple[str, ...], ...]],
) -> dict[str, np.ndarray]:
    """:func:`_build`'s first part: the arrays of the simple pieces, special cases and patterns."""
    return _build(searches, specials, patterns)[0]


def _build(
    searches: list[tuple[str, int]],
    specials: frozenset[str],
    patterns: dict[str, tuple[tuple[str, ...], ...]],
    token_match: tuple[str, int] | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """:class:`AffixProgram`'s arrays for the prefix, suffix and infix patterns (source, flags), the special cases
    and the patterns: 0.1 s of each worker's first filter shard, kept on disk (:mod:`datapipe.kernels.tables`).
    ``token_match`` (source, flags), where the language has one: compiled as a program too where it can be
    (:func:`_token_match_program`; its start in ``tm``, -1 where it cannot)."""
    b = _Builder()
    bounds = [0]
    for role, (source, flags) in zip((PREFIX, SUFFIX, INFIX), searches, strict=True):
        pieces = top_level_pieces(source)
        if pieces is None:
            raise Unsupported("a pattern that is not an alternation of pieces")
        for p in pieces:
            b.piece(p, flags, role)
        bounds.append(len(b.rows))
    tm = -1 if token_match is None else _token_match_program(b.vm, *token_match)
    pieces_arr = np.ascontiguousarray(np.array(b.rows, dtype=np.int64).reshape(-1, 10))
    cand_idx, cand_off = b.candidates(bounds)
    chars = every_character(TABLE_END)
    alpha = letters()
    alnum = np.fromiter(map(str.isalnum, chars), dtype=np.bool_, count=len(chars))
    sp, sp_seen = _strings_table(sorted(specials))
    # the patterns' tokens as ids (their numbers in a table of the distinct strings), each pattern a run of ids,
    # and for each id the patterns that start with it
    words = sorted({w for seqs in patterns.values() for seq in seqs for w in seq})
    keys, keys_seen = _strings_table(words)
    number = {w: i for i, w in enumerate(words)}
    seqs = [seq for _, group in sorted(patterns.items()) for seq in group]
    pat_ids = np.array([number[w] for seq in seqs for w in seq] or [0], dtype=np.int64)
    pat_off = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum([len(seq) for seq in seqs], out=pat_off[1:])
    firsts = [number[seq[0]] for seq in seqs]
    by_first = np.argsort(firsts, kind="stable").astype(np.int64) if seqs else np.zeros(0, np.int64)
    first_off = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum(np.bincount(firsts, minlength=len(words)), out=first_off[1:])
    arrays = (
        pieces_arr,
        np.array(b.lb or [0], dtype=np.int64),
        np.array(b.alt_off or [0], dtype=np.int64),
        np.array(b.alt_len or [0], dtype=np.int64),
        np.array(b.lits or [0], dtype=np.int64),
        b.table(),
        alpha,
        alnum,
        sp.table,
        sp.hashes,
        sp.starts,
        sp.arena,
        keys.table,
        keys.hashes,
        keys.starts,
        keys.arena,
        pat_ids,
        pat_off,
        by_first,
        first_off,
        cand_idx,
        cand_off,
        sp_seen,
        keys_seen,
    )
    vprog, vmask, floating = b.vm_arrays()
    return {f"a{i:02d}": a for i, a in enumerate(arrays)}, {
        "vprog": vprog,
        "vmask": vmask,
        "floating": floating,
        "tm": np.array([tm], dtype=np.int64),
    }


def _token_match_program(vm: _VmCompiler, source: str, flags: int) -> int:
    """A language's ``token_match`` (``re.match``: anchored at the string's start) as a program of ``vm``: where
    it starts, or -1 where it cannot be one (a flag such as French's ``IGNORECASE``, a construct
    :class:`_VmCompiler` does not express, too many classes), and nothing of it is kept. spaCy asks only whether
    it matches, so any way of matching the program finds answers it as ``re`` does (Turkish's dates, numbers and
    roman numerals with their suffixes, Hungarian's numbers, expressions and currencies before a hyphen)."""
    if flags & (re.IGNORECASE | re.DOTALL | re.MULTILINE | re.VERBOSE):
        return -1
    rows, classes = len(vm.rows), dict(vm.classes)
    try:
        return vm.program(sre_parse.parse(source, flags))
    except Unsupported:
        del vm.rows[rows:]
        vm.classes = classes
        return -1


class AffixProgram:
    """English's affix patterns, special cases and pattern keys as the arrays :func:`affix_tokens` reads
    (``arrays``, one tuple: a compiled pass takes the program as one argument)."""

    def __init__(
        self,
        tok: Any,
        specials: frozenset[str],
        patterns: dict[str, tuple[tuple[str, ...], ...]],
        english: bool = True,
    ) -> None:
        """``patterns``: the special cases spaCy re-applies over split tokens, by their first token (as
        ``WordSplitter._patterns``); a chunk whose tokens hold one goes to spaCy. ``english``: the shortcuts that
        hold for English's patterns (a string of letters has no affix, one of letters and digits no infix);
        another language's program takes none and searches every string."""
        from spacy.lang.tokenizer_exceptions import URL_MATCH

        token_match = getattr(tok.token_match, "__self__", None)
        if tok.token_match is not None and not isinstance(token_match, re.Pattern):
            raise Unsupported("a token_match that is not a pattern's search or match")
        if tok.url_match is not None and tok.url_match != URL_MATCH:
            raise Unsupported("a URL pattern other than spaCy's (every one of its URLs holds a dot)")
        self.url_match = tok.url_match or re.compile("a^").match  # asked for a middle that holds a dot
        # what :func:`affix_tokens` is handed as ``url`` before ``re`` was asked: ask only where the pattern might
        # match, where :func:`may_be_url` was written for it (no URL pattern: none matches, and ``re`` says so)
        source = getattr(tok.url_match, "__self__", None)
        self.url_ask = (
            ASK_PLAUSIBLE_URL
            if tok.url_match is None
            or (source is not None and hashlib.sha256(source.pattern.encode()).hexdigest() == URL_SOURCE)
            else -1
        )
        searches = []
        for search in (tok.prefix_search, tok.suffix_search, tok.infix_finditer):
            pattern = getattr(search, "__self__", None)
            if not isinstance(pattern, re.Pattern) or pattern.flags & re.IGNORECASE:
                raise Unsupported("a pattern that is not an alternation of pieces")
            searches.append((pattern.pattern, int(pattern.flags)))
        key = {
            "searches": searches,
            "specials": sorted(specials),
            "patterns": {first: [list(seq) for seq in seqs] for first, seqs in sorted(patterns.items())},
            "english": english,
            "token_match": None
            if token_match is None
            else [_digest(token_match.pattern), int(token_match.flags)],
        }

        def build() -> dict[str, np.ndarray]:
            asked = token_match is not None and getattr(tok.token_match, "__name__", "") == "match"
            tm_source = (token_match.pattern, int(token_match.flags)) if asked and token_match else None
            simple, programs = _build(searches, specials, patterns, tm_source)
            tm = int(programs.pop("tm")[0])
            held = np.zeros(TABLE_END, dtype=np.bool_)
            if token_match is not None and tm < 0:
                chars = _required_chars(token_match)
                if chars is None:
                    raise Unsupported("a token_match that can match without a character of a known set")
                held[[ord(c) for c in chars if ord(c) < TABLE_END]] = True
            flags = np.array([int(english), tm], dtype=np.int64)
            return {**simple, **programs, "flags": flags, "held": held}

        got = stored("affix-program", key, build)
        self.arrays = tuple(
            got[f"a{i:02d}"] for i in range(sum(k[0] == "a" and k[1:].isdigit() for k in got))
        )
        # the pieces of no simple shape as programs, the shortcuts' switch and token_match's characters: a
        # second tuple, which the compiled tier takes beside ``arrays``
        self.vm = (got["vprog"], got["vmask"], got["flags"], got["held"], got["floating"])

    def split(self, chunks: list[str]) -> list[tuple[str, ...] | None]:
        """Each chunk's tokens by the compiled tier, or None for a chunk it declines (for tests and debugging;
        the filters call :func:`affix_tokens` from inside their compiled pass)."""
        out: list[tuple[str, ...] | None] = []
        for chunk in chunks:
            if not chunk or max(map(ord, chunk)) >= TABLE_END:
                out.append(None)  # the tables end there (and an empty chunk is no chunk)
                continue
            raw = chunk.encode("utf-8", errors="surrogatepass")
            codes = np.frombuffer(chunk.encode("utf-32-le", errors="surrogatepass"), dtype=np.uint32)
            codes = codes.astype(np.int64)
            pos = np.zeros(len(codes) + 1, dtype=np.int64)
            np.cumsum([len(c.encode("utf-8", errors="surrogatepass")) for c in chunk], out=pos[1:])
            spans = np.zeros((len(codes) + 1, 2), dtype=np.int64)
            scratch = np.zeros(scratch_size(len(codes)), dtype=np.int64)
            data = np.frombuffer(raw or b"\0", np.uint8)
            t = affix_tokens(
                codes, pos, data, 0, len(codes), self.arrays, self.vm, spans, 0, scratch, self.url_ask
            )
            if t == ASK_URL:
                url = int(self.url_match(chunk[spans[0, 0] : spans[0, 1]]) is not None)
                t = affix_tokens(
                    codes, pos, data, 0, len(codes), self.arrays, self.vm, spans, 0, scratch, url
                )
            out.append(None if t == DECLINED else tuple(chunk[s:e] for s, e in spans[:t].tolist()))
        return out


# -- the compiled matcher ----------------------------------------------------------------------------------------
@leaf
def _in(mask, c, cls):  # pragma: no cover - compiled
    return (mask[c] >> np.uint64(cls)) & np.uint64(1) != np.uint64(0)


@leaf
def _holds(mask, codes, lo, hi, cls):  # pragma: no cover - compiled
    """Whether a code point of ``[lo, hi)`` is in class ``cls``."""
    for i in range(lo, hi):  # noqa: SIM110 - a loop compiles, any() over a generator does not
        if _in(mask, codes[i], cls):
            return True
    return False


@leaf
def _behind_ok(codes, lo, pos, pieces, p, lb, mask):  # pragma: no cover - compiled
    n = pieces[p, 2]
    if pos - lo < n:
        return False
    for k in range(n):  # noqa: SIM110 - numba compiles the loop, not all() over a generator
        if not _in(mask, codes[pos - n + k], lb[pieces[p, 1] + k]):
            return False
    return True


@leaf
def _same(codes, pos, lits, off, n):  # pragma: no cover - compiled
    """``same_span`` inlined: the searches call it for every alternative they try."""
    for k in range(n):  # noqa: SIM110 - as above
        if codes[pos + k] != lits[off + k]:
            return False
    return True


@leaf
def _after_ok(codes, hi, end, pieces, p, mask, to_end):  # pragma: no cover - compiled
    """What follows a body that ends at ``end``: the lookahead, and for a suffix the string's end."""
    if to_end and end != hi:
        return False
    cls = pieces[p, 3]
    if cls >= 0:
        there = end < hi and _in(mask, codes[end], cls)
        if there == (pieces[p, 4] == 1):
            return False
    return True


@leaf
def _vm_look(vprog, vmask, codes, lo, hi, pc, pos, stack, top):  # pragma: no cover - compiled
    """A lookaround's program (which holds no lookaround) from ``pos``: where it ends, -1, or -2 (see
    :func:`_vm`)."""
    base = top
    steps = 0
    while True:
        steps += 1
        if steps > VM_STEPS:
            return -2
        op = vprog[pc, 0]
        ok = True
        if op == OP_CHAR:
            ok = pos < hi and codes[pos] == vprog[pc, 1]
            pos += 1
            pc += 1
        elif op == OP_CLASS:
            ok = pos < hi and (vmask[codes[pos]] >> np.uint64(vprog[pc, 1])) & np.uint64(1) != np.uint64(0)
            pos += 1
            pc += 1
        elif op == OP_SPLIT:
            if top + 2 > len(stack):
                return -2
            stack[top], stack[top + 1] = vprog[pc, 2], pos
            top += 2
            pc = vprog[pc, 1]
        elif op == OP_JMP:
            pc = vprog[pc, 1]
        elif op == OP_BOL:
            ok = pos == lo
            pc += 1
        elif op == OP_EOL:
            ok = pos == hi
            pc += 1
        elif op == OP_MATCH:
            return pos
        else:
            return -2  # a lookaround inside a lookaround: never compiled (Unsupported)
        if not ok:
            if top == base:
                return -1
            top -= 2
            pc, pos = stack[top], stack[top + 1]


@leaf
def _vm(vprog, vmask, codes, lo, hi, pc, pos, stack, top, min_end):  # pragma: no cover - compiled
    """Where the program at ``pc`` matches from ``pos`` in ``codes[lo:hi]`` (the string searched: ``^``, ``$`` and
    lookarounds see only it), in ``re``'s order of trying; -1 for no match, -2 for a search past
    :data:`VM_STEPS` steps or the stack (``stack[top:]``), which declines the chunk. The same loop as
    :func:`_vm_look`, with lookarounds: a sub-search at ``pos`` (ahead) or ``width`` back (behind, which must
    end at ``pos``), negated or not. A match must end at ``min_end`` or later (``finditer`` after an empty
    match: ``re`` then backtracks into the other ways of matching, as this does)."""
    base = top
    steps = 0
    while True:
        steps += 1
        if steps > VM_STEPS:
            return -2
        op = vprog[pc, 0]
        ok = True
        if op == OP_CHAR:
            ok = pos < hi and codes[pos] == vprog[pc, 1]
            pos += 1
            pc += 1
        elif op == OP_CLASS:
            ok = pos < hi and (vmask[codes[pos]] >> np.uint64(vprog[pc, 1])) & np.uint64(1) != np.uint64(0)
            pos += 1
            pc += 1
        elif op == OP_SPLIT:
            if top + 2 > len(stack):
                return -2
            stack[top], stack[top + 1] = vprog[pc, 2], pos
            top += 2
            pc = vprog[pc, 1]
        elif op == OP_JMP:
            pc = vprog[pc, 1]
        elif op == OP_BOL:
            ok = pos == lo
            pc += 1
        elif op == OP_EOL:
            ok = pos == hi
            pc += 1
        elif op == OP_LOOK:
            kind = vprog[pc, 2]
            behind = kind & 1 == 1
            start = pos - vprog[pc, 3] if behind else pos
            found = False
            if start >= lo:
                e = _vm_look(vprog, vmask, codes, lo, hi, vprog[pc, 1], start, stack, top)
                if e == -2:
                    return -2
                found = e >= 0 and (not behind or e == pos)
            ok = found != (kind & 2 == 2)
            pc += 1
        else:  # OP_MATCH
            if pos >= min_end:
                return pos
            ok = False
        if not ok:
            if top == base:
                return -1
            top -= 2
            pc, pos = stack[top], stack[top + 1]


@leaf
def _match(
    codes, lo, hi, pos, pieces, p, a, lb, alt_off, alt_len, lits, mask, vprog, vmask, stack, top, min_end
):  # pragma: no cover - compiled
    """Where piece ``p`` (its alternative ``a`` of literals, or its class, run or program for -1) matches from
    ``pos`` (its lookbehind, body and lookahead), or -1 (prefixes, infixes); -2 declines the chunk. Only a
    program can match nothing, and ``min_end`` holds it to a match that ends there or later."""
    kind = pieces[p, 0]
    if kind == VM:
        if pieces[p, 7] >= 0 and not _holds(mask, codes, pos, hi, pieces[p, 7]):
            return -1  # none of the characters every match holds
        return _vm(vprog, vmask, codes, lo, hi, pieces[p, 8], pos, stack, top, min_end)
    if not _behind_ok(codes, lo, pos, pieces, p, lb, mask):
        return -1
    if kind == CLASS:  # one character of a class
        if (
            pos < hi
            and _in(mask, codes[pos], pieces[p, 7])
            and _after_ok(codes, hi, pos + 1, pieces, p, mask, False)
        ):
            return pos + 1
        return -1
    if kind == RUN:  # a run of one character, greedy, giving back what the lookahead needs
        r = 0
        while pos + r < hi and codes[pos + r] == pieces[p, 8]:
            r += 1
        for length in range(r, pieces[p, 9] - 1, -1):
            if _after_ok(codes, hi, pos + length, pieces, p, mask, False):
                return pos + length
        return -1
    n = alt_len[a]  # one alternative of literals
    if (
        pos + n <= hi
        and _same(codes, pos, lits, alt_off[a], n)
        and _after_ok(codes, hi, pos + n, pieces, p, mask, False)
    ):
        return pos + n
    return -1


@leaf
def _leftmost_to_end(
    codes, lo, hi, pieces, p, a, lb, alt_off, alt_len, lits, mask, vprog, vmask, stack, top
):  # pragma: no cover - compiled
    """The leftmost start from which piece ``p`` (its alternative ``a`` of literals, or its class, run or program
    for -1) matches through to ``hi`` (a ``$`` search), or ``hi``; -1 declines the chunk."""
    kind = pieces[p, 0]
    if (
        kind == VM
    ):  # each start from the leftmost the piece's longest match allows (its program ends in ``$``)
        longest = pieces[p, 9]
        first = lo if longest < 0 else max(lo, hi - longest)
        if pieces[p, 7] >= 0 and not _holds(mask, codes, first, hi, pieces[p, 7]):
            return hi  # none of the characters every match holds
        for s in range(first, hi):
            e = _vm(vprog, vmask, codes, lo, hi, pieces[p, 8], s, stack, top, s)
            if e == -2:
                return -1
            if e >= 0:
                return s
        return hi
    if not _after_ok(codes, hi, hi, pieces, p, mask, True):
        return hi  # a lookahead that needs a character after the end
    if kind == CLASS:
        s = hi - 1
        if s >= lo and _in(mask, codes[s], pieces[p, 7]) and _behind_ok(codes, lo, s, pieces, p, lb, mask):
            return s
        return hi
    if kind == RUN:
        r = 0
        while hi - r - 1 >= lo and codes[hi - r - 1] == pieces[p, 8]:
            r += 1
        for s in range(hi - r, hi - pieces[p, 9] + 1):
            if _behind_ok(codes, lo, s, pieces, p, lb, mask):
                return s
        return hi
    s = hi - alt_len[a]
    if (
        lo <= s
        and _same(codes, s, lits, alt_off[a], hi - s)
        and _behind_ok(codes, lo, s, pieces, p, lb, mask)
    ):
        return s
    return hi


@leaf
def _prefix_len(
    codes,
    lo,
    hi,
    pieces,
    cand_idx,
    cand_off,
    lb,
    alt_off,
    alt_len,
    lits,
    mask,
    vprog,
    vmask,
    stack,
    top,
    floating,
):  # pragma: no cover - compiled
    """``prefix_search``: the first piece (of those that can start with the string's first character) that
    matches at the start, else the leftmost match of a piece without ``^`` further on (``re.search``; spaCy
    takes its length as the prefix's); -1 declines the chunk."""
    c = codes[lo]
    for j in range(cand_off[PREFIX, c], cand_off[PREFIX, c + 1]):
        e = _match(
            codes, lo, hi, lo, pieces, cand_idx[j, 0], cand_idx[j, 1], lb, alt_off, alt_len, lits, mask,
            vprog, vmask, stack, top, lo,
        )  # fmt: skip
        if e == -2:
            return -1
        if e >= 0:
            return e - lo
    for s in range(lo + 1, hi) if len(floating) else range(0):
        for u in floating:
            e = _vm(vprog, vmask, codes, lo, hi, pieces[u, 8], s, stack, top, s)
            if e == -2:
                return -1
            if e >= 0:
                return e - s
    return 0


@leaf
def _suffix_len(
    codes, lo, hi, pieces, cand_idx, cand_off, lb, alt_off, alt_len, lits, mask, vprog, vmask, stack, top
):  # pragma: no cover - compiled
    """``suffix_search``: the length from the leftmost start at which a piece (of those that can end with the
    string's last character) matches through to the end; -1 declines the chunk."""
    c = codes[hi - 1]
    best = hi
    for j in range(cand_off[SUFFIX, c], cand_off[SUFFIX, c + 1]):
        s = _leftmost_to_end(
            codes, lo, hi, pieces, cand_idx[j, 0], cand_idx[j, 1], lb, alt_off, alt_len, lits, mask,
            vprog, vmask, stack, top,
        )  # fmt: skip
        if s < 0:
            return -1
        if s < best:
            best = s
    return hi - best


@leaf
def _key(table, hashes, starts, arena, seen, data, pos, lo, hi):  # pragma: no cover - compiled
    """The number of the code points ``[lo, hi)`` (bytes ``data[pos[lo]:pos[hi]]``) in the table, or -1."""
    s, e = pos[lo], pos[hi]
    if e <= s or not (seen[data[s], data[e - 1]] >> np.uint64(min(e - s, 63))) & np.uint64(1):
        return -1
    u, _ = find(table, hashes, starts, arena, data, s, e, fnv(data, s, e))
    return u


@leaf
def _member(table, hashes, starts, arena, seen, data, pos, lo, hi):  # pragma: no cover - compiled
    """Whether the code points ``[lo, hi)`` are one of the table's strings."""
    return _key(table, hashes, starts, arena, seen, data, pos, lo, hi) >= 0


@leaf
def all_in(flags, codes, lo, hi):  # pragma: no cover - compiled
    """Whether ``[lo, hi)`` is not empty and each of its code points is flagged (``str.isalpha`` of the string)."""
    if lo >= hi:
        return False
    for i in range(lo, hi):  # noqa: SIM110 - as above
        if not flags[codes[i]]:
            return False
    return True


@leaf
def one_word(codes, pos, data, n, program, vm):  # pragma: no cover - compiled
    """Tier 1: whether the chunk ``codes[0:n]`` (bytes ``data[pos[0]:pos[n]]``) is one word as it stands: letters
    only (no English prefix or suffix matches letters) and not a special case; never for another language."""
    alpha, stable, shashes, sstarts, sarena, sseen, flags = (
        program[6], program[8], program[9], program[10], program[11], program[22], vm[2],
    )  # fmt: skip
    return (
        flags[0] == 1
        and all_in(alpha, codes, 0, n)
        and not _member(stable, shashes, sstarts, sarena, sseen, data, pos, 0, n)
    )


@leaf
def may_be_url(codes, lo, hi):  # pragma: no cover - compiled
    """False where spaCy's URL pattern (:data:`URL_SOURCE`) cannot match ``codes[lo:hi]``, a middle without white
    space; True where it might (``re`` then decides).

    Why: every middle holding a dot was asked of ``re`` from Python, and on LibreOffice's help pages in German
    ~3,000 middles a language were (``ofForm.Move(100``, ``com.sun.star.util.PathSettings``), 4% of them URLs.

    Exact as a test: without ``://`` (the scheme's end) and ``@`` (the user's), the pattern's host starts the
    string: an IP address (digits and dots) or labels of ``[A-Za-z0-9\u00a1-\uffff_-]`` each ending in a dot,
    then a top-level domain of ``ALPHA_LOWER`` (lower-case letters, all of them in that class below U+10000, some
    above it), and after the host only ``:port``, ``[/?#]...`` or the end. So the host is the longest run of those
    characters (a code point from U+10000 on counted in) and dots from the start, the character after it is one of
    ``:/?#`` or none, and the host's part after its last dot (the domain or the address's last number) is digits
    only, or two characters or more none of which is ``A-Z``, ``0-9``, ``_`` or ``-``."""
    for q in range(lo, hi):
        c = codes[q]
        if c == 64 or (c == 58 and q + 2 < hi and codes[q + 1] == 47 and codes[q + 2] == 47):  # "@", "://"
            return True
    h = lo
    while h < hi:
        c = codes[h]
        if not (
            c == 46  # "."
            or c == 45  # "-"
            or c == 95  # "_"
            or 48 <= c <= 57
            or 65 <= c <= 90
            or 97 <= c <= 122
            or c >= 0xA1
        ):
            break
        h += 1
    if h < hi:
        c = codes[h]
        if not (c == 58 or c == 47 or c == 63 or c == 35):  # ":", "/", "?", "#"
            return False
    d = h - 1
    while d >= lo and codes[d] != 46:
        d -= 1
    if d < lo or d == h - 1:
        return False  # no dot in the host, or nothing after its last one
    digits, lower = True, True
    for q in range(d + 1, h):
        c = codes[q]
        if not 48 <= c <= 57:
            digits = False
        if c == 45 or c == 95 or 48 <= c <= 57 or 65 <= c <= 90:
            lower = False
    return digits or (lower and h - d - 1 >= 2)


@leaf
def affix_tokens(
    codes, pos, data, lo0, hi0, program, vm, spans, t0, scratch, url
):  # pragma: no cover - compiled
    """The tokens of the chunk ``codes[lo0:hi0]`` (its UTF-8 bytes ``data[pos[lo0]:pos[hi0]]``, ``pos`` one entry
    per code point and one past the last) as spans of code points, written to ``spans[t0:]``; returns where they
    end, or :data:`DECLINED`. Every code point must be below ``TABLE_END`` (the caller checks). ``scratch``: room
    for :func:`scratch_size` places (the programs' backtracking stack after the affixes' places).

    English's URL pattern decides a middle that holds a dot: ``url`` says whether it matches (1 or 0); with -1
    the search returns :data:`ASK_URL` and the middle's span in ``spans[t0]``, for the caller to ask ``re`` and
    call again; with :data:`ASK_PLAUSIBLE_URL` it does so only where :func:`may_be_url` says the pattern might
    match (elsewhere the middle is not a URL)."""
    (pieces, lb, alt_off, alt_len, lits, mask, alpha, alnum, stable, shashes, sstarts, sarena,
     ktable, khashes, kstarts, karena, pat_ids, pat_off, by_first, first_off, cand_idx, cand_off, sseen, kseen) = program  # fmt: skip
    vprog, vmask, flags, held, floating = vm
    english = flags[0] == 1
    tm = flags[1]  # token_match's program, or -1 (none, or one asked by ``held``'s characters)
    if _member(stable, shashes, sstarts, sarena, sseen, data, pos, lo0, hi0):
        return DECLINED
    for q in range(lo0, hi0):  # a character the language's token_match needs: spaCy's pattern decides
        if held[codes[q]]:
            return DECLINED
    # prefixes in order (where each ends) in scratch[0:], suffixes in the order found (where each starts) after
    base = hi0 - lo0 + 1
    top = 2 * base  # the programs' stack
    n_pre, n_suf = 0, 0
    lo, hi = lo0, hi0
    last_size = -1
    while hi > lo and hi - lo != last_size:
        if tm >= 0:  # spaCy asks token_match first: a match ends the affixes
            e = _vm(vprog, vmask, codes, lo, hi, tm, lo, scratch, top, lo)
            if e == -2:
                return DECLINED
            if e >= 0:
                break
        if _member(stable, shashes, sstarts, sarena, sseen, data, pos, lo, hi):
            return DECLINED
        if english and all_in(alpha, codes, lo, hi):
            break  # no English prefix or suffix matches letters only
        last_size = hi - lo
        pre_len = _prefix_len(
            codes, lo, hi, pieces, cand_idx, cand_off, lb, alt_off, alt_len, lits, mask, vprog, vmask, scratch, top,
            floating,
        )  # fmt: skip
        if pre_len < 0:
            return DECLINED
        if (
            pre_len
            and hi > lo + pre_len
            and _member(stable, shashes, sstarts, sarena, sseen, data, pos, lo + pre_len, hi)
        ):
            return DECLINED
        suf_len = 0
        if hi > lo + pre_len:
            suf_len = _suffix_len(
                codes, lo + pre_len, hi, pieces, cand_idx, cand_off, lb, alt_off, alt_len, lits, mask,
                vprog, vmask, scratch, top,
            )  # fmt: skip
            if suf_len < 0:
                return DECLINED
        if (
            suf_len
            and hi - suf_len > lo
            and _member(stable, shashes, sstarts, sarena, sseen, data, pos, lo, hi - suf_len)
        ):
            return DECLINED
        if pre_len and suf_len and pre_len + suf_len <= hi - lo:
            scratch[n_pre] = lo + pre_len
            n_pre += 1
            scratch[base + n_suf] = hi - suf_len
            n_suf += 1
            lo, hi = lo + pre_len, hi - suf_len
        elif pre_len:
            scratch[n_pre] = lo + pre_len
            n_pre += 1
            lo = lo + pre_len
        elif suf_len:
            scratch[base + n_suf] = hi - suf_len
            n_suf += 1
            hi = hi - suf_len
    t = t0
    # the prefixes' spans: from the chunk's start, each ending where the next begins
    start = lo0
    for k in range(n_pre):
        spans[t, 0], spans[t, 1] = start, scratch[k]
        start = scratch[k]
        t += 1
    if hi > lo:
        if _member(stable, shashes, sstarts, sarena, sseen, data, pos, lo, hi):
            return DECLINED
        whole = False  # token_match, then the URL pattern, keep the middle whole
        if tm >= 0:
            e = _vm(vprog, vmask, codes, lo, hi, tm, lo, scratch, top, lo)
            if e == -2:
                return DECLINED
            whole = e >= 0
        dot = False
        if not whole:
            for q in range(lo, hi):
                if codes[q] == 46:
                    dot = True
                    break
        if dot and url < 0 and (url != ASK_PLAUSIBLE_URL or may_be_url(codes, lo, hi)):
            spans[t0, 0], spans[t0, 1] = lo, hi  # English's URL pattern decides a string with a dot: ask re
            return ASK_URL
        if whole or (dot and url == 1) or (english and all_in(alnum, codes, lo, hi)):
            spans[t, 0], spans[t, 1] = lo, hi
            t += 1
        else:
            begin = lo
            p = lo
            advance = -1  # after an empty match at p, finditer takes no empty match at p again
            while p < hi:
                found = -1
                c = codes[p]
                for j in range(cand_off[INFIX, c], cand_off[INFIX, c + 1]):
                    e = _match(
                        codes, lo, hi, p, pieces, cand_idx[j, 0], cand_idx[j, 1], lb, alt_off, alt_len, lits,
                        mask, vprog, vmask, scratch, top, p + 1 if p == advance else p,
                    )  # fmt: skip
                    if e == -2:
                        return DECLINED
                    if e >= 0:
                        found = e
                        break
                if found < 0:
                    p += 1
                    continue
                if p != lo:
                    if p != begin:
                        spans[t, 0], spans[t, 1] = begin, p
                        t += 1
                    if p != found:
                        spans[t, 0], spans[t, 1] = p, found
                        t += 1
                    begin = found
                if found > p:
                    p = found
                else:
                    advance = p
            if begin < hi:
                spans[t, 0], spans[t, 1] = begin, hi
                t += 1
    # the suffixes, last found first: each runs from where it was cut to where the one cut before it began
    for k in range(n_suf - 1, -1, -1):
        spans[t, 0] = scratch[base + k]
        spans[t, 1] = scratch[base + k - 1] if k > 0 else hi0
        t += 1
    # tokens that start one of the special-case patterns spaCy re-applies over them: spaCy decides
    for q in range(t0, t):
        u = _key(ktable, khashes, kstarts, karena, kseen, data, pos, spans[q, 0], spans[q, 1])
        if u < 0:
            continue
        for f in range(first_off[u], first_off[u + 1]):
            pat = by_first[f]
            length = pat_off[pat + 1] - pat_off[pat]
            if q + length > t:
                continue
            same = True
            for j in range(length):
                if (
                    _key(ktable, khashes, kstarts, karena, kseen, data, pos, spans[q + j, 0], spans[q + j, 1])
                    != pat_ids[pat_off[pat] + j]
                ):
                    same = False
                    break
            if same:
                return DECLINED
    return t
