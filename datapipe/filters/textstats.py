"""A document's line and paragraph statistics, counted in one compiled walk over its characters.

Gopher repetition splits the text into paragraphs (``re.split(r"\\n{2,}", text.strip())``) and lines
(``re.split("\\n+", text)``) and counts the repeated ones and their characters; Gopher quality counts the lines of
``str.splitlines`` that begin with a bullet or end with an ellipsis, and the ``#`` and ellipses of the text. In
Python those were a split into strings, a set of strings and a loop per line for each rule (0.14 of the 0.28 s the
two rules took over the fixture documents after their word statistics were compiled). Here one walk over the
text's code points (UTF-32, made once per text, :attr:`datapipe.filters.document.FilterDoc.codes`) gives them all
(:func:`line_stats`): repeated pieces are found in an open-addressing table of each piece's span, keyed by a hash
of its characters and confirmed character by character, so the counts are exact.
"""

from __future__ import annotations

import numpy as np

from datapipe.kernels.jit import kernel
from datapipe.kernels.spans import same_span

# code point -> str.isspace (every white-space character is below U+3001)
SPACE = np.array([chr(i).isspace() for i in range(0x3001)], dtype=np.bool_)
# str.splitlines's line boundaries (\r\n is one)
BREAKS = np.zeros(0x202A, dtype=np.bool_)
BREAKS[[0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029]] = True

# what line_stats returns, by position
(
    PARAGRAPHS,
    DUP_PARAGRAPHS,
    DUP_PARAGRAPH_CHARS,
    LINES,
    DUP_LINES,
    DUP_LINE_CHARS,
    SPLITLINES,
    BULLET_LINES,
    ELLIPSIS_LINES,
    HASHES,
    ELLIPSES,
) = range(11)


def fineweb_stats(codes: np.ndarray, stop: np.ndarray, short_length: int) -> tuple[int, int, int, int, int]:
    """FineWeb quality's counts over the text's non-blank lines of ``split("\\n")``: (lines, lines ending in a
    character ``stop`` marks, lines of at most ``short_length`` characters, characters of repeated lines, newlines)."""
    lines, punct, short, dup, newlines = _fineweb_stats(codes, SPACE, stop, short_length)
    return int(lines), int(punct), int(short), int(dup), int(newlines)


def line_stats(codes: np.ndarray, paragraphs: bool = True) -> np.ndarray:
    """The counts named by this module's constants, for the text whose code points are ``codes``; without
    ``paragraphs``, the three paragraph counts are -1 (not counted: a walk and a table of its pieces' hashes
    less, for rules that read none of them, as FineWeb-2's Gopher repetition with its paragraph rules off)."""
    return _line_stats(codes, SPACE, BREAKS, paragraphs)


_BASE = np.uint64(0x100000001B3)


@kernel
def _is_space(c, space):  # pragma: no cover - compiled
    return c < len(space) and space[c]


@kernel
def _repeats(codes, starts, ends):  # pragma: no cover - compiled
    """(pieces seen before, their characters) over the spans ``codes[starts[i]:ends[i]]``, in order."""
    m = len(starts)
    size = 16
    while size < 2 * m:
        size *= 2
    first = np.full(size, -1, dtype=np.int64)
    hashes = np.zeros(size, dtype=np.uint64)
    mask = np.uint64(size - 1)
    n_dup, chars = 0, 0
    for i in range(m):
        s, e = starts[i], ends[i]
        h = np.uint64(e - s)
        for k in range(s, e):
            h = (h ^ np.uint64(codes[k])) * _BASE
        slot = (h ^ (h >> np.uint64(29))) & mask
        while True:
            q = first[slot]
            if q < 0:
                first[slot], hashes[slot] = i, h
                break
            if hashes[slot] == h:
                s2, e2 = starts[q], ends[q]
                if e2 - s2 == e - s and same_span(codes, s2, codes, s, e - s):
                    n_dup += 1
                    chars += e - s
                    break
            slot = (slot + np.uint64(1)) & mask
    return n_dup, chars


