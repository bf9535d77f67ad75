# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The tree walk of datapipe's main-content extractor, compiled: lexbor's nodes read as C structs.

Why compiled: walking the tree through selectolax's Python objects cost 1.10 ms of a page's 1.91 ms on
Trafilatura's 990 evaluation pages (a Python object, a property read and a dictionary lookup per node, ~1,750
nodes a page); reading lexbor's structs directly walks the same nodes in a fraction of that (figures in
:mod:`datapipe.extract.content`). A block's text is gathered here too, whitespace collapsed as it is copied
(:func:`gather_text`): making each text node a ``str``, then joining, splitting and joining them in Python
(``blocks.make_block``), and counting a subtree's text (the page's, each boilerplate part's) by making it, not by
counting its UTF-8 (:func:`count_text`), cost together 0.11-0.14 ms of a page: 0.98-1.07 ms before, 0.86-0.93 ms
after, on the same 990 pages (each page's best of three, alternating runs).
Every rule about a block stays in Python: this module moves text, and judges a class and id by the words of
:mod:`datapipe.extract.names` (:class:`Vocabulary`: the verdict ``names.classify_name`` gives and the groups
``signals.mask_of`` gives, made here from the attribute's UTF-8; a test holds the two to the Python classifiers).
Judging them in Python was 1.1 ms of the learned walk's 1.6 ms a page on those pages (~275 named elements a page,
half of their values new to the caches); here the learned walk takes ~0.5 ms. It calls back into Python for a
named container, for a block, and for a preformatted block's text (``make_block``, which also says what the
gathering here must make of the rest: a test holds the two to it).

Built by ``python -m datapipe.extract.build`` (``make venv`` runs it) against the headers of the exact selectolax
release installed: the node, element, attribute and text structs are read by their C layout, which only that
release's lexbor defines. :data:`BUILT_FOR` names it; :mod:`datapipe.extract.content` refuses a mismatch.
"""

from cpython.ref cimport PyObject, Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DecodeUTF8

cdef extern from "Python.h":
    int PyUnicode_KIND(object)
    const void *PyUnicode_DATA(object)
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    bint PyUnicode_IS_ASCII(object)
from libc.stdint cimport uint64_t, uintptr_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcmp, memcpy

from datapipe.extract.records cimport Block, Container, set_block, set_container


cdef extern from *:
    const char *DATAPIPE_SELECTOLAX "DATAPIPE_SELECTOLAX"

cdef extern from "lexbor/core/str.h":
    ctypedef struct lexbor_str_t:
        unsigned char *data
        size_t length

cdef extern from "lexbor/core/hash.h":
    ctypedef struct lexbor_hash_entry_t:
        size_t length
    const unsigned char *lexbor_hash_entry_str(const lexbor_hash_entry_t *entry)

cdef extern from "lexbor/dom/interfaces/node.h":
    ctypedef struct lxb_dom_node_t:
        uintptr_t local_name
        uintptr_t ns
        lxb_dom_node_t *next
        lxb_dom_node_t *parent
        lxb_dom_node_t *first_child
        int type
    int LXB_DOM_NODE_TYPE_ELEMENT
    int LXB_DOM_NODE_TYPE_TEXT
    int LXB_DOM_NODE_TYPE_DOCUMENT_FRAGMENT

cdef extern from "lexbor/dom/interfaces/character_data.h":
    ctypedef struct lxb_dom_character_data_t:
        lexbor_str_t data

cdef extern from "lexbor/dom/interfaces/attr.h":
    ctypedef struct lxb_dom_attr_data_t:
        lexbor_hash_entry_t entry
    ctypedef struct lxb_dom_attr_t:
        lxb_dom_node_t node
        lexbor_str_t *value
        lxb_dom_attr_t *next
    uintptr_t LXB_DOM_ATTR_CLASS
    uintptr_t LXB_DOM_ATTR_ID
    uintptr_t LXB_DOM_ATTR_STYLE
    uintptr_t LXB_DOM_ATTR_TYPE
    uintptr_t LXB_DOM_ATTR_CONTENT
    uintptr_t LXB_DOM_ATTR__LAST_ENTRY

cdef extern from "lexbor/dom/interfaces/element.h":
    ctypedef struct lxb_dom_element_t:
        lxb_dom_attr_t *first_attr

cdef extern from "lexbor/dom/interfaces/document_fragment.h":
    ctypedef struct lxb_dom_document_fragment_t:
        lxb_dom_node_t node
        lxb_dom_element_t *host

cdef extern from "lexbor/html/interfaces/template_element.h":
    ctypedef struct lxb_html_template_element_t:
        lxb_dom_document_fragment_t *content

cdef extern from "lexbor/ns/const.h":
    uintptr_t LXB_NS_HTML

cdef extern from "lexbor/tag/const.h":
    uintptr_t LXB_TAG__LAST_ENTRY
    uintptr_t LXB_TAG_TEMPLATE
    uintptr_t LXB_TAG_SCRIPT
    uintptr_t LXB_TAG_META
    uintptr_t LXB_TAG_TITLE

BUILT_FOR = DATAPIPE_SELECTOLAX.decode()
TAGS = LXB_TAG__LAST_ENTRY

# what a tag is to the walk (the table's values)
cdef enum:
    INLINE = 1
    STRUCTURAL = 2
    LINK = 3
    BREAK = 4
    SKIP = 5
# how an attribute hides its element (Walk.hides)
cdef enum:
    HIDDEN = 1  # from everyone: never read
    UNSEEN = 2  # from assistive technology only (aria-hidden): read when it is the page behind a dialog


# flags of a structural tag
cdef enum:
    F_BLOCK = 1  # starts and ends a block
    F_BOILER = 2  # boilerplate by its tag (nav, aside, footer, ...)
    F_CELL = 4  # a table cell: " | " between cells
    F_ARTICLE = 8  # a content-root candidate of the second tier
    F_MAIN = 16  # ... of the third
    F_WRAPPER = 32  # never text, unless it wraps most of the page (a <form> around an ASP.NET page)
    F_FORM = 64  # a wrapper read from its own share (form_share): a <form>


# how many of a block's innermost structural elements it records (Block.path)
DEF PATH = 4


cdef struct Open:  # an element the walk is inside of: its children are being read
    lxb_dom_node_t *node
    unsigned char mode  # INLINE, LINK or STRUCTURAL
    # a structural element's, what closing it needs (see Walk.open_element): the block kind outside it (a str the
    # walk holds, borrowed: "p" or one of its rules' kinds), its container's place in the containers (-1: none),
    # its flags, whether it sets a kind of its own, and the groups outside it
    PyObject *outer
    Py_ssize_t opened
    unsigned char flags
    bint own_kind
    uint64_t mask_lo, mask_hi


cdef struct Buf:
    char *data
    size_t size
    size_t cap


cdef int buf_add(Buf *b, const unsigned char *data, size_t n) except -1:
    cdef size_t cap
    cdef char *grown
    if b.size + n > b.cap:
        cap = max(2 * b.cap, b.size + n, <size_t> 4096)
        grown = <char *> realloc(b.data, cap)
        if grown == NULL:
            raise MemoryError()
        b.data = grown
        b.cap = cap
    memcpy(b.data + b.size, data, n)
    b.size += n
    return 0


cdef inline lxb_dom_node_t *shadow_root(lxb_dom_node_t *node) noexcept:
    """The content of a declarative shadow root (``<template shadowrootmode=open>``, or the older ``shadowroot``),
    NULL for any other node. A browser renders it in place of its host's children (those in its ``<slot>``s), and a
    page saved from a browser (SingleFile, ``getHTML({serializableShadowRoots})``) keeps a web component's text
    there; lexbor, as the HTML standard's parser does for a plain template, puts it in the template's content, out
    of the tree, so that selectolax's ``text()`` and resiliparse never see it. An inert template (no such
    attribute) is never rendered: NULL."""
    cdef lxb_dom_attr_t *attr
    cdef lxb_dom_document_fragment_t *content
    if node.local_name != LXB_TAG_TEMPLATE or node.type != LXB_DOM_NODE_TYPE_ELEMENT or node.ns != LXB_NS_HTML:
        return NULL
    attr = (<lxb_dom_element_t *> node).first_attr
    while attr != NULL:
        if attr_is(attr, "shadowrootmode", 14) or attr_is(attr, "shadowroot", 10):
            content = (<lxb_html_template_element_t *> node).content
            return <lxb_dom_node_t *> content if content != NULL and content.host != NULL else NULL
        attr = attr.next
    return NULL


cdef inline lxb_dom_node_t *first_inside(lxb_dom_node_t *node) noexcept:
    """The first child of ``node`` as rendered: a declarative shadow root's content is its template's."""
    cdef lxb_dom_node_t *content
    if node.local_name == LXB_TAG_TEMPLATE:
        content = shadow_root(node)
        return content.first_child if content != NULL else NULL
    return node.first_child


cdef inline lxb_dom_node_t *following(lxb_dom_node_t *node, lxb_dom_node_t *top) noexcept:
    """The node after ``node`` in document order within ``top``'s subtree, its children skipped (NULL at the end);
    a shadow root's last node is followed by what follows its template (the content's host). Iterative, as
    lexbor's own walks: a page nested 100,000 deep must not overflow the C stack."""
    while node != top and node.next == NULL:
        if node.parent != NULL:
            node = node.parent
        elif node.type == LXB_DOM_NODE_TYPE_DOCUMENT_FRAGMENT:
            node = <lxb_dom_node_t *> (<lxb_dom_document_fragment_t *> node).host
        else:
            return NULL
    return NULL if node == top else node.next


