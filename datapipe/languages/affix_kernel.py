"""spaCy's affix algorithm (tier 2 of :mod:`datapipe.languages.spacy_words`) in compiled code, for English.

Why: a chunk met for the first time cost ~4.7 us in the Python tier (the loop around the searches, not the
searches), ~0.46 CPU s of each e2e build worker's filter stage, and the words it gave were then numbered as Python
strings (:class:`datapipe.languages.chunk_ids.WordTable`). Here the tier runs inside the compiled pass that numbers
a text's new chunks (:mod:`datapipe.languages.chunk_ids`), on the chunk's code points, so that no Python string is
made for a chunk this tier takes. (The eleventh session compiled this tier alone, returning strings: 0.1 s of a
build for ~600 lines, not kept; what cost was the strings.)

What is compiled is the patterns' own pieces, read from their parse trees: each piece of the prefix, suffix and
infix alternations is a lookbehind of fixed width (a character or class per place), a body and an optional
one-character lookahead (positive or negative), where a body is a literal, a set of literals (a group of
alternatives), one character of a class, or a run of one character (``\\.\\.+``). A pattern with any other piece
is not compiled (:class:`Unsupported`), and every chunk goes to the Python tier. The searches keep ``re``'s
semantics:

- prefix: the first piece, in the pattern's order, that matches at the string's start (with what follows it);
- suffix: the leftmost start from which some piece matches through to the end (a ``$`` search), its length;
- infix: ``finditer``: from left to right, at each place the first piece that matches, then on after it.

Around them the loop is ``WordSplitter._affix_split``'s with its English shortcuts (a string of letters has no
affix, one of letters and digits no infix). A chunk is declined (left to the Python tiers, which pass it on to
spaCy where they must) when it holds a character at or beyond :data:`~datapipe.kernels.utf8.TABLE_END`, when any
string the loop looks up is a special case, when the middle holds a dot (English's URL pattern decides those), or
when its tokens hold one of the special-case patterns spaCy re-applies. Special cases and pattern tokens are
looked up by their UTF-8 bytes, as the chunk's own bytes. ``tests/test_affix_kernel.py`` holds the compiled tier to
the Python one on every fixture chunk, on every code point and on generated chunks.
"""

from __future__ import annotations

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

LIT, CLASS, RUN = 0, 1, 2  # a piece's body: literals (one, or a group of alternatives), a class, a run
PREFIX, SUFFIX, INFIX = 0, 1, 2
MAX_CLASSES = 64  # one bit each in the class table
DECLINED = -1  # what :func:`affix_tokens` returns for a chunk it leaves to Python
ASK_URL = -2  # ... for a chunk whose middle holds a dot, when the caller has not said whether it is a URL


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

    def cls(self, members: np.ndarray) -> int:
        key = members.tobytes()
        if key not in self.classes:
            if len(self.classes) == MAX_CLASSES:
                raise Unsupported("too many classes")
            self.classes[key] = (len(self.classes), members)
        return self.classes[key][0]

    def piece(self, source: str, flags: int, role: int) -> None:
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
    """:class:`AffixProgram`'s arrays for the prefix, suffix and infix patterns (source, flags), the special cases
    and the patterns: 0.1 s of each worker's first filter shard, kept on disk (:mod:`datapipe.kernels.tables`)."""
    b = _Builder()
    bounds = [0]
    for role, (source, flags) in zip((PREFIX, SUFFIX, INFIX), searches, strict=True):
        pieces = top_level_pieces(source)
        if pieces is None:
            raise Unsupported("a pattern that is not an alternation of pieces")
        for p in pieces:
            b.piece(p, flags, role)
        bounds.append(len(b.rows))
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
    return {f"a{i:02d}": a for i, a in enumerate(arrays)}


class AffixProgram:
    """English's affix patterns, special cases and pattern keys as the arrays :func:`affix_tokens` reads
    (``arrays``, one tuple: a compiled pass takes the program as one argument)."""

    def __init__(
        self, tok: Any, specials: frozenset[str], patterns: dict[str, tuple[tuple[str, ...], ...]]
    ) -> None:
        """``patterns``: the special cases spaCy re-applies over split tokens, by their first token (as
        ``WordSplitter._patterns``); a chunk whose tokens hold one goes to spaCy."""
        if tok.token_match is not None:
            raise Unsupported("a token_match")
        self.url_match = tok.url_match or re.compile("a^").match  # asked for a middle that holds a dot
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
        }
        got = stored("affix-program", key, lambda: _program(searches, specials, patterns))
        self.arrays = tuple(got[f"a{i:02d}"] for i in range(len(got)))

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
            scratch = np.zeros(2 * (len(codes) + 1), dtype=np.int64)
            data = np.frombuffer(raw or b"\0", np.uint8)
            t = affix_tokens(codes, pos, data, 0, len(codes), self.arrays, spans, 0, scratch, -1)
            if t == ASK_URL:
                url = int(self.url_match(chunk[spans[0, 0] : spans[0, 1]]) is not None)
                t = affix_tokens(codes, pos, data, 0, len(codes), self.arrays, spans, 0, scratch, url)
            out.append(None if t == DECLINED else tuple(chunk[s:e] for s, e in spans[:t].tolist()))
        return out


