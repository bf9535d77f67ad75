# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The rules' verdicts (:func:`datapipe.extract.rules.decide`), compiled: the same rules, in the same order, over
the blocks' kinds, sizes and links read once into C arrays.

Why compiled: the learned extractor computes the rules' verdict on every block of every page (they are among the
block model's features), and ``decide``'s loops over a page's ~180 blocks and ~100 containers cost 0.41 ms of a
page's 2.6 ms in Python on Trafilatura's 990 evaluation pages, most of it reading attributes and making lists;
here the loops take a fraction of that (the patterns and the calls below stay Python's: they run on few blocks).

:func:`datapipe.extract.rules.decide` stays the reference and the place the rules are told: a change there must be
made here too, and a test holds the two to the same verdicts on the fixture pages (and on the dev pages, the
benchmark's check). Only the shapes the walk makes are handled here; any other record (a kind it never makes, a
container outside the blocks) goes to the reference.
"""

from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND
from libc.stdlib cimport calloc, free, malloc

cdef extern from "Python.h":
    # a code point as a number (Cython's own Py_UCS4 is a character, which arithmetic would make a str)
    ctypedef unsigned int ucs4 "Py_UCS4"
    ucs4 PyUnicode_READ(int kind, void *data, Py_ssize_t index) nogil
    ucs4 Py_UNICODE_TOLOWER(ucs4 ch) nogil
    bint Py_UNICODE_ISSPACE(ucs4 ch) nogil
    object PyUnicode_FromKindAndData(int kind, const void *buffer, Py_ssize_t size)

import re

from datapipe.extract.records cimport Block, Container

from datapipe.extract import rules as _rules
from datapipe.extract.blocks import WIDE_WEIGHT as _WIDE_WEIGHT
from datapipe.extract.blocks import choose_root

# the kinds of block, as codes; a heading's code is its level
cdef enum:
    K_P = 0
    K_LI = 7
    K_TR = 8
    K_PRE = 9

_KIND_CODES = {"p": K_P, "h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6, "li": K_LI, "tr": K_TR, "pre": K_PRE}

# why a block goes, as codes (0: kept); the rule's reason as decide writes it
cdef enum:
    KEPT = 0
    LABELLED = 1  # by a named container: "name:...", "teaser:...", "paywall:..." (the label kept apart)
    OUTSIDE = 2
    REPEATED = 3
    LINKS = 4
    NOTICE = 5
    APPEAL = 6
    CAPTION = 7
    CARD = 8
    SHORT_ = 9
    HEADING = 10
    TAIL = 11
    BOX = 12

_REASONS = (
    "", None, "outside-root", "repeated", "links", "notice", "appeal", "caption", "card", "short", "heading", "tail",
    "box",
)

cdef enum:
    GOOD = 0
    SHORT = 1
    BAD = 2

# the thresholds, as the reference has them
cdef double KEEP_SHARE = _rules.KEEP_SHARE
cdef double LINK_DENSITY = _rules.LINK_DENSITY
cdef long long PROSE_CHARS = _rules.PROSE_CHARS
cdef double PROSE_LINK_DENSITY = _rules.PROSE_LINK_DENSITY
cdef long long SHORT_CHARS = _rules.SHORT_CHARS
cdef long long REPEATED_N = _rules.REPEATED
cdef long long REPEATED_MIN_CHARS = _rules.REPEATED_MIN_CHARS
cdef long long REPEATED_CHARS = _rules.REPEATED_CHARS
cdef long long NOTICE_CHARS = _rules.NOTICE_CHARS
cdef Py_ssize_t HEADING_REACH = _rules.HEADING_REACH
cdef long long LONG_HEADING = _rules.LONG_HEADING
cdef int SHORT_NEEDS = _rules.SHORT_NEEDS
cdef long long TAIL_TITLE_CHARS = _rules.TAIL_TITLE_CHARS
cdef double TAIL_SHARE = _rules.TAIL_SHARE
cdef long long BOX_RESUME = _rules.BOX_RESUME
cdef long long BOX_PARAGRAPH = _rules.BOX_PARAGRAPH
cdef double FRAGMENT_SHARE = _rules.FRAGMENT_SHARE
cdef long long FRAGMENT_PARAGRAPH = _rules.FRAGMENT_PARAGRAPH
cdef Py_ssize_t CARD_RUN = _rules.CARD_RUN
cdef long long CARD_SUMMARY = _rules.CARD_SUMMARY
cdef long long CARD_HEADLINE = _rules.CARD_HEADLINE
cdef long long CAPTION_CHARS = _rules.CAPTION_CHARS
cdef long long APPEAL_CHARS = _rules.APPEAL_CHARS
cdef long long AD_LABEL_CHARS = _rules.AD_LABEL_CHARS
cdef long long LINK_LIST_ITEMS = _rules.LINK_LIST_ITEMS
cdef long long LINK_LIST_PROSE = _rules.LINK_LIST_PROSE
cdef long long PAID_PROSE = _rules.PAID_PROSE
cdef int TEASER_TIER = _rules.TEASER_TIER
cdef Py_ssize_t WIDE_WEIGHT = _WIDE_WEIGHT
cdef int PAID_TIER = _rules.PAID_TIER

_is_notice = _rules._is_notice
_holds_most = _rules._holds_most
_names_kind = _rules._names_kind
_APPEAL_KEYS = _rules._APPEAL_KEYS


def _top_level_bar(str pattern):
    """Whether ``pattern`` has a ``|`` outside every group and character class (an escaped one is a character)."""
    cdef Py_ssize_t i = 0, n = len(pattern), depth = 0
    cdef bint in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":  # a "]" first in a class is one of its characters
                i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            return True
        i += 1
    return False


def by_first_letter(phrases):
    """One pattern for ``"|".join(phrases)``, each phrase opening with a letter, that finds what it finds: the phrases
    grouped under their first letter (``s(?:upport ...|ign up ...)|j(?:oin ...)``), so that the engine tries at a
    character only the branch of its letter, where it tried every phrase in turn (a branch that opens with a
    group, as ``(?:support|join) ...``, is entered at every character)."""
    groups = {}
    for phrase in phrases:
        if not phrase[:1].isalpha() or phrase[1:2] in ("?", "*", "+", "{"):
            raise ValueError(f"a phrase must open with a letter of its own: {phrase!r}")
        if _top_level_bar(phrase):
            raise ValueError(f"a phrase must be one alternative (no | outside a group): {phrase!r}")
        groups.setdefault(phrase[0], []).append(phrase[1:])
    return "|".join(f"{first}(?:{'|'.join(rests)})" for first, rests in groups.items())


# rules._APPEAL, case-blind, as a case-sensitive pattern over the text folded (:func:`folded`): the same answer on
# every text (each of its characters matches, case-blind, exactly the characters that fold to it, and the
# pattern's ``\w``, ``\b`` and ``.`` read a character and its fold alike: tests/test_extract_compiled.py holds both
# over every code point), its phrases grouped by their first letter. The case-blind alternation tried each of
# its ~50 branches at every character: 42 us a candidate block (most pages of e2e's Debian pages have one, for
# "support", "download" or "follow"), against 4.6 us folded and grouped
_APPEAL_SEARCH = re.compile(r"(?:" + by_first_letter(_rules.APPEAL_PHRASES) + r")\b").search
_AD_LABEL_FULLMATCH = _rules._AD_LABEL.fullmatch
# rules._CAPTION_START and rules._CAPTION_END the same way, over the folded text (6.9 -> 4.1 us a candidate's search,
# ~2.5 candidates a page on e2e's pages: "Note:", "Source:", a path)
_CAPTION_START_MATCH = re.compile(_rules._CAPTION_START.pattern).match
_CAPTION_END_SEARCH = re.compile(_rules._CAPTION_END.pattern).search
FOLDED_PATTERNS = (_APPEAL_SEARCH.__self__, _CAPTION_START_MATCH.__self__, _CAPTION_END_SEARCH.__self__)
_TAIL_TITLE_FULLMATCH = _rules._TAIL_TITLE.fullmatch


# The cheap tests in C before the patterns (the patterns, and the Python tests around them, stay the reference's:
# each is called only where its test here finds a candidate, and each test here says yes wherever the reference's
# own first test would). On Trafilatura's evaluation pages the patterns and the lowercasing, splitting and set
# lookups before them were most of decide's time (0.32 ms a page): ~25 blocks a page are short enough for the
# notice test, ~10 for the appeal and caption tests, and few of them hold a mark.
cdef Py_ssize_t NEEDLE_CAP = 32


cdef struct Needle:  # a lowercase word to find in a text, as code points
    ucs4 cp[32]
    Py_ssize_t length


cdef inline ucs4 fold(ucs4 c) noexcept:
    """A character as :class:`Needles` compares it: its simple lowercase (``Py_UNICODE_TOLOWER``; ASCII without a
    call), with the dotless ``ı`` as ``i`` and the long ``ſ`` as ``s``, which a case-blind pattern matches so."""
    if c < 128:
        return c + 32 if 65 <= c <= 90 else c
    c = Py_UNICODE_TOLOWER(c)
    if c == 0x131:
        return 0x69
    return 0x73 if c == 0x17F else c


cpdef str folded(str text):
    """``text`` with each character folded (:func:`fold`): the same length, so that a case-sensitive pattern of
    folded characters finds in it what the same pattern finds case-blind (``re.IGNORECASE``) in ``text``: the
    regular expression engine compares a character's simple lowercase, with ``ı``/``i`` and ``ſ``/``s`` alike."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), i
    cdef int kind = PyUnicode_KIND(text)
    cdef const void *data = PyUnicode_DATA(text)
    cdef ucs4 *out
    if n == 0:
        return text
    out = <ucs4 *> malloc(n * sizeof(ucs4))
    if out == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            out[i] = fold(PyUnicode_READ(kind, data, i))
        return PyUnicode_FromKindAndData(4, out, n)
    finally:
        free(out)


# where in a text a Needles' word may begin
cdef enum:
    ANYWHERE = 0
    TOKEN = 1  # a whitespace-separated token's start, or after one "¡" or "(" that starts it (rules._APPEAL_KEYS)
    BOUNDARY = 2  # the text's start, or after whitespace or one of ".,;|(/" (rules._CAPTION_END's boundary)


cdef inline bint begins(int where, int kind, const void *data, Py_ssize_t i) noexcept:
    """Whether a word may begin at character ``i`` (see the enum above; whitespace is ``str.isspace``'s, as
    ``str.split`` and a pattern's ``\\s`` read it)."""
    cdef ucs4 c
    if where == ANYWHERE or i == 0:
        return True
    c = PyUnicode_READ(kind, data, i - 1)
    if Py_UNICODE_ISSPACE(c):
        return True
    if where == TOKEN:
        return (c == 0xA1 or c == 0x28) and (i == 1 or Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i - 2)))
    return c == 0x2E or c == 0x2C or c == 0x3B or c == 0x7C or c == 0x28 or c == 0x2F