cdef inline size_t space_at(const unsigned char *s, size_t n) noexcept:
    """The length in bytes of the whitespace character ``s`` starts with (``n`` bytes left), 0 when it starts
    another: Python's whitespace (``str.isspace``, ``str.split``, ``str.strip``), in UTF-8."""
    cdef unsigned char c = s[0]
    if c < 0x80:
        return 1 if c == 32 or 9 <= c <= 13 or 0x1C <= c <= 0x1F else 0
    if c == 0xC2:  # U+0085, U+00A0
        return 2 if n >= 2 and (s[1] == 0x85 or s[1] == 0xA0) else 0
    if n < 3:
        return 0
    if c == 0xE1:  # U+1680
        return 3 if s[1] == 0x9A and s[2] == 0x80 else 0
    if c == 0xE2:  # U+2000-U+200A, U+2028, U+2029, U+202F; U+205F
        if s[1] == 0x80:
            return 3 if s[2] <= 0x8A or s[2] == 0xA8 or s[2] == 0xA9 or s[2] == 0xAF else 0
        return 3 if s[1] == 0x81 and s[2] == 0x9F else 0
    if c == 0xE3:  # U+3000
        return 3 if s[1] == 0x80 and s[2] == 0x80 else 0
    return 0


cdef inline size_t space_before(const unsigned char *s, size_t n) noexcept:
    """The length in bytes of the whitespace character that ends the ``n`` bytes at ``s``, 0 when another does (a
    lead byte is never a continuation byte, so the one found is the character's own)."""
    if n == 0:
        return 0
    if space_at(s + n - 1, 1) == 1:
        return 1
    if n >= 2 and s[n - 2] == 0xC2 and space_at(s + n - 2, 2) == 2:
        return 2
    if n >= 3 and space_at(s + n - 3, 3) == 3:
        return 3
    return 0


cdef inline Py_ssize_t utf8_chars(const unsigned char *s, size_t n) noexcept:
    """Characters in ``n`` bytes of UTF-8 (lexbor's text is valid UTF-8: the parser replaces what is not)."""
    cdef size_t i = 0
    cdef Py_ssize_t count = 0
    cdef uint64_t x
    while i + 8 <= n:  # eight bytes at a time: all but the continuation bytes (10xxxxxx) start a character
        memcpy(&x, s + i, 8)
        # one bit per continuation byte, at the byte's lowest; the multiplication sums the eight bytes into the top
        # one (a portable popcount: without -mpopcnt, __builtin_popcountll is a call into libgcc)
        x = (x >> 7) & ~(x >> 6) & <uint64_t> 0x0101010101010101
        count += 8 - <Py_ssize_t> ((x * <uint64_t> 0x0101010101010101) >> 56)
        i += 8
    while i < n:
        count += (s[i] & 0xC0) != 0x80
        i += 1
    return count


cdef Py_ssize_t count_text(lxb_dom_node_t *top, Py_ssize_t part=-1, double share=0.0) noexcept:
    """``len(node.text(deep=True).strip())`` without making the text, and with the text of the declarative shadow
    roots under ``top`` where they render (:func:`shadow_root`): its characters counted in UTF-8, less the
    whitespace before the first other character and after the last (either may span several text nodes). With a
    ``part`` (>= 0), the count stops as soon as ``part < share * count``: what is counted from the first character
    to the last so far only grows, so that is then settled; the count returned is then short of the whole."""
    cdef lxb_dom_node_t *node = first_inside(top)
    cdef lxb_dom_node_t *inner
    cdef lxb_dom_character_data_t *t
    cdef const unsigned char *s
    cdef size_t n, i, w
    cdef Py_ssize_t total = 0, lead = 0, trail = 0, k
    cdef bint started = False
    while node != NULL:
        if node.type == LXB_DOM_NODE_TYPE_TEXT:
            t = <lxb_dom_character_data_t *> node
            s = t.data.data
            n = t.data.length if s != NULL else 0
            if n:
                total += utf8_chars(s, n)
                i = 0
                if not started:
                    w = space_at(s, n)
                    while w:
                        lead += 1
                        i += w
                        w = space_at(s + i, n - i) if i < n else 0
                    started = i < n
                if started:
                    k = 0
                    w = space_before(s, n)
                    while w and n > i:
                        k += 1
                        n -= w
                        w = space_before(s, n)
                    trail = trail + k if n == 0 else k
                    if part >= 0 and part < share * (total - lead - trail):
                        return total - lead - trail
        inner = first_inside(node)
        node = inner if inner != NULL else following(node, top)
    return total - lead - trail if started else 0


cpdef Py_ssize_t text_chars(uintptr_t address):
    """Characters of all text under the node at ``address`` (a ``LexborNode.mem_id``), outer whitespace not counted:
    :func:`count_text`, for tests."""
    return count_text(<lxb_dom_node_t *> address)


cdef struct Gathered:  # a block's text as the walk gathers it (see gather_text)
    Buf buf
    bint parts  # something was gathered: a text not all whitespace, a <br>, a cell's separator, and any text after
    bint space  # whitespace was read since the last character kept
    bint raw  # preformatted: kept as it is, a <br> as NUL (blocks.make_block reads it)
    int newlines  # line breaks that end ``buf``


cdef inline size_t skip_spaces(const unsigned char *s, size_t n) noexcept:
    """How many bytes of whitespace ``s`` starts with."""
    cdef size_t i = 0, w
    while i < n:
        w = space_at(s + i, n - i)
        if not w:
            break
        i += w
    return i


# what a byte may start, for gather_text's scan of a word: 0 no whitespace, 1 an ASCII whitespace character, 2 the
# lead byte of a whitespace character of two or three bytes (space_at says which)
cdef unsigned char STARTS[256]
for _b in range(256):
    STARTS[_b] = 1 if _b < 0x80 and chr(_b).isspace() else 2 if _b in (0xC2, 0xE1, 0xE2, 0xE3) else 0


cdef Py_ssize_t gather_text(Gathered *g, const unsigned char *s, size_t n, bint count=True) except -1:
    """Add a text node to the block; with ``count``, the characters of its text less outer whitespace (what a
    link's text counts; the walk asks only inside a link), else 0. A text of only whitespace before anything was
    gathered is not (it starts no block). Outside preformatted text, whitespace runs become one space and none is
    kept at the start or after a line break, so that ``buf`` is already what
    :func:`datapipe.extract.blocks.make_block` makes of the joined parts (checked by :func:`block_text`'s test
    against it): making each part a ``str`` to join, split and join again was about a tenth of a page's time. Words
    parted by one ASCII space are copied as one run (the space is what the collapsing would write), each word's
    end found by a table of what a byte may start."""
    cdef size_t lead = skip_spaces(s, n), end = n, i, j, w
    cdef unsigned char c
    if lead == n and not g.parts:
        return 0
    g.parts = True
    if g.raw:
        buf_add(&g.buf, s, n)
    else:
        i = lead
        if lead:
            g.space = True
        while i < n:
            w = space_at(s + i, n - i)
            if w:
                g.space = True
                i += w
                continue
            j = i + 1
            while j < n:
                c = STARTS[s[j]]
                if c == 0:
                    j += 1
                elif c == 2 and not space_at(s + j, n - j):
                    j += 1
                elif s[j] == 32 and j + 1 < n and STARTS[s[j + 1]] == 0:
                    j += 2  # one space between two words: kept in the run
                else:
                    break
            if g.space and g.buf.size and not g.newlines:
                buf_add(&g.buf, <const unsigned char *> " ", 1)
            g.space = False
            g.newlines = 0
            buf_add(&g.buf, s + i, j - i)
            i = j
    if lead == n or not count:
        return 0
    w = space_before(s, end)
    while w:
        end -= w
        w = space_before(s, end)
    return utf8_chars(s + lead, end - lead)


cdef int gather_break(Gathered *g) except -1:
    """A ``<br>``: a line break, at most two in a row (a blank line), none at the start."""
    g.parts = True
    if g.raw:
        buf_add(&g.buf, <const unsigned char *> "\x00", 1)
        return 0
    g.space = False
    if g.buf.size and g.newlines < 2:
        buf_add(&g.buf, <const unsigned char *> "\n", 1)
        g.newlines += 1
    return 0


cdef str gathered(Gathered *g):
    """The block's text ("" when none), and ``g`` emptied for the next: as ``make_block`` makes it, but that a row's
    outer separators are still there (:func:`row_text`) and that preformatted text is raw, for ``make_block``."""
    cdef size_t n = g.buf.size
    if not g.raw:
        n -= g.newlines
    text = PyUnicode_DecodeUTF8(g.buf.data, n, "replace") if n else ""
    g.buf.size = 0
    g.parts = g.space = False
    g.newlines = 0
    return text