@kernel
def _line_stats(codes, space, breaks, paragraphs):  # pragma: no cover - compiled
    n = len(codes)
    out = np.zeros(11, dtype=np.int64)
    # Gopher repetition's lines: re.split("\n+", text), empty pieces at either end included
    starts = np.empty(n + 1, dtype=np.int64)
    ends = np.empty(n + 1, dtype=np.int64)
    m, i, start = 0, 0, 0
    while i < n:
        if codes[i] == 10:
            starts[m], ends[m] = start, i
            m += 1
            while i < n and codes[i] == 10:
                i += 1
            start = i
        else:
            i += 1
    starts[m], ends[m] = start, n
    m += 1
    out[3] = m
    out[4], out[5] = _repeats(codes, starts[:m], ends[:m])
    # paragraphs: re.split(r"\n{2,}", text.strip())
    a, b = 0, n
    if not paragraphs:
        out[0], out[1], out[2] = -1, -1, -1
        b = 0  # no piece walked or hashed
    while a < b and _is_space(codes[a], space):
        a += 1
    while b > a and _is_space(codes[b - 1], space):
        b -= 1
    m, i, start = 0, a, a
    while i < b:
        if codes[i] == 10 and i + 1 < b and codes[i + 1] == 10:
            starts[m], ends[m] = start, i
            m += 1
            while i < b and codes[i] == 10:
                i += 1
            start = i
        else:
            i += 1
    if paragraphs:
        starts[m], ends[m] = start, b
        m += 1
        out[0] = m
        out[1], out[2] = _repeats(codes, starts[:m], ends[:m])
    # str.splitlines: a line per boundary (\r\n one), none after a final boundary
    lines, bullets, ellipsis, i, start = 0, 0, 0, 0, 0
    while i <= n:
        at_end = i == n
        if at_end or (codes[i] < len(breaks) and breaks[codes[i]]):
            if at_end and start == n:
                break
            lines += 1
            # the line is codes[start:i]: its first character past white space, its last before it
            f = start
            while f < i and _is_space(codes[f], space):
                f += 1
            if f < i and (codes[f] == 0x2022 or codes[f] == 0x2D):  # "•" or "-"
                bullets += 1
            e = i
            while e > start and _is_space(codes[e - 1], space):
                e -= 1
            if e > start and (
                codes[e - 1] == 0x2026
                or (e - start >= 3 and codes[e - 1] == 46 and codes[e - 2] == 46 and codes[e - 3] == 46)
            ):
                ellipsis += 1
            if at_end:
                break
            if codes[i] == 13 and i + 1 < n and codes[i + 1] == 10:
                i += 1
            start = i + 1
        i += 1
    out[6], out[7], out[8] = lines, bullets, ellipsis
    # text.count("#"), text.count("...") + text.count("…") (non-overlapping runs of three dots)
    hashes, dots, i = 0, 0, 0
    while i < n:
        c = codes[i]
        if c == 35:
            hashes += 1
        elif c == 0x2026:
            dots += 1
        elif c == 46 and i + 2 < n and codes[i + 1] == 46 and codes[i + 2] == 46:
            dots += 1
            i += 3
            continue
        i += 1
    out[9], out[10] = hashes, dots
    return out


@kernel
def _fineweb_stats(codes, space, stop, short_length):  # pragma: no cover - compiled
    n = len(codes)
    starts = np.empty(n + 1, dtype=np.int64)
    ends = np.empty(n + 1, dtype=np.int64)
    m, punct, short, newlines, start = 0, 0, 0, 0, 0
    for i in range(n + 1):
        if i < n and codes[i] != 10:
            continue
        if i < n:
            newlines += 1
        blank = True
        for k in range(start, i):
            if not _is_space(codes[k], space):
                blank = False
                break
        if not blank:
            starts[m], ends[m] = start, i
            m += 1
            last = codes[i - 1]
            if last < len(stop) and stop[last]:
                punct += 1
            if i - start <= short_length:
                short += 1
        start = i + 1
    dup = 0
    if m:
        dup = _repeats(codes, starts[:m], ends[:m])[1]
    return m, punct, short, dup, newlines