cdef class Needles:
    """Words to find in a text, case-blind: each character of the text folded (:func:`fold`: its simple
    lowercase, ``ı`` as ``i``, ``ſ`` as ``s``) before it is compared. Where a word is in ``text.lower()`` (whose
    full lowercase differs from the simple one only where a character's is longer, ``İ`` -> ``i̇``, and in the
    Greek final sigma, neither in any word here), or where a case-blind pattern finds it, it is found here: the
    test before a reference that would otherwise say no (the converse need not hold: the reference then judges).
    A text's character is folded only where it may begin a word (:attr:`firsts`): most characters are let by
    unread."""

    cdef Needle *needles  # sorted by their first character
    cdef Py_ssize_t n
    # the needles that begin with an ASCII character c: start[c] to stop[c]; those that begin with another: wide
    # to n
    cdef Py_ssize_t start[128]
    cdef Py_ssize_t stop[128]
    cdef Py_ssize_t wide
    cdef unsigned char ascii_first[128]  # an ASCII character that folds to a needle's first
    cdef ucs4 *wide_first  # every other that does (of the Basic Multilingual Plane: no other folds to these)
    cdef Py_ssize_t nwide
    cdef int where  # where a word may begin: ANYWHERE, TOKEN or BOUNDARY

    def __cinit__(self, words, int where=ANYWHERE):
        cdef Py_ssize_t i, k
        cdef ucs4 c, f
        cdef list firsts = []
        words = sorted({w.lower() for w in words})
        self.where = where
        self.n = len(words)
        self.needles = <Needle *> calloc(max(self.n, 1), sizeof(Needle))
        if self.needles == NULL:
            raise MemoryError()
        for k in range(128):
            self.start[k] = self.stop[k] = 0
            self.ascii_first[k] = 0
        self.wide = self.n
        for i, w in enumerate(words):
            if not 0 < len(w) <= NEEDLE_CAP or any(ord(ch) >= 0x10000 or fold(ord(ch)) != ord(ch) for ch in w):
                raise ValueError(f"a word to find must be 1-{NEEDLE_CAP} folded characters of the BMP: {w!r}")
            for k in range(len(w)):
                self.needles[i].cp[k] = ord(w[k])
            self.needles[i].length = len(w)
            if ord(w[0]) < 128:
                if self.stop[ord(w[0])] == 0:
                    self.start[ord(w[0])] = i
                self.stop[ord(w[0])] = i + 1
            elif self.wide == self.n:
                self.wide = i
        wanted = {ord(w[0]) for w in words}
        for c in range(0x10000):  # every character that folds to a first character (upper case, title case, ...)
            f = fold(c)
            if f in wanted:
                if c < 128:
                    self.ascii_first[c] = 1
                else:
                    firsts.append(c)
        self.nwide = len(firsts)
        self.wide_first = <ucs4 *> calloc(max(self.nwide, 1), sizeof(ucs4))
        if self.wide_first == NULL:
            raise MemoryError()
        for i, c in enumerate(firsts):
            self.wide_first[i] = c

    def __dealloc__(self):
        free(self.needles)
        free(self.wide_first)

    cdef bint found(self, str text) noexcept:
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), i, j, k, m, lo, hi
        cdef int kind = PyUnicode_KIND(text)
        cdef void *data = PyUnicode_DATA(text)
        cdef ucs4 c
        cdef Needle *nd
        cdef bint first
        for i in range(n):
            c = PyUnicode_READ(kind, data, i)
            if c < 128:
                if not self.ascii_first[c]:
                    continue
            else:
                first = False
                for j in range(self.nwide):
                    if self.wide_first[j] == c:
                        first = True
                        break
                if not first:
                    continue
            if not begins(self.where, kind, data, i):
                continue
            c = fold(c)
            if c < 128:
                lo, hi = self.start[c], self.stop[c]
            else:
                lo, hi = self.wide, self.n
            for j in range(lo, hi):
                nd = &self.needles[j]
                m = nd.length
                if nd.cp[0] != c or i + m > n:
                    continue
                k = 1
                while k < m and fold(PyUnicode_READ(kind, data, i + k)) == nd.cp[k]:
                    k += 1
                if k == m:
                    return True
        return False

    def __contains__(self, str text):
        """Whether a word is in ``text`` (for tests)."""
        return self.found(text)