# -- the compiled matcher ----------------------------------------------------------------------------------------
@leaf
def _in(mask, c, cls):  # pragma: no cover - compiled
    return (mask[c] >> np.uint64(cls)) & np.uint64(1) != np.uint64(0)


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
def _match(codes, lo, hi, pos, pieces, p, a, lb, alt_off, alt_len, lits, mask):  # pragma: no cover - compiled
    """Where piece ``p`` (its alternative ``a`` of literals, or its class or run for -1) matches from ``pos`` (its
    lookbehind, body and lookahead), or -1 (prefixes, infixes)."""
    if not _behind_ok(codes, lo, pos, pieces, p, lb, mask):
        return -1
    kind = pieces[p, 0]
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
    codes, lo, hi, pieces, p, a, lb, alt_off, alt_len, lits, mask
):  # pragma: no cover - compiled
    """The leftmost start from which piece ``p`` (its alternative ``a`` of literals, or its class or run for -1)
    matches through to ``hi`` (a ``$`` search), or ``hi``."""
    if not _after_ok(codes, hi, hi, pieces, p, mask, True):
        return hi  # a lookahead that needs a character after the end
    kind = pieces[p, 0]
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
    codes, lo, hi, pieces, cand_idx, cand_off, lb, alt_off, alt_len, lits, mask
):  # pragma: no cover - compiled
    """``prefix_search``: the first piece (of those that can start with the string's first character) that
    matches at the start."""
    c = codes[lo]
    for j in range(cand_off[PREFIX, c], cand_off[PREFIX, c + 1]):
        e = _match(
            codes, lo, hi, lo, pieces, cand_idx[j, 0], cand_idx[j, 1], lb, alt_off, alt_len, lits, mask
        )
        if e >= 0:
            return e - lo
    return 0


@leaf
def _suffix_len(
    codes, lo, hi, pieces, cand_idx, cand_off, lb, alt_off, alt_len, lits, mask
):  # pragma: no cover - compiled
    """``suffix_search``: the length from the leftmost start at which a piece (of those that can end with the
    string's last character) matches through to the end."""
    c = codes[hi - 1]
    best = hi
    for j in range(cand_off[SUFFIX, c], cand_off[SUFFIX, c + 1]):
        s = _leftmost_to_end(
            codes, lo, hi, pieces, cand_idx[j, 0], cand_idx[j, 1], lb, alt_off, alt_len, lits, mask
        )
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
def one_word(codes, pos, data, n, program):  # pragma: no cover - compiled
    """Tier 1: whether the chunk ``codes[0:n]`` (bytes ``data[pos[0]:pos[n]]``) is one word as it stands: letters
    only (no English prefix or suffix matches letters) and not a special case."""
    alpha, stable, shashes, sstarts, sarena, sseen = (
        program[6], program[8], program[9], program[10], program[11], program[22],
    )  # fmt: skip
    return all_in(alpha, codes, 0, n) and not _member(
        stable, shashes, sstarts, sarena, sseen, data, pos, 0, n
    )


@leaf
def affix_tokens(codes, pos, data, lo0, hi0, program, spans, t0, scratch, url):  # pragma: no cover - compiled
    """The tokens of the chunk ``codes[lo0:hi0]`` (its UTF-8 bytes ``data[pos[lo0]:pos[hi0]]``, ``pos`` one entry
    per code point and one past the last) as spans of code points, written to ``spans[t0:]``; returns where they
    end, or :data:`DECLINED`. Every code point must be below ``TABLE_END`` (the caller checks). ``scratch``: room
    for ``2 * (hi0 - lo0 + 1)`` places.

    English's URL pattern decides a middle that holds a dot: ``url`` says whether it matches (1 or 0); with -1
    the search returns :data:`ASK_URL` and the middle's span in ``spans[t0]``, for the caller to ask ``re`` and
    call again."""
    (pieces, lb, alt_off, alt_len, lits, mask, alpha, alnum, stable, shashes, sstarts, sarena,
     ktable, khashes, kstarts, karena, pat_ids, pat_off, by_first, first_off, cand_idx, cand_off, sseen, kseen) = program  # fmt: skip
    if _member(stable, shashes, sstarts, sarena, sseen, data, pos, lo0, hi0):
        return DECLINED
    # prefixes in order (where each ends) in scratch[0:], suffixes in the order found (where each starts) after
    base = hi0 - lo0 + 1
    n_pre, n_suf = 0, 0
    lo, hi = lo0, hi0
    last_size = -1
    while hi > lo and hi - lo != last_size:
        if _member(stable, shashes, sstarts, sarena, sseen, data, pos, lo, hi):
            return DECLINED
        if all_in(alpha, codes, lo, hi):
            break  # no English prefix or suffix matches letters only
        last_size = hi - lo
        pre_len = _prefix_len(codes, lo, hi, pieces, cand_idx, cand_off, lb, alt_off, alt_len, lits, mask)
        if (
            pre_len
            and hi > lo + pre_len
            and _member(stable, shashes, sstarts, sarena, sseen, data, pos, lo + pre_len, hi)
        ):
            return DECLINED
        suf_len = 0
        if hi > lo + pre_len:
            suf_len = _suffix_len(
                codes, lo + pre_len, hi, pieces, cand_idx, cand_off, lb, alt_off, alt_len, lits, mask
            )
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
        dot = False
        for q in range(lo, hi):
            if codes[q] == 46:
                dot = True
                break
        if dot and url < 0:  # English's URL pattern decides a string with a dot: the caller asks re
            spans[t0, 0], spans[t0, 1] = lo, hi
            return ASK_URL
        if (dot and url == 1) or all_in(alnum, codes, lo, hi):
            spans[t, 0], spans[t, 1] = lo, hi
            t += 1
        else:
            begin = lo
            p = lo
            while p < hi:
                found = -1
                c = codes[p]
                for j in range(cand_off[INFIX, c], cand_off[INFIX, c + 1]):
                    e = _match(
                        codes,
                        lo,
                        hi,
                        p,
                        pieces,
                        cand_idx[j, 0],
                        cand_idx[j, 1],
                        lb,
                        alt_off,
                        alt_len,
                        lits,
                        mask,
                    )
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
                p = found if found > p else p + 1
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