cdef inline str row_text(str text, str kind):
    """A row's cells without a separator before the first or after the last."""
    return text.strip(" |") if kind == "tr" else text


def block_text(list parts, str kind):
    """The text of the block the walk makes of ``parts`` (a text node's ``str`` each, None for a ``<br>``; None for
    no block) and the characters it counts of their text, as if all were in a link: the compiled gathering, for
    tests (``make_block`` says what it must be). Not for preformatted text."""
    cdef Gathered g
    cdef bytes b
    cdef Py_ssize_t chars = 0
    g.buf.data = NULL
    g.buf.size = g.buf.cap = 0
    g.parts = g.space = False
    g.newlines = 0
    g.raw = False
    try:
        for part in parts:
            if part is None:
                gather_break(&g)
            elif part:
                b = part.encode()
                chars += gather_text(&g, <const unsigned char *> b, len(b))
        return (row_text(gathered(&g), kind) or None) if g.parts else None, chars
    finally:
        free(g.buf.data)


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #if defined(__SSE2__)
    #include <emmintrin.h>
    #endif
    /* UTF-8 of a str's code units, as str.encode("utf-8", "ignore") writes them (a lone surrogate is dropped):
       first the size, then the bytes. Runs of ASCII go 16 units a step (one byte a unit) or 8 (two or four). */
    static inline Py_ssize_t dp_one_size(uint32_t c) {
        return c < 0x80 ? 1 : c < 0x800 ? 2 : (c >= 0xD800 && c <= 0xDFFF) ? 0 : c < 0x10000 ? 3 : 4;
    }
    static inline unsigned char *dp_one_write(uint32_t c, unsigned char *p) {
        if (c < 0x80) { *p++ = (unsigned char) c; }
        else if (c < 0x800) { *p++ = 0xC0 | (c >> 6); *p++ = 0x80 | (c & 0x3F); }
        else if (c >= 0xD800 && c <= 0xDFFF) { }
        else if (c < 0x10000) { *p++ = 0xE0 | (c >> 12); *p++ = 0x80 | ((c >> 6) & 0x3F); *p++ = 0x80 | (c & 0x3F); }
        else { *p++ = 0xF0 | (c >> 18); *p++ = 0x80 | ((c >> 12) & 0x3F); *p++ = 0x80 | ((c >> 6) & 0x3F);
               *p++ = 0x80 | (c & 0x3F); }
        return p;
    }
    static Py_ssize_t dp_utf8_size(int kind, const void *data, Py_ssize_t n) {
        Py_ssize_t i = 0, size = 0;
    #if defined(__SSE2__)
        const __m128i zero = _mm_setzero_si128();
        if (kind == 1) {
            for (; i + 16 <= n; i += 16) {
                __m128i v = _mm_loadu_si128((const __m128i *) ((const uint8_t *) data + i));
                unsigned m = (unsigned) _mm_movemask_epi8(v);
                m = m - ((m >> 1) & 0x5555u); m = (m & 0x3333u) + ((m >> 2) & 0x3333u);
                size += 16 + (Py_ssize_t) ((((m + (m >> 4)) & 0x0F0Fu) * 0x0101u) >> 8 & 0xFF);
            }
        } else if (kind == 2) {
            const __m128i high = _mm_set1_epi16((short) 0xFF80);
            for (; i + 8 <= n; i += 8) {
                __m128i v = _mm_loadu_si128((const __m128i *) ((const uint16_t *) data + i));
                if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(v, high), zero)) == 0xFFFF) { size += 8; continue; }
                for (Py_ssize_t k = i; k < i + 8; k++) size += dp_one_size(((const uint16_t *) data)[k]);
            }
        } else {
            const __m128i high = _mm_set1_epi32(~0x7F);
            for (; i + 8 <= n; i += 8) {
                __m128i a = _mm_loadu_si128((const __m128i *) ((const uint32_t *) data + i));
                __m128i b = _mm_loadu_si128((const __m128i *) ((const uint32_t *) data + i + 4));
                __m128i v = _mm_and_si128(_mm_or_si128(a, b), high);
                if (_mm_movemask_epi8(_mm_cmpeq_epi32(v, zero)) == 0xFFFF) { size += 8; continue; }
                for (Py_ssize_t k = i; k < i + 8; k++) size += dp_one_size(((const uint32_t *) data)[k]);
            }
        }
    #endif
        for (; i < n; i++) {
            uint32_t c = kind == 1 ? ((const uint8_t *) data)[i] : kind == 2 ? ((const uint16_t *) data)[i]
                                                                        : ((const uint32_t *) data)[i];
            size += dp_one_size(c);
        }
        return size;
    }
    static void dp_utf8_write(int kind, const void *data, Py_ssize_t n, unsigned char *p) {
        Py_ssize_t i = 0;
    #if defined(__SSE2__)
        const __m128i zero = _mm_setzero_si128();
        if (kind == 1) {
            for (; i + 16 <= n; i += 16) {
                __m128i v = _mm_loadu_si128((const __m128i *) ((const uint8_t *) data + i));
                if (_mm_movemask_epi8(v) == 0) { _mm_storeu_si128((__m128i *) p, v); p += 16; continue; }
                for (Py_ssize_t k = i; k < i + 16; k++) p = dp_one_write(((const uint8_t *) data)[k], p);
            }
        } else if (kind == 2) {
            const __m128i high = _mm_set1_epi16((short) 0xFF80);
            for (; i + 8 <= n; i += 8) {
                __m128i v = _mm_loadu_si128((const __m128i *) ((const uint16_t *) data + i));
                if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(v, high), zero)) == 0xFFFF) {
                    _mm_storel_epi64((__m128i *) p, _mm_packus_epi16(v, v)); p += 8; continue;
                }
                for (Py_ssize_t k = i; k < i + 8; k++) p = dp_one_write(((const uint16_t *) data)[k], p);
            }
        } else {
            const __m128i high = _mm_set1_epi32(~0x7F);
            for (; i + 8 <= n; i += 8) {
                __m128i a = _mm_loadu_si128((const __m128i *) ((const uint32_t *) data + i));
                __m128i b = _mm_loadu_si128((const __m128i *) ((const uint32_t *) data + i + 4));
                __m128i v = _mm_and_si128(_mm_or_si128(a, b), high);
                if (_mm_movemask_epi8(_mm_cmpeq_epi32(v, zero)) == 0xFFFF) {
                    __m128i w = _mm_packs_epi32(a, b);
                    _mm_storel_epi64((__m128i *) p, _mm_packus_epi16(w, w)); p += 8; continue;
                }
                for (Py_ssize_t k = i; k < i + 8; k++) p = dp_one_write(((const uint32_t *) data)[k], p);
            }
        }
    #endif
        for (; i < n; i++) {
            uint32_t c = kind == 1 ? ((const uint8_t *) data)[i] : kind == 2 ? ((const uint16_t *) data)[i]
                                                                        : ((const uint32_t *) data)[i];
            p = dp_one_write(c, p);
        }
    }
    """
    Py_ssize_t dp_utf8_size(int kind, const void *data, Py_ssize_t n) noexcept nogil
    void dp_utf8_write(int kind, const void *data, Py_ssize_t n, unsigned char *p) noexcept nogil


def utf8(str text):
    """``text.encode("utf-8", "ignore")`` (what selectolax parses a ``str`` as: the same bytes, a test holds them),
    made without CPython's encoder: that one reads a page that is not all ASCII one character at a time into a
    buffer of three bytes a character, and was ~0.3 ms of a page's ~3 on Trafilatura's evaluation pages (149,000
    characters a page, most of them ASCII in a str of two bytes a character); runs of ASCII go 8-16 characters a
    step here. An ASCII str is CPython's own (its bytes are already UTF-8)."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), size
    cdef int kind = PyUnicode_KIND(text)
    cdef const void *data = PyUnicode_DATA(text)
    cdef bytes out
    if PyUnicode_IS_ASCII(text):
        return text.encode("utf-8")
    size = dp_utf8_size(kind, data, n)
    out = PyBytes_FromStringAndSize(NULL, size)
    dp_utf8_write(kind, data, n, <unsigned char *> PyBytes_AS_STRING(out))
    return out


cdef inline bint value_is_lower(lxb_dom_attr_t *attr, const char *text, size_t n) noexcept:
    """Whether an attribute's value, lowercased, is ``text`` (``n`` lowercase ASCII bytes without a ``k``): ASCII's
    case folded here is ``str.lower()``'s, since no other character lowercases to an ASCII letter but the Kelvin
    sign, to ``k``."""
    cdef size_t i
    cdef unsigned char c
    if attr == NULL or attr.value == NULL or attr.value.data == NULL or attr.value.length != n:
        return False
    for i in range(n):
        c = attr.value.data[i]
        if 65 <= c <= 90:
            c += 32
        if c != <unsigned char> text[i]:
            return False
    return True