# one of them is in every notice (rules._is_notice's marks, found in the lowercased text); one of the appeal words
# is in every word that makes a block a candidate appeal (rules._APPEAL_KEYS: a word, capitalized or in capitals,
# with punctuation around it)
NOTICE_MARKS = Needles(_rules._NOTICE_MARKS)
APPEAL_WORDS = Needles(_rules.APPEAL_WORDS, TOKEN)
# and a caption's pattern (rules._CAPTION_START at the start, rules._CAPTION_END after its boundary) holds a caption
# word there, or a "/" anywhere (each label _CAPTION_START opens with is one of the words)
CAPTION_WORDS = Needles(_rules.CAPTION_WORDS.split("|"), BOUNDARY)
cdef Needles _notice_marks = NOTICE_MARKS
cdef Needles _appeal_words = APPEAL_WORDS
cdef Needles _caption_words = CAPTION_WORDS


cdef bint is_caption(str text):
    """:func:`datapipe.extract.rules._is_caption` (the reference), its case-blind patterns read case-sensitive
    over the folded text."""
    cdef str f = folded(text)
    if ":" in text:
        return _CAPTION_START_MATCH(f) is not None or _CAPTION_END_SEARCH(f) is not None
    return ("/" in text or "©" in text) and _CAPTION_END_SEARCH(f) is not None


cdef bint caption_signs(str text) noexcept:
    """``rules._is_caption``'s first test: a ``:``, a ``/`` or a ``©`` in the text (without one it is no caption)."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), i
    cdef int kind = PyUnicode_KIND(text)
    cdef void *data = PyUnicode_DATA(text)
    cdef ucs4 c
    for i in range(n):
        c = PyUnicode_READ(kind, data, i)
        if c == 0x3A or c == 0x2F or c == 0xA9:
            return True
    return False


cdef Py_ssize_t wide_size(str text) noexcept:
    """:func:`datapipe.extract.blocks.size_of`: the length, a Han, kana or Hangul character counted
    :data:`~datapipe.extract.blocks.WIDE_WEIGHT` times (the ranges of ``blocks._WIDE``)."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), i, wide = 0
    cdef int kind = PyUnicode_KIND(text)
    cdef void *data = PyUnicode_DATA(text)
    cdef ucs4 c
    if kind == 1:
        return n
    for i in range(n):
        c = PyUnicode_READ(kind, data, i)
        if (
            0x1100 <= c <= 0x11FF or 0x2E80 <= c <= 0x2FDF or 0x3040 <= c <= 0x30FF or 0x3100 <= c <= 0x31FF
            or 0x3400 <= c <= 0x4DBF or 0x4E00 <= c <= 0x9FFF or 0xAC00 <= c <= 0xD7AF or 0xF900 <= c <= 0xFAFF
        ):
            wide += 1
    return n + (WIDE_WEIGHT - 1) * wide