cdef str deep_text(lxb_dom_node_t *top):
    """The text of every text node under ``top`` in document order, joined: selectolax's ``node.text(deep=True)``
    (lexbor's simple walk: children before siblings, a template's content not entered)."""
    cdef Buf b
    cdef lxb_dom_node_t *node = top.first_child
    cdef lxb_dom_character_data_t *t
    b.data = NULL
    b.size = b.cap = 0
    try:
        while node != NULL:
            if node.type == LXB_DOM_NODE_TYPE_TEXT:
                t = <lxb_dom_character_data_t *> node
                if t.data.data != NULL and t.data.length:
                    buf_add(&b, t.data.data, t.data.length)
            if node.first_child != NULL:
                node = node.first_child
                continue
            while node != top and node.next == NULL:
                node = node.parent
            node = NULL if node == top else node.next
        return PyUnicode_DecodeUTF8(b.data, b.size, "replace") if b.size else ""
    finally:
        free(b.data)


def head_parts(uintptr_t address):
    """What the page's head (the element at ``address``, a ``LexborNode.mem_id``) declares, read from lexbor's
    structs: :func:`datapipe.extract.pagetype.head_of`'s reference, the same lists (its JSON-LD scripts' text and
    ``og:type`` as ``og:<type>``, in order; its generators). Through selectolax's objects (a node and an attribute
    dictionary per element of the head) it took ~0.06 ms of a page's ~3."""
    cdef lxb_dom_node_t *node = (<lxb_dom_node_t *> address).first_child
    cdef lxb_dom_attr_t *attr
    cdef lxb_dom_attr_t *prop
    cdef lxb_dom_attr_t *named
    cdef lxb_dom_attr_t *content
    cdef lxb_dom_attr_t *key
    cdef list declared = [], generators = []
    cdef object value
    while node != NULL:
        if node.type == LXB_DOM_NODE_TYPE_ELEMENT and node.local_name == LXB_TAG_META:
            prop = named = content = NULL
            attr = (<lxb_dom_element_t *> node).first_attr
            while attr != NULL:  # the last of each name, as a dictionary of them keeps
                if attr.node.local_name == LXB_DOM_ATTR_CONTENT:
                    content = attr
                elif attr_is(attr, "property", 8):
                    prop = attr
                elif attr_is(attr, "name", 4):
                    named = attr
                attr = attr.next
            # ``attrs.get("property") or attrs.get("name") or ""``: an empty or valueless one is passed over
            key = prop if value_length(prop) else named if value_length(named) else NULL
            if key != NULL:
                value = value_of(content) if content != NULL else None
                if value_is_lower(key, "og:type", 7):
                    declared.append("og:" + (value or ""))
                elif value_is_lower(key, "generator", 9):
                    generators.append(value or "")
        elif node.type == LXB_DOM_NODE_TYPE_ELEMENT and node.local_name == LXB_TAG_SCRIPT:
            key = NULL
            attr = (<lxb_dom_element_t *> node).first_attr
            while attr != NULL:
                if attr.node.local_name == LXB_DOM_ATTR_TYPE:
                    key = attr
                attr = attr.next
            if value_is_lower(key, "application/ld+json", 19):
                declared.append(deep_text(node))
        node = node.next
    return declared, generators


def first_title(uintptr_t address):
    """The text of the first ``<title>`` element in the document at ``address`` (the document node, in document
    order, as selectolax's ``css_first("title")`` finds it; any namespace, as its type selector matches), its
    whitespace collapsed; None when there is none or it is blank: ``analysis._title_element``'s reference."""
    cdef lxb_dom_node_t *top = <lxb_dom_node_t *> address
    cdef lxb_dom_node_t *node = top.first_child
    cdef str text
    while node != NULL:
        if node.type == LXB_DOM_NODE_TYPE_ELEMENT and node.local_name == LXB_TAG_TITLE:
            text = " ".join(deep_text(node).split())
            return text or None
        if node.first_child != NULL:
            node = node.first_child
            continue
        while node != top and node.next == NULL:
            node = node.parent
        node = NULL if node == top else node.next
    return None


cdef inline bint attr_is(lxb_dom_attr_t *attr, const char *name, size_t n) noexcept:
    """Whether a non-standard attribute (one without a static lexbor id: role, itemprop, ...) is named ``name``."""
    cdef const lxb_dom_attr_data_t *data
    if attr.node.local_name <= LXB_DOM_ATTR__LAST_ENTRY:
        return False
    data = <const lxb_dom_attr_data_t *> attr.node.local_name
    return data.entry.length == n and memcmp(lexbor_hash_entry_str(&data.entry), name, n) == 0


cdef inline object value_of(lxb_dom_attr_t *attr):
    if attr.value == NULL or attr.value.data == NULL:
        return None
    return PyUnicode_DecodeUTF8(<char *> attr.value.data, attr.value.length, "replace")


cdef inline const unsigned char *value_data(lxb_dom_attr_t *attr) noexcept:
    """An attribute's value as UTF-8 (NULL for none, or no attribute)."""
    if attr == NULL or attr.value == NULL:
        return NULL
    return attr.value.data


cdef inline size_t value_length(lxb_dom_attr_t *attr) noexcept:
    """The length of :func:`value_data` (0 for none)."""
    if attr == NULL or attr.value == NULL or attr.value.data == NULL:
        return 0
    return attr.value.length


cdef inline bint value_is(lxb_dom_attr_t *attr, const char *text, size_t n) noexcept:
    return (
        attr.value != NULL and attr.value.data != NULL and attr.value.length == n
        and memcmp(attr.value.data, text, n) == 0
    )


cdef bint is_root(lxb_dom_node_t *node, const unsigned char *flags, size_t ntags) noexcept:
    cdef lxb_dom_attr_t *attr
    if node.type != LXB_DOM_NODE_TYPE_ELEMENT:
        return False
    if node.local_name < ntags and flags[node.local_name] & (F_ARTICLE | F_MAIN):
        return True
    attr = (<lxb_dom_element_t *> node).first_attr
    while attr != NULL:
        if attr_is(attr, "itemprop", 8) and value_is(attr, "articleBody", 11):
            return True
        if attr_is(attr, "role", 4) and value_is(attr, "main", 4):
            return True
        attr = attr.next
    return False


cdef bint holds_root(lxb_dom_node_t *top, const unsigned char *flags, size_t ntags) noexcept:
    """Whether ``top`` or an element under it is an article, a main, ``itemprop=articleBody`` or ``role=main``
    (selectolax's ``node.css_first("article, main, [itemprop=articleBody], [role=main]")``, which matches the
    node itself too)."""
    cdef lxb_dom_node_t *node = first_inside(top)
    cdef lxb_dom_node_t *inner
    if is_root(top, flags, ntags):
        return True
    while node != NULL:
        if is_root(node, flags, ntags):
            return True
        inner = first_inside(node)
        node = inner if inner != NULL else following(node, top)
    return False


# what a word token of a class or id is to the rules (a Vocabulary's flags; the word lists are datapipe.extract.names')
cdef enum:
    W_BOILER = 1  # names a part that is not the article (BOILERPLATE_TOKENS)
    W_TEASER = 2  # TEASER_TOKENS
    W_PAID = 4  # PAID_TOKENS
    W_COMMENT = 8  # COMMENT_TOKENS
    W_STATE = 16  # a state or layout prefix (STATE_PREFIXES), as a name's first token
    W_ROOT = 32  # a one-word name of the article's body (``articlebody``)
    W_ROOT_FIRST = 64  # the first word of a two-word one (``article`` of ``article body``)

DEF WORD_CAP = 32  # the longest vocabulary word (checked when a Vocabulary is made)
DEF LAYOUT_CAP = 16  # the longest layout name


cdef struct Word:
    char key[WORD_CAP]
    size_t length
    uint64_t lo, hi  # its groups (datapipe.extract.signals), bits 0-63 and 64-127
    unsigned int flags


cdef struct Layout:
    char key[LAYOUT_CAP]
    size_t length


cdef struct NameState:  # what the word tokens of one class name or id say (see Vocabulary.read_name)
    Py_ssize_t tokens  # of the part before a BEM modifier (``--``)
    unsigned int first, every, after  # the first token's flags, all tokens', those after a content-root name's
    bint rooted  # a content-root name is among the tokens
    bint other_all, other_after  # a boilerplate token that is no comment word: among all, after the root name
    int prev  # the previous token's word (-1: none of the vocabulary's)
    uint64_t lo, hi  # the groups of every token (the modifier's too)


cdef inline bint is_alnum(unsigned char c) noexcept:
    return (c >= 48 and c <= 57) or (c >= 65 and c <= 90) or (c >= 97 and c <= 122)


cdef inline bint is_lower(unsigned char c) noexcept:
    return c >= 97 and c <= 122


cdef inline bint is_upper(unsigned char c) noexcept:
    return c >= 65 and c <= 90