def text_size(str text):
    """:func:`wide_size` (for tests: it must be ``blocks.size_of``)."""
    return wide_size(text)


def caption_candidate(str text):
    """:func:`caption_signs` (for tests)."""
    return caption_signs(text)


def caption(str text):
    """:func:`is_caption` (for tests: it must be ``rules._is_caption``)."""
    return is_caption(text)


cdef inline bint heading(int kind) noexcept:
    return 1 <= kind <= 6


cdef struct Page:  # a page's blocks as decide reads them (arrays of n, the prefix sums of n + 1)
    Py_ssize_t n
    int *kind
    long long *chars
    long long *links
    int *why
    long long *upto  # characters in the blocks before block i
    long long *linked  # of them, those in links
    long long *prose  # of them, those in paragraphs


cdef bint holds_most(object c, long long chars, long long mine, long long outer_chars, long long outer_prose) except -1:
    """``rules._holds_most``, its first test here (most containers fail it)."""
    if chars < KEEP_SHARE * outer_chars:
        return False
    return _holds_most(c, mine, outer_chars, outer_prose)


cdef Py_ssize_t prose_after(Page *p, Py_ssize_t i) noexcept:
    """``rules._prose_after``."""
    cdef Py_ssize_t n = p.n, j, k, box, listed
    cdef long long more
    for j in range(i + 1, n):
        if (
            not p.why[j]
            and p.kind[j] == K_P
            and p.chars[j] >= BOX_PARAGRAPH
            and p.links[j] <= LINK_DENSITY * p.chars[j]
        ):
            box = j - (i + 1)
            listed = 0
            for k in range(i + 1, j):
                if p.why[k] == LINKS or p.kind[k] == K_LI:
                    listed += 1
            if box == 0 or 2 * listed < box:
                return n
            more = 0
            for k in range(j, n):
                if not p.why[k] and p.kind[k] == K_P and p.chars[k] >= BOX_PARAGRAPH:
                    more += p.chars[k]
            return j if more >= BOX_RESUME else n
    return n


cdef int card_summaries(Page *p, char *card) except -1:
    """``rules._card_summaries``: marks the summaries in ``card``."""
    cdef Py_ssize_t n = p.n, i, j, k, runs = 0
    cdef Py_ssize_t *run = <Py_ssize_t *> calloc(n + 1, sizeof(Py_ssize_t))
    if run == NULL:
        raise MemoryError()
    try:
        i = n - 1
        while i >= 0 and (p.why[i] or p.kind[i] != K_P or p.chars[i] < PROSE_CHARS):
            i -= 1
        i += 1
        while i < n:
            if p.why[i] == LINKS and p.chars[i] <= CARD_HEADLINE and (heading(p.kind[i]) or p.kind[i] == K_P):
                j = i + 1
                if j < n and not p.why[j] and p.kind[j] == K_P and p.chars[j] < CARD_SUMMARY:
                    run[runs] = j
                    runs += 1
                    i = j + 1
                    continue
            elif p.why[i] and runs:  # dropped blocks between cards break no run
                i += 1
                continue
            if runs >= CARD_RUN:
                for k in range(runs):
                    card[run[k]] = 1
            runs = 0
            i += 1
        if runs >= CARD_RUN:
            for k in range(runs):
                card[run[k]] = 1
    finally:
        free(run)
    return 0