cdef inline uint64_t fnv(const unsigned char *s, size_t n) noexcept:
    cdef uint64_t h = 1469598103934665603ULL
    cdef size_t i
    for i in range(n):
        h = (h ^ s[i]) * 1099511628211ULL
    return h


cdef class Vocabulary:
    """The class and id words of :mod:`datapipe.extract.names` (what names boilerplate, a teaser, a paywall, the
    article's body) and the groups of :mod:`datapipe.extract.signals`, as a table the walk reads a name's UTF-8
    with: a class-and-id value's verdict (``names.classify_name``, or ``classify_discussion``) and its groups
    (``signals.mask_of``), made without a ``str`` per name or token.

    Why in C: a page has ~275 named elements, ~130 of their values unseen before (most values are a site's own,
    so the classifiers' caches seldom hit across pages), and tokenizing and judging them in Python took 1.1 ms of
    the learned walk's 1.6 ms on Trafilatura's 990 evaluation pages. The Python classifiers stay the reference:
    a test holds this to them on every class value of the fixture pages."""

    cdef Word *words
    cdef Py_ssize_t nwords
    cdef int *slots  # open addressing by fnv(word): an index into words, -1 empty
    cdef uint64_t mask_slots
    cdef int *pairs  # two-word content-root names: (first, second) word indices
    cdef Py_ssize_t npairs
    cdef Layout layout[16]
    cdef Py_ssize_t nlayout
    cdef size_t longest
    cdef int teaser_tier, paid_tier
    cdef readonly dict roles  # an ARIA role's groups
    cdef uint64_t *tag_lo  # a structural tag's groups (by lexbor tag id), bits 0-63
    cdef uint64_t *tag_hi  # ... and 64-127
    cdef Py_ssize_t ntags
    cdef uint64_t hidden_lo, hidden_hi  # the group of an element hidden by an attribute

    def __init__(
        self,
        dict groups,
        boilerplate,
        teasers,
        paid,
        comments,
        states,
        roots,
        root_pairs,
        layouts,
        dict roles,
        int teaser_tier,
        int paid_tier,
        tuple tag_masks,
        hidden_mask,
    ):
        """``groups``: a word -> its groups' bits (an int); the sets of words by what they name; ``root_pairs``
        the two-word content-root names as (first, second); ``layouts`` the names that state the page's frame;
        ``roles`` an ARIA role -> its groups' bits; the tiers a teaser's and a paywall's containers get; each
        lexbor tag id's groups' bits (``tag_masks``) and those of a hidden element."""
        cdef dict flags = {}
        cdef Py_ssize_t i, size
        cdef uint64_t h
        cdef bytes key
        for words, flag in (
            (boilerplate, W_BOILER), (teasers, W_TEASER), (paid, W_PAID), (comments, W_COMMENT),
            (states, W_STATE), (roots, W_ROOT), ([p[0] for p in root_pairs], W_ROOT_FIRST),
            ([p[1] for p in root_pairs], 0), (groups, 0),
        ):
            for w in words:
                flags[w] = flags.get(w, 0) | flag
        self.nwords = len(flags)
        size = 64
        while size < 4 * self.nwords:
            size *= 2
        self.mask_slots = size - 1
        self.words = <Word *> malloc(self.nwords * sizeof(Word))
        self.slots = <int *> malloc(size * sizeof(int))
        self.pairs = <int *> malloc((2 * len(root_pairs) + 1) * sizeof(int))
        if self.words == NULL or self.slots == NULL or self.pairs == NULL:
            raise MemoryError()
        for i in range(size):
            self.slots[i] = -1
        self.longest = 0
        index = {}
        for i, (w, f) in enumerate(flags.items()):
            key = w.encode("ascii")
            if len(key) > WORD_CAP or not key.isalpha() or not key.islower():
                raise ValueError(f"a vocabulary word must be 1-{WORD_CAP} lowercase ASCII letters: {w!r}")
            bits = groups.get(w, 0)
            memcpy(self.words[i].key, <const char *> key, len(key))
            self.words[i].length = len(key)
            self.words[i].lo = bits & 0xFFFFFFFFFFFFFFFF
            self.words[i].hi = bits >> 64
            if bits >> 128:
                raise ValueError("more than 128 groups")
            self.words[i].flags = f
            self.longest = max(self.longest, <size_t> len(key))
            h = fnv(<const unsigned char *> key, len(key)) & self.mask_slots
            while self.slots[h] >= 0:
                h = (h + 1) & self.mask_slots
            self.slots[h] = i
            index[w] = i
        self.npairs = len(root_pairs)
        for i, (a, b) in enumerate(root_pairs):
            self.pairs[2 * i] = index[a]
            self.pairs[2 * i + 1] = index[b]
        if len(layouts) > 16:
            raise ValueError("more than 16 layout names")
        self.nlayout = 0
        for name in layouts:
            key = name.encode("ascii")
            if len(key) > LAYOUT_CAP:
                raise ValueError(f"a layout name longer than {LAYOUT_CAP}: {name!r}")
            memcpy(self.layout[self.nlayout].key, <const char *> key, len(key))
            self.layout[self.nlayout].length = len(key)
            self.nlayout += 1
        self.roles = roles
        self.teaser_tier = teaser_tier
        self.paid_tier = paid_tier
        self.ntags = len(tag_masks)
        self.tag_lo = <uint64_t *> malloc((self.ntags + 1) * sizeof(uint64_t))
        self.tag_hi = <uint64_t *> malloc((self.ntags + 1) * sizeof(uint64_t))
        if self.tag_lo == NULL or self.tag_hi == NULL:
            raise MemoryError()
        for i, bits in enumerate(tag_masks):
            if bits >> 128:
                raise ValueError("more than 128 groups")
            self.tag_lo[i] = bits & 0xFFFFFFFFFFFFFFFF
            self.tag_hi[i] = bits >> 64
        if hidden_mask >> 128:
            raise ValueError("more than 128 groups")
        self.hidden_lo = hidden_mask & 0xFFFFFFFFFFFFFFFF
        self.hidden_hi = hidden_mask >> 64

    def __dealloc__(self):
        free(self.words)
        free(self.slots)
        free(self.pairs)
        free(self.tag_lo)
        free(self.tag_hi)

    cdef inline int find(self, const unsigned char *s, size_t n) noexcept:
        """The word of ``n`` lowercase bytes at ``s`` (-1: none)."""
        cdef uint64_t h
        cdef int i
        if n > self.longest:
            return -1
        h = fnv(s, n) & self.mask_slots
        while True:
            i = self.slots[h]
            if i < 0:
                return -1
            if self.words[i].length == n and memcmp(self.words[i].key, s, n) == 0:
                return i
            h = (h + 1) & self.mask_slots

    cdef inline bint paired(self, int first, int second) noexcept:
        cdef Py_ssize_t i
        for i in range(self.npairs):
            if self.pairs[2 * i] == first and self.pairs[2 * i + 1] == second:
                return True
        return False

    cdef void token(self, const unsigned char *s, size_t n, bint judged, NameState *st) noexcept:
        """One word token (``n`` ASCII letters at ``s``, in any case), of the part of the name before its BEM
        modifier when ``judged``: as ``names.classify_one`` reads the tokens ``name_tokens`` makes."""
        cdef unsigned char low[WORD_CAP]
        cdef size_t i
        cdef int w = -1
        cdef unsigned int f = 0
        if n <= self.longest:
            for i in range(n):
                low[i] = s[i] | 0x20
            w = self.find(low, n)
        if w >= 0:
            st.lo |= self.words[w].lo
            st.hi |= self.words[w].hi
            f = self.words[w].flags
        if not judged:
            return
        if st.tokens == 0:
            st.first = f
        st.tokens += 1
        if st.rooted:  # after the content-root name (names._root_end)
            st.after |= f
            if f & W_BOILER and not f & W_COMMENT:
                st.other_after = True
        elif f & W_ROOT or (
            st.prev >= 0 and w >= 0 and self.words[st.prev].flags & W_ROOT_FIRST and self.paired(st.prev, w)
        ):
            st.rooted = True
        st.every |= f
        if f & W_BOILER and not f & W_COMMENT:
            st.other_all = True
        st.prev = w

    cdef void read_name(self, const unsigned char *s, size_t n, NameState *st) noexcept:
        """The word tokens of one class name or id (``names.name_tokens``): its runs of ASCII letters and digits,
        a run with a digit giving none (a hash, a number), a run split where a lowercase letter meets a capital
        (camelCase), lowercased; those before the first ``--`` judged."""
        cdef size_t cut = n, i = 0, j, k, m
        cdef bint digit
        st.tokens = 0
        st.first = st.every = st.after = 0
        st.rooted = st.other_all = st.other_after = False
        st.prev = -1
        st.lo = st.hi = 0
        while i + 1 < n:
            if s[i] == 45 and s[i + 1] == 45:  # "--"
                cut = i
                break
            i += 1
        i = 0
        while i < n:
            if not is_alnum(s[i]):
                i += 1
                continue
            j = i
            digit = False
            while j < n and is_alnum(s[j]):
                if s[j] <= 57:
                    digit = True
                j += 1
            if not digit:
                k = i
                while k < j:
                    m = k + 1
                    while m < j and not (is_lower(s[m - 1]) and is_upper(s[m])):
                        m += 1
                    self.token(s + k, m - k, i < cut, st)
                    k = m
            i = j

    cdef inline int verdict(self, NameState *st) noexcept:
        """``names.classify_one``: 1 a content root, -1 boilerplate, the teaser's or the paywall's tier, or 0."""
        if st.tokens == 0 or st.first & W_STATE:
            return 0
        if st.rooted:
            return -1 if st.after & W_BOILER else 1
        if st.every & W_BOILER:
            return -1
        if st.every & W_TEASER:
            return self.teaser_tier
        return self.paid_tier if st.every & W_PAID else 0

    cdef inline bint comments_only(self, NameState *st) noexcept:
        """``names._comments_only``: the boilerplate words after any content-root name are comment words only."""
        if st.rooted:
            return (st.after & W_BOILER) != 0 and not st.other_after
        return (st.every & W_BOILER) != 0 and not st.other_all

    cdef inline bint is_layout(self, const unsigned char *s, size_t n) noexcept:
        cdef Py_ssize_t i
        for i in range(self.nlayout):
            if self.layout[i].length == n and memcmp(self.layout[i].key, s, n) == 0:
                return True
        return False

    cdef void judge(
        self,
        const unsigned char *a,
        size_t na,
        const unsigned char *b,
        size_t nb,
        bint discussion,
        bint *boiler,
        int *tier,
        uint64_t *lo,
        uint64_t *hi,
    ) noexcept:
        """A class value ``a`` and an id ``b`` (UTF-8; ``na``/``nb`` 0 when absent): whether they name boilerplate
        and the tier they name (``names.classify_name``, or ``classify_discussion`` when ``discussion``), and
        their groups (``signals.mask_of`` without a role). Names are split at Python's whitespace
        (``str.split``), as the classifiers split the value."""
        cdef NameState st
        cdef const unsigned char *s
        cdef size_t n, pos, start, w
        cdef int v, part, rounds
        cdef bint decided = False, rooted = False, teaser = False, paid = False, found
        boiler[0] = False
        tier[0] = 0
        lo[0] = hi[0] = 0
        # round 0: every name's groups, and the verdict of names.classify_name's loop; round 1 (a content-root
        # name was found): whether a comment word outside it wins; round 2 (discussion): whether comment words
        # alone named it boilerplate
        for rounds in range(3):
            if rounds == 1 and not rooted:
                continue
            if rounds == 2 and not (discussion and boiler[0]):
                break
            found = False
            for part in range(2):
                s = a if part == 0 else b
                n = na if part == 0 else nb
                pos = 0
                while pos < n:
                    w = space_at(s + pos, n - pos)
                    if w:
                        pos += w
                        continue
                    start = pos
                    while pos < n and not space_at(s + pos, n - pos):
                        pos += 1
                    self.read_name(s + start, pos - start, &st)
                    v = self.verdict(&st)
                    if rounds == 0:
                        lo[0] |= st.lo
                        hi[0] |= st.hi
                        if decided:
                            continue
                        if v == 1:
                            rooted = decided = True
                        elif self.is_layout(s + start, pos - start):
                            decided = True
                        else:
                            boiler[0] = boiler[0] or v < 0
                            teaser = teaser or v == self.teaser_tier
                            paid = paid or v == self.paid_tier
                    elif rounds == 1:
                        if v < 0 and self.comments_only(&st):
                            found = True
                    elif v < 0 and not self.comments_only(&st):
                        found = True  # a word of other boilerplate: still boilerplate in a discussion
            if rounds == 0:
                if rooted:
                    boiler[0] = False
                    tier[0] = 1
                elif decided:  # a layout name before any verdict
                    boiler[0] = False
                    tier[0] = 0
                elif not boiler[0]:
                    tier[0] = self.teaser_tier if teaser else self.paid_tier if paid else 0
            elif rounds == 1:
                if found:
                    boiler[0] = True
                    tier[0] = 0
            elif not found:
                boiler[0] = False

    def classify(self, str names, bint discussion=False):
        """(boilerplate, tier, groups' bits) of a class-and-id value (``names.classify_name`` or
        ``classify_discussion``, and ``signals.mask_of(names, None)``): for tests."""
        cdef bytes b = names.encode("utf-8", "surrogatepass")
        cdef bint boiler
        cdef int tier
        cdef uint64_t lo, hi
        self.judge(<const unsigned char *> b, len(b), NULL, 0, discussion, &boiler, &tier, &lo, &hi)
        return boiler, tier, (<object> hi << 64) | lo