def decide(list blocks, list containers):
    """:func:`datapipe.extract.rules.decide`, compiled: why each block goes ("" for a block kept), and the same
    changes to the containers (their characters and links; an ``<article>`` named for its author a root)."""
    cdef Page p
    cdef Py_ssize_t n = len(blocks), i, j, k, s, e, first, title, nroots, ncores, resume
    cdef long long total = 0, mine, left, kept, c_chars, kept_total
    cdef double tail
    cdef int level, nxt, last
    cdef bint broke, found
    cdef char *inside = NULL
    cdef char *listed = NULL
    cdef char *card = NULL
    cdef int *state = NULL
    cdef int *before = NULL
    cdef Py_ssize_t *roots_se = NULL
    cdef Py_ssize_t *cores_se = NULL
    cdef object kind, label, item
    cdef Block b
    cdef Container c, r
    cdef list texts = [None] * n, labels = [None] * n, why
    cdef dict codes = _KIND_CODES, seen
    for item in containers:  # only the walk's shapes: anything else is the reference's
        if type(item) is not Container:
            return _rules.decide(blocks, containers)
        c = <Container> item
        s, e = c.start, c.end
        if s < 0 or e < 0 or s > n or e > n:
            return _rules.decide(blocks, containers)
    p.n = n
    p.kind = <int *> calloc(n + 1, sizeof(int))
    p.chars = <long long *> calloc(n + 1, sizeof(long long))
    p.links = <long long *> calloc(n + 1, sizeof(long long))
    p.why = <int *> calloc(n + 1, sizeof(int))
    p.upto = <long long *> calloc(n + 1, sizeof(long long))
    p.linked = <long long *> calloc(n + 1, sizeof(long long))
    p.prose = <long long *> calloc(n + 1, sizeof(long long))
    inside = <char *> calloc(n + 1, 1)
    listed = <char *> calloc(n + 1, 1)
    card = <char *> calloc(n + 1, 1)
    state = <int *> calloc(n + 1, sizeof(int))
    before = <int *> calloc(n + 1, sizeof(int))
    try:
        if (
            p.kind == NULL or p.chars == NULL or p.links == NULL or p.why == NULL or p.upto == NULL
            or p.linked == NULL or p.prose == NULL or inside == NULL or listed == NULL or card == NULL
            or state == NULL or before == NULL
        ):
            raise MemoryError()
        for i in range(n):
            item = blocks[i]
            if type(item) is not Block:
                return _rules.decide(blocks, containers)
            b = <Block> item
            kind = codes.get(b.kind)
            if kind is None:
                return _rules.decide(blocks, containers)
            p.kind[i] = kind
            p.chars[i] = b.chars
            p.links[i] = b.link_chars
            texts[i] = b.text
            total += p.chars[i]
            p.upto[i + 1] = p.upto[i] + p.chars[i]
            p.linked[i + 1] = p.linked[i] + p.links[i]
            p.prose[i + 1] = p.prose[i] + (p.chars[i] if p.kind[i] == K_P else 0)
        for c in containers:
            if not c.skipped:
                s, e = c.start, c.end
                c.chars = p.upto[e] - p.upto[s]
                c.link_chars = p.linked[e] - p.linked[s]
                if c.kind == "boiler" and c.tag == "article" and not _names_kind(c.attrs):
                    c.kind, c.tier = "root", 2  # named for its author or a state of it: an article
        roots, cores = choose_root(containers, total)
        nroots, ncores = len(roots), len(cores)
        roots_se = <Py_ssize_t *> calloc(2 * nroots + 2, sizeof(Py_ssize_t))
        cores_se = <Py_ssize_t *> calloc(2 * ncores + 2, sizeof(Py_ssize_t))
        if roots_se == NULL or cores_se == NULL:
            raise MemoryError()
        for k in range(nroots):
            roots_se[2 * k], roots_se[2 * k + 1] = roots[k].start, roots[k].end
        for k in range(ncores):
            cores_se[2 * k], cores_se[2 * k + 1] = cores[k].start, cores[k].end
        # 2. boilerplate by name, and teasers that link away
        for c in containers:
            s, e = c.start, c.end
            if s >= e:
                continue
            found = False
            for i in range(s, e):
                if not p.why[i]:
                    found = True
                    break
            if not found:
                continue  # inside a part already dropped
            mine = p.prose[e] - p.prose[s]
            if c.kind == "boiler":
                label = "name:"
            elif c.tier == TEASER_TIER:
                found = False
                for i in range(s, e):  # rules.links_away
                    if heading(p.kind[i]) and p.links[i] > p.chars[i] // 2:
                        found = True
                        break
                if not found:
                    continue
                label = "teaser:"
            elif c.tier == PAID_TIER and c.tag != "p" and not (
                mine >= PAID_PROSE and c.link_chars <= LINK_DENSITY * c.chars
            ):
                label = "paywall:"
            else:
                continue
            c_chars = c.chars
            if holds_most(c, c_chars, mine, total, p.prose[n]):
                continue
            found = False
            for k in range(nroots):
                r = roots[k]
                if roots_se[2 * k] >= s and roots_se[2 * k + 1] <= e:
                    found = True
                elif (
                    s >= roots_se[2 * k]
                    and e <= roots_se[2 * k + 1]
                    and holds_most(
                        c, c_chars, mine, r.chars, p.prose[roots_se[2 * k + 1]] - p.prose[roots_se[2 * k]]
                    )
                ):
                    found = True
                if found:
                    break
            if not found:
                for k in range(ncores):
                    if cores_se[2 * k] >= s and cores_se[2 * k + 1] <= e:
                        found = True
                        break
            if found:
                continue  # a wrapper named for a state around the article
            label = label + c.name
            for i in range(s, e):
                if not p.why[i]:
                    p.why[i] = LABELLED
                    labels[i] = label
        # 3. the content roots, and the title and lead
        if nroots:
            for k in range(nroots):
                for i in range(roots_se[2 * k], roots_se[2 * k + 1]):
                    inside[i] = 1
            mine = left = 0
            for i in range(n):
                if not p.why[i] and p.kind[i] == K_P:
                    if inside[i]:
                        mine += p.chars[i]
                    if p.chars[i] >= FRAGMENT_PARAGRAPH:
                        left += p.chars[i]
            if mine < FRAGMENT_SHARE * left:
                nroots = 0
        if nroots:
            first = roots_se[0]
            for k in range(nroots):
                if roots_se[2 * k] < first:
                    first = roots_se[2 * k]
            title = first
            for i in range(first):
                if p.kind[i] == 1:
                    title = i
            for i in range(title, first):
                inside[i] = 1
            for i in range(n):
                if not inside[i] and not p.why[i]:
                    p.why[i] = OUTSIDE
        # 4. link-heavy blocks, notices, repeated lines; a body that is a list of links keeps its items
        for k in range(ncores):  # rules._link_list_bodies
            r = cores[k]
            s, e = cores_se[2 * k], cores_se[2 * k + 1]
            if r.tier != 1 or r.link_chars * 2 <= r.chars:
                continue
            mine = left = 0  # list items kept, plain text kept
            for i in range(s, e):
                if not p.why[i]:
                    if p.kind[i] == K_LI:
                        mine += 1
                    if p.links[i] <= LINK_DENSITY * p.chars[i]:
                        left += p.chars[i]
            if mine >= LINK_LIST_ITEMS and left < LINK_LIST_PROSE:
                for i in range(s, e):
                    listed[i] = 1
        seen = {}
        for i in range(n):
            if REPEATED_MIN_CHARS <= p.chars[i] < REPEATED_CHARS and (p.kind[i] == K_P or heading(p.kind[i])):
                seen[texts[i]] = seen.get(texts[i], 0) + 1
        for i in range(n):
            if p.why[i]:
                continue
            if (
                REPEATED_MIN_CHARS <= p.chars[i] < REPEATED_CHARS
                and (p.kind[i] == K_P or heading(p.kind[i]))
                and seen[texts[i]] >= REPEATED_N
            ):
                p.why[i] = REPEATED
                continue
            if p.links[i] > (
                PROSE_LINK_DENSITY if p.kind[i] == K_P and p.chars[i] >= PROSE_CHARS else LINK_DENSITY
            ) * p.chars[i]:
                if not (listed[i] and p.kind[i] == K_LI):
                    p.why[i] = LINKS
                continue
            if p.chars[i] < NOTICE_CHARS and _notice_marks.found(texts[i]) and _is_notice(texts[i]):
                p.why[i] = NOTICE
            elif p.chars[i] <= APPEAL_CHARS and (p.kind[i] == K_P or heading(p.kind[i])):
                text = texts[i]
                if (
                    _appeal_words.found(text)
                    and not _APPEAL_KEYS.isdisjoint(text.split())
                    and _APPEAL_SEARCH(folded(text))
                ):
                    p.why[i] = APPEAL
                elif (
                    p.kind[i] == K_P
                    and p.chars[i] <= CAPTION_CHARS
                    and caption_signs(text)
                    and (_caption_words.found(text) or "/" in text)
                    and is_caption(text)
                ):
                    p.why[i] = CAPTION
                elif p.chars[i] <= AD_LABEL_CHARS and _AD_LABEL_FULLMATCH(text):
                    p.why[i] = APPEAL
        # 4b. teaser cards after the article
        card_summaries(&p, card)
        for i in range(n):
            if card[i]:
                p.why[i] = CARD
        # 5. a short block stays only between kept long ones
        found = False
        for i in range(n):
            if p.why[i]:
                state[i] = BAD
            elif not heading(p.kind[i]) and (p.chars[i] >= SHORT_CHARS or wide_size(texts[i]) >= SHORT_CHARS):
                state[i] = GOOD
                found = True
            else:
                state[i] = SHORT
        if not found:  # a page of short blocks only: they are its text
            for i in range(n):
                state[i] = BAD if p.why[i] else GOOD
        last = BAD
        for i in range(n):
            before[i] = last
            if state[i] != SHORT:
                last = state[i]
        last = BAD
        for i in range(n - 1, -1, -1):
            if (
                state[i] == SHORT
                and not heading(p.kind[i])
                and p.kind[i] != K_LI
                and p.kind[i] != K_TR
                and p.kind[i] != K_PRE
                and (before[i] == GOOD) + (last == GOOD) < SHORT_NEEDS
            ):
                p.why[i] = SHORT_
            if state[i] != SHORT:
                last = state[i]
        # a heading stays only when kept text follows it within a few blocks, before the next of its level
        for i in range(n - 1, -1, -1):
            if p.why[i] or not heading(p.kind[i]) or p.chars[i] >= LONG_HEADING:
                continue
            level = p.kind[i]
            broke = False
            j = i + 1
            while j < min(n, i + 1 + HEADING_REACH):
                nxt = p.kind[j]
                if heading(nxt) and nxt <= level:
                    broke = True
                    break
                if not p.why[j]:
                    broke = True
                    break
                j += 1
            if not broke:
                j = n
            if j >= n or p.why[j] or (heading(p.kind[j]) and p.kind[j] <= level):
                p.why[i] = HEADING
        # 6. the end of the article
        kept = kept_total = 0
        for i in range(n):
            if not p.why[i]:
                kept_total += p.chars[i]
        tail = TAIL_SHARE * kept_total
        i = 0
        while i < n:
            if not p.why[i] and p.chars[i] <= TAIL_TITLE_CHARS and _TAIL_TITLE_FULLMATCH(texts[i]):
                resume = prose_after(&p, i)
                if resume < n:
                    for j in range(i, resume):
                        if not p.why[j]:
                            p.why[j] = BOX
                    i = resume
                    continue
                if kept >= tail:
                    for j in range(i, n):
                        if not p.why[j]:
                            p.why[j] = TAIL
                    break
            if not p.why[i]:
                kept += p.chars[i]
            i += 1
        why = [None] * n
        for i in range(n):
            why[i] = labels[i] if p.why[i] == LABELLED else _REASONS[p.why[i]]
        return why
    finally:
        free(p.kind)
        free(p.chars)
        free(p.links)
        free(p.why)
        free(p.upto)
        free(p.linked)
        free(p.prose)
        free(inside)
        free(listed)
        free(card)
        free(state)
        free(before)
        free(roots_se)
        free(cores_se)