cdef struct Judged:  # a class-and-id value the walk has judged on this page (Walk.judged)
    uint64_t hash  # 0: an empty slot
    const unsigned char *a  # the class value's UTF-8 (lexbor's, alive while the tree is)
    size_t na
    const unsigned char *b  # the id's
    size_t nb
    bint boiler
    int tier
    uint64_t lo, hi


cdef class Walk:
    """One pass over a page's tree: its blocks in document order and its named containers as block ranges
    (the record :func:`datapipe.extract.content.decide` reads; see that module for what each rule means)."""

    cdef bytes what, flags
    cdef const unsigned char *what_c
    cdef const unsigned char *flags_c
    cdef size_t ntags
    cdef tuple names, kinds
    cdef object rules
    cdef object make_block, hidden_style, roles
    cdef Vocabulary vocab  # a class and id's verdict and groups
    cdef bint discussion  # judge names as on a discussion (names.classify_discussion)
    cdef double skip_share, wrapper_share, form_share
    cdef Py_ssize_t root_min_chars
    cdef bint read_hidden
    cdef public list blocks, containers
    # what the page declares it is, in its body: each JSON-LD script's text and each microdata itemtype (read by
    # datapipe.extract.pagetype; the head's are read from the tree)
    cdef public list declared
    cdef Gathered text
    cdef Py_ssize_t link_chars, link, boiler
    cdef Py_ssize_t page_chars  # the page's text (see page()), -1 until counted
    cdef lxb_dom_node_t *top  # the node walked
    cdef str kind
    # the groups named by the open structural elements (their tags and names), OR-ed: bits 0-63 and 64-127
    cdef uint64_t mask_lo, mask_hi
    # the numbers of the open structural elements, outermost first (elements numbered as opened)
    cdef Py_ssize_t *path
    cdef Py_ssize_t depth, path_cap
    cdef Py_ssize_t opened_count
    # the verdicts and groups of the class-and-id values judged on this page, by their bytes (an open-addressing
    # table; a page repeats its names: ~410 named elements, ~185 values)
    cdef Judged *seen
    cdef size_t seen_mask, seen_count

    def __init__(self, rules):
        self.rules = rules
        self.what = rules.what
        self.flags = rules.flags
        self.what_c = self.what
        self.flags_c = self.flags
        self.ntags = len(self.what)
        self.names = rules.names
        self.kinds = rules.kinds
        self.vocab = rules.vocabulary
        self.discussion = rules.discussion
        self.make_block = rules.make_block
        self.hidden_style = rules.hidden_style
        self.roles = rules.roles
        self.skip_share = rules.skip_share
        self.wrapper_share = rules.wrapper_share
        self.form_share = rules.form_share
        self.root_min_chars = rules.root_min_chars
        self.read_hidden = rules.read_hidden
        self.mask_lo = self.mask_hi = 0
        self.path = NULL
        self.depth = self.path_cap = 0
        self.opened_count = 0
        self.seen = NULL
        self.seen_mask = self.seen_count = 0
        self.blocks = []
        self.containers = []
        self.declared = []
        self.text.buf.data = NULL
        self.text.buf.size = self.text.buf.cap = 0
        self.text.parts = self.text.space = self.text.raw = False
        self.text.newlines = 0
        self.link_chars = 0
        self.link = 0
        self.boiler = -1
        self.page_chars = -1
        self.top = NULL
        self.kind = "p"

    def run(self, uintptr_t address):
        """Walk the children of the node at ``address`` (the ``mem_id`` of a live ``LexborNode``: its tree must
        outlive the call), then close the last block."""
        self.top = <lxb_dom_node_t *> address
        self.page_chars = -1
        free(self.seen)  # the values judged point into a tree: another walk starts with none
        self.seen = NULL
        self.seen_mask = self.seen_count = 0
        self.walk(<lxb_dom_node_t *> address)
        self.flush()

    cdef Py_ssize_t page(self) except -1:
        """The characters of the page's text (:meth:`text_chars` of the node walked), counted when first asked
        for: the learned walk, which skips nothing and reads every form, asks only at an ``aria-hidden`` element
        (a count of the whole page was ~0.05 ms of a page's 2.5)."""
        if self.page_chars < 0:
            self.page_chars = self.text_chars(self.top)
        return self.page_chars

    cdef bint under_share(self, Py_ssize_t part, double share) except -1:
        """Whether ``part`` characters are under ``share`` of the page's text (``part < share * page()``), the
        page's text counted only as far as it takes to tell when it is not yet counted: a ``<noscript>`` holding a
        tracking pixel is settled within the page's first words."""
        if self.page_chars >= 0:
            return part < share * self.page_chars
        return part < share * count_text(self.top, part, share)

    cdef Py_ssize_t text_chars(self, lxb_dom_node_t *node) except -1:
        """Characters of text under ``node``, outer whitespace not counted: what "the page's text" and "a part's
        share of it" mean. Scripts' and styles' text counts too: measured without it, the rules that use a share
        (tuned with it) kept 5 more boilerplate snippets on the tuning pages and one fewer of the article's."""
        return count_text(node)

    def __dealloc__(self):
        free(self.text.buf.data)
        free(self.path)
        free(self.seen)

    cdef int flush(self) except -1:
        """Close the block being gathered (none when nothing was)."""
        cdef object block
        cdef str text
        cdef Py_ssize_t n
        if self.text.parts:
            if self.text.raw:
                block = self.make_block(self.kind, gathered(&self.text), self.link_chars)
                if block is not None:
                    block.mask = self.mask()
                    block.path = self.tail()
                    self.blocks.append(block)
            else:
                text = row_text(gathered(&self.text), self.kind)
                n = len(text)
                if n:
                    self.blocks.append(self.new_block(text, min(self.link_chars, n), n))
            self.link_chars = 0
        return 0

    cdef object new_block(self, str text, Py_ssize_t link_chars, Py_ssize_t n):
        """``Block(kind, text, link_chars, n, mask, path)`` of the block being closed, made without a call to its
        ``__init__`` (:mod:`datapipe.extract.records`)."""
        return set_block(Block.__new__(Block), self.kind, text, link_chars, n, self.mask(), self.tail())

    cdef object new_container(
        self, str kind, int tier, Py_ssize_t start, Py_ssize_t end, Py_ssize_t chars, str tag, object attrs,
        bint skipped,
    ):
        """``Container(kind, tier, start, end, chars, tag, attrs, skipped)``, made as :meth:`new_block` makes a
        block (``link_chars`` 0, its default: the verdicts set it)."""
        return set_container(Container.__new__(Container), kind, tier, start, end, chars, tag, attrs, skipped, 0)

    cdef object mask(self):
        """The groups of the open structural elements, as an int (a block's ``mask``)."""
        if self.mask_hi:
            return (<object> self.mask_hi << 64) | <object> self.mask_lo
        return <object> self.mask_lo

    cdef tuple tail(self):
        """The numbers of the innermost PATH open structural elements (a block's ``path``), innermost last, with -1
        in front for the levels a shallower block does not have."""
        cdef Py_ssize_t n = self.depth, k
        cdef tuple out = PyTuple_New(PATH)
        cdef object v
        for k in range(PATH):
            v = self.path[n - PATH + k] if n - PATH + k >= 0 else -1
            Py_INCREF(v)
            PyTuple_SET_ITEM(out, k, v)
        return out

    cdef int declare_script(self, lxb_dom_node_t *node) except -1:
        """A JSON-LD script's text (``type="application/ld+json"``) goes to :attr:`declared`."""
        cdef lxb_dom_attr_t *attr = (<lxb_dom_element_t *> node).first_attr
        cdef lxb_dom_node_t *inner
        cdef lxb_dom_character_data_t *t
        while attr != NULL:
            if attr.node.local_name == LXB_DOM_ATTR_TYPE and value_is(attr, "application/ld+json", 19):
                inner = node.first_child
                if inner != NULL and inner.type == LXB_DOM_NODE_TYPE_TEXT:
                    t = <lxb_dom_character_data_t *> inner
                    if t.data.data != NULL and t.data.length:
                        self.declared.append(PyUnicode_DecodeUTF8(<char *> t.data.data, t.data.length, "replace"))
                return 0
            attr = attr.next
        return 0

    cdef int hides(self, lxb_dom_attr_t *attr) except -1:
        """Whether the attribute hides its element: HIDDEN for ``hidden`` or a style with ``display:none`` or
        ``visibility:hidden`` (the regular expression only where a substring test found a candidate), UNSEEN for
        ``aria-hidden="true"`` (see :meth:`behind_dialog`), else 0."""
        cdef object style
        if attr.node.local_name == LXB_DOM_ATTR_STYLE:
            style = value_of(attr)
            return HIDDEN if style and ("none" in style or "hidden" in style) and self.hidden_style(style) else 0
        if attr.node.local_name <= LXB_DOM_ATTR__LAST_ENTRY:
            return 0
        if attr_is(attr, "hidden", 6):
            return HIDDEN
        return UNSEEN if attr_is(attr, "aria-hidden", 11) and value_is(attr, "true", 4) else 0

    cdef bint behind_dialog(self, lxb_dom_node_t *node) except -1:
        """Whether an element hidden from assistive technology only (``aria-hidden``, which hides nothing on the
        screen) is the page behind an open dialog: it holds the article (an ``<article>``, a ``<main>``,
        ``itemprop=articleBody`` or ``role=main``) and :data:`wrapper_share` of the page's text or more. Dialog
        libraries (MUI's modal, react-modal, a11y-dialog) set ``aria-hidden="true"`` on the page's root while a
        dialog (a cookie banner, a newsletter prompt) is open, so a page saved from a browser in that state holds
        its whole article there. An icon, a duplicate carousel slide or a closed menu so marked (a hamburger menu
        with half a page's text, a consent banner) holds no article and stays unread. The article is looked for
        first: most such elements (icons) hold none, and the page's text is then never counted."""
        return (
            holds_root(node, self.flags_c, self.ntags)
            and self.page() > 0
            and self.text_chars(node) >= self.wrapper_share * self.page_chars
        )

    cdef bint hidden(self, lxb_dom_node_t *node) except -1:
        """Whether an attribute of the element hides it (``aria-hidden`` unless :meth:`behind_dialog`)."""
        cdef lxb_dom_attr_t *attr = (<lxb_dom_element_t *> node).first_attr
        cdef bint unseen = False
        cdef int how
        while attr != NULL:
            how = self.hides(attr)
            if how == HIDDEN:
                return True
            unseen = unseen or how == UNSEEN
            attr = attr.next
        return unseen and not self.behind_dialog(node)

    cdef int walk(self, lxb_dom_node_t *top) except -1:
        """Every node under ``top`` in document order, iteratively: an explicit stack of the open inline, link and
        structural elements, not the C stack, so that a page nested as deep as lexbor parses it (5,000 elements,
        or 100,000) is read as a shallow one is, never flattened to one run of text (the recursive walk did that
        below 256 levels: a table of contents came out as one line)."""
        cdef Open *stack = NULL
        cdef Open *grown
        cdef Py_ssize_t size = 0, cap = 0
        cdef lxb_dom_node_t *child = first_inside(top)
        cdef lxb_dom_node_t *parent
        cdef lxb_dom_character_data_t *t
        cdef unsigned char what, mode
        cdef uintptr_t tid
        cdef Py_ssize_t chars
        try:
            while True:
                if child == NULL:  # the children of the innermost open element are done: close it
                    if size == 0:
                        return 0
                    size -= 1
                    parent = stack[size].node
                    mode = stack[size].mode
                    if mode == LINK:
                        self.link -= 1
                    elif mode == STRUCTURAL:
                        self.close_element(&stack[size])
                    child = parent.next
                    continue
                if child.type == LXB_DOM_NODE_TYPE_TEXT:
                    t = <lxb_dom_character_data_t *> child
                    if t.data.data != NULL and t.data.length:
                        chars = gather_text(&self.text, t.data.data, t.data.length, self.link > 0)
                        if self.link:
                            self.link_chars += chars
                    child = child.next
                    continue
                if child.type != LXB_DOM_NODE_TYPE_ELEMENT:
                    child = child.next
                    continue
                tid = child.local_name
                what = self.what_c[tid] if tid < self.ntags else INLINE
                if size == cap:
                    cap = max(2 * cap, <Py_ssize_t> 64)
                    grown = <Open *> realloc(stack, cap * sizeof(Open))
                    if grown == NULL:
                        raise MemoryError()
                    stack = grown
                if what == INLINE or what == LINK:
                    if (
                        (<lxb_dom_element_t *> child).first_attr != NULL
                        and not self.read_hidden
                        and self.hidden(child)
                    ):
                        child = child.next  # a hidden caption or word, as a hidden block is not read
                        continue
                    if what == LINK:
                        self.link += 1
                    mode = what
                elif what == STRUCTURAL:
                    if not self.open_element(child, tid, &stack[size]):
                        child = child.next
                        continue
                    mode = STRUCTURAL
                elif tid == LXB_TAG_TEMPLATE and shadow_root(child) != NULL:
                    mode = INLINE  # a shadow root: read in place, as its host's children are
                else:
                    if what == BREAK:
                        gather_break(&self.text)
                    elif tid == LXB_TAG_SCRIPT:
                        self.declare_script(child)
                    child = child.next
                    continue
                stack[size].node = child
                stack[size].mode = mode
                size += 1
                child = first_inside(child)
        finally:
            free(stack)

    cdef int judge(
        self,
        const unsigned char *a,
        size_t na,
        const unsigned char *b,
        size_t nb,
        bint *boiler,
        int *tier,
        uint64_t *lo,
        uint64_t *hi,
    ) except -1:
        """:meth:`Vocabulary.judge` of a class value and an id, each value judged once a page: a repeated one (a
        list's items, a grid's cards) is found by its bytes in :attr:`seen`. The verdict is a function of the two
        values' bytes (and of the walk's rules, fixed for the walk), so the same bytes get the same verdict."""
        cdef uint64_t h = fnv(a, na) * 31 + fnv(b, nb) + (<uint64_t> na << 32) + nb
        cdef size_t i, k, cap
        cdef Judged *old
        cdef Judged *e
        if h == 0:
            h = 1
        if self.seen != NULL:
            i = h & self.seen_mask
            while self.seen[i].hash:
                e = &self.seen[i]
                if (
                    e.hash == h and e.na == na and e.nb == nb
                    and (na == 0 or memcmp(e.a, a, na) == 0) and (nb == 0 or memcmp(e.b, b, nb) == 0)
                ):
                    boiler[0], tier[0], lo[0], hi[0] = e.boiler, e.tier, e.lo, e.hi
                    return 0
                i = (i + 1) & self.seen_mask
        self.vocab.judge(a, na, b, nb, self.discussion, boiler, tier, lo, hi)
        if 2 * (self.seen_count + 1) > self.seen_mask + 1 or self.seen == NULL:  # grow (and rehash) at half full
            old = self.seen
            cap = 2 * (self.seen_mask + 1) if old != NULL else 256
            self.seen = <Judged *> calloc(cap, sizeof(Judged))
            if self.seen == NULL:
                self.seen = old
                raise MemoryError()
            if old != NULL:
                for k in range(self.seen_mask + 1):
                    if old[k].hash:
                        i = old[k].hash & (cap - 1)
                        while self.seen[i].hash:
                            i = (i + 1) & (cap - 1)
                        self.seen[i] = old[k]
                free(old)
            self.seen_mask = cap - 1
        i = h & self.seen_mask
        while self.seen[i].hash:
            i = (i + 1) & self.seen_mask
        e = &self.seen[i]
        e.hash, e.a, e.na, e.b, e.nb = h, a, na, b, nb
        e.boiler, e.tier, e.lo, e.hi = boiler[0], tier[0], lo[0], hi[0]
        self.seen_count += 1
        return 0

    cdef bint open_element(self, lxb_dom_node_t *node, uintptr_t tid, Open *closing) except -1:
        """What a structural element does before its children; False when they are not to be read (hidden, a
        wrapper of little text, boilerplate decided here). When they are, what closing it needs goes in
        ``closing`` (its entry on the walk's stack): the block kind outside it, its container, its flags, whether
        it has a kind of its own, and the groups outside it. Kept in C, not as a tuple on a list: a page opens
        ~380 such elements."""
        cdef lxb_dom_attr_t *attr = (<lxb_dom_element_t *> node).first_attr
        cdef lxb_dom_attr_t *cls = NULL
        cdef lxb_dom_attr_t *ident = NULL
        cdef lxb_dom_attr_t *role = NULL
        cdef bint boiler = False
        cdef bint body = False
        cdef bint unseen = False
        cdef int tier = 0, how
        cdef unsigned char flags = self.flags_c[tid]
        cdef str tag = self.names[tid]
        cdef object kind, role_value = None, attrs = None, role_bits
        cdef Py_ssize_t opened = -1
        cdef uint64_t lo = 0, hi = 0
        cdef uint64_t mask_lo = self.vocab.tag_lo[tid], mask_hi = self.vocab.tag_hi[tid]
        cdef Py_ssize_t chars, n
        cdef double share
        share = self.form_share if flags & F_FORM else self.wrapper_share
        if flags & F_WRAPPER and share > 0 and self.under_share(self.text_chars(node), share):
            return False
        while attr != NULL:
            if attr.node.local_name == LXB_DOM_ATTR_CLASS:
                cls = attr
            elif attr.node.local_name == LXB_DOM_ATTR_ID:
                ident = attr
            else:
                how = self.hides(attr)
                if how == HIDDEN:
                    if not self.read_hidden:
                        return False
                    mask_lo |= self.vocab.hidden_lo
                    mask_hi |= self.vocab.hidden_hi
                    how = 0
                unseen = unseen or how == UNSEEN
                if not how and attr.node.local_name > LXB_DOM_ATTR__LAST_ENTRY:
                    if attr_is(attr, "role", 4):
                        role = attr
                    elif attr_is(attr, "itemprop", 8) and value_is(attr, "articleBody", 11):
                        body = True
                    elif attr_is(attr, "itemtype", 8) and attr.value != NULL and attr.value.data != NULL:
                        self.declared.append(value_of(attr))
            attr = attr.next
        if unseen and not self.behind_dialog(node):
            if not self.read_hidden:
                return False
            mask_lo |= self.vocab.hidden_lo
            mask_hi |= self.vocab.hidden_hi
        if cls != NULL or ident != NULL:  # judged on their UTF-8 (Vocabulary): no str unless a container needs it
            self.judge(
                value_data(cls), value_length(cls), value_data(ident), value_length(ident), &boiler, &tier, &lo, &hi
            )
            mask_lo |= lo
            mask_hi |= hi
        if role != NULL:
            role_value = value_of(role)
            if role_value:
                role_bits = self.vocab.roles.get(role_value, 0)
                if role_bits:
                    mask_lo |= <uint64_t> (role_bits & 0xFFFFFFFFFFFFFFFF)
                    mask_hi |= <uint64_t> (role_bits >> 64)
                boiler = boiler or role_value in self.roles
                if not tier and role_value == "main":
                    tier = 3
        if body:
            boiler = False
            tier = 1
        if flags & F_BOILER:
            boiler = True
        elif not tier and flags & (F_ARTICLE | F_MAIN):
            tier = 2 if flags & F_ARTICLE else 3
        if (boiler or tier) and (cls != NULL or ident != NULL or role != NULL):  # what its container shows
            attrs = {}
            if cls != NULL:
                attrs["class"] = value_of(cls)
            if ident != NULL:
                attrs["id"] = value_of(ident)
            if role != NULL:
                attrs["role"] = role_value
        if flags & F_BLOCK and self.text.parts:
            self.flush()
        if boiler and self.boiler < 0 and self.skip_share > 0 and self.page():
            # the common case decided in C: a part named as boilerplate, well short of most of the page's text and
            # holding no article, is not visited (a third of a page's elements, typically)
            chars = self.text_chars(node)
            if chars < self.skip_share * self.page_chars and (
                chars < self.root_min_chars or not holds_root(node, self.flags_c, self.ntags)
            ):
                n = len(self.blocks)
                self.containers.append(self.new_container("boiler", 0, n, n, chars, tag, attrs, True))
                return False
        if boiler:
            opened = len(self.containers)
            self.containers.append(
                self.new_container("boiler", 0, len(self.blocks), -1, 0, tag, attrs, False)
            )
            if self.boiler < 0:
                self.boiler = opened
        elif tier:
            opened = len(self.containers)
            self.containers.append(
                self.new_container("root", tier, len(self.blocks), -1, 0, tag, attrs, False)
            )
        kind = self.kinds[tid]
        closing.outer = <PyObject *> self.kind
        closing.opened = opened
        closing.flags = flags
        closing.own_kind = kind is not None
        closing.mask_lo = self.mask_lo
        closing.mask_hi = self.mask_hi
        if kind is not None:
            self.kind = kind
            self.text.raw = kind == "pre"
        if flags & F_CELL and self.text.parts:
            gather_text(&self.text, <const unsigned char *> " | ", 3)
        self.mask_lo |= mask_lo
        self.mask_hi |= mask_hi
        self.opened_count += 1
        self.push_path(self.opened_count)
        return True

    cdef int push_path(self, Py_ssize_t number) except -1:
        cdef Py_ssize_t *grown
        cdef Py_ssize_t cap
        if self.depth == self.path_cap:
            cap = max(2 * self.path_cap, <Py_ssize_t> 64)
            grown = <Py_ssize_t *> realloc(self.path, cap * sizeof(Py_ssize_t))
            if grown == NULL:
                raise MemoryError()
            self.path = grown
            self.path_cap = cap
        self.path[self.depth] = number
        self.depth += 1
        return 0

    cdef int close_element(self, Open *closing) except -1:
        """What a structural element does after its children (``closing``: what :meth:`open_element` kept)."""
        cdef Container opened
        if (closing.flags & F_BLOCK or closing.own_kind) and self.text.parts:
            self.flush()
        self.kind = <str> <object> closing.outer
        self.text.raw = self.kind == "pre"
        self.mask_lo = closing.mask_lo
        self.mask_hi = closing.mask_hi
        self.depth -= 1
        if closing.opened >= 0:
            opened = self.containers[closing.opened]
            opened.end = len(self.blocks)
            if self.boiler == closing.opened:
                self.boiler = -1
        return 0
