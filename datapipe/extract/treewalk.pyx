# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The tree walk of datapipe's main-content extractor, compiled: lexbor's nodes read as C structs.

Why compiled: walking the tree through selectolax's Python objects cost 1.10 ms of a page's 1.91 ms on
Trafilatura's 990 evaluation pages (a Python object, a property read and a dictionary lookup per node, ~1,750
nodes a page); reading lexbor's structs directly walks the same nodes in a fraction of that (figures in
:mod:`datapipe.extract.content`). What the walk produces, and every rule about a block, stays in Python: this
module only moves text. It calls back into :mod:`datapipe.extract.content` for a class or id's verdict
(``classify_name``), for a block made of the text it gathered (``make_block``) and for a named container.

Built by ``python -m datapipe.extract.build`` (``make venv`` runs it) against the headers of the exact selectolax
release installed: the node, element, attribute and text structs are read by their C layout, which only that
release's lexbor defines. :data:`BUILT_FOR` names it; :mod:`datapipe.extract.content` refuses a mismatch.
"""

from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport uintptr_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy


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
        lxb_dom_node_t *next
        lxb_dom_node_t *parent
        lxb_dom_node_t *first_child
        int type
    int LXB_DOM_NODE_TYPE_ELEMENT
    int LXB_DOM_NODE_TYPE_TEXT

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
    uintptr_t LXB_DOM_ATTR__LAST_ENTRY

cdef extern from "lexbor/dom/interfaces/element.h":
    ctypedef struct lxb_dom_element_t:
        lxb_dom_attr_t *first_attr

cdef extern from "lexbor/tag/const.h":
    uintptr_t LXB_TAG__LAST_ENTRY

BUILT_FOR = DATAPIPE_SELECTOLAX.decode()
TAGS = LXB_TAG__LAST_ENTRY

# what a tag is to the walk (the table's values)
cdef enum:
    INLINE = 1
    STRUCTURAL = 2
    LINK = 3
    BREAK = 4
    SKIP = 5
# flags of a structural tag
cdef enum:
    F_BLOCK = 1  # starts and ends a block
    F_BOILER = 2  # boilerplate by its tag (nav, aside, footer, ...)
    F_CELL = 4  # a table cell: " | " between cells
    F_ARTICLE = 8  # a content-root candidate of the second tier
    F_MAIN = 16  # ... of the third
    F_WRAPPER = 32  # never text, unless it wraps most of the page (a <form> around an ASP.NET page)


cdef struct Open:  # an element the walk is inside of: its children are being read
    lxb_dom_node_t *node
    unsigned char mode  # INLINE, LINK or STRUCTURAL


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


cdef inline lxb_dom_node_t *following(lxb_dom_node_t *node, lxb_dom_node_t *top) noexcept:
    """The node after ``node`` in document order within ``top``'s subtree, its children skipped (NULL at the end).
    Iterative, as lexbor's own walks: a page nested 100,000 deep must not overflow the C stack."""
    while node != top and node.next == NULL:
        node = node.parent
    return NULL if node == top else node.next


cdef int gather(lxb_dom_node_t *top, Buf *b) except -1:
    """The text of every text node under ``top``, in order (selectolax's ``node.text(deep=True)``)."""
    cdef lxb_dom_node_t *node = top.first_child
    cdef lxb_dom_character_data_t *t
    while node != NULL:
        if node.type == LXB_DOM_NODE_TYPE_TEXT:
            t = <lxb_dom_character_data_t *> node
            if t.data.data != NULL:
                buf_add(b, t.data.data, t.data.length)
        if node.first_child != NULL:
            node = node.first_child
        else:
            node = following(node, top)
    return 0


cpdef str deep_text(uintptr_t address):
    """All text under the node at ``address`` (a ``LexborNode.mem_id``), as ``node.text(deep=True)``."""
    return _deep_text(<lxb_dom_node_t *> address)


cdef str _deep_text(lxb_dom_node_t *node):
    cdef Buf b
    b.data = NULL
    b.size = b.cap = 0
    try:
        gather(node, &b)
        return PyUnicode_DecodeUTF8(b.data, b.size, "replace") if b.size else ""
    finally:
        free(b.data)


cdef inline bint ascii_blank(const unsigned char *s, size_t n) noexcept:
    """Only HTML's ASCII whitespace (selectolax's ``is_empty_text_node``)."""
    cdef size_t i
    for i in range(n):
        if s[i] != 32 and s[i] != 9 and s[i] != 10 and s[i] != 12 and s[i] != 13:
            return False
    return True


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
    cdef lxb_dom_node_t *node = top.first_child
    if is_root(top, flags, ntags):
        return True
    while node != NULL:
        if is_root(node, flags, ntags):
            return True
        if node.first_child != NULL:
            node = node.first_child
        else:
            node = following(node, top)
    return False


cdef class Walk:
    """One pass over a page's tree: its blocks in document order and its named containers as block ranges
    (the record :func:`datapipe.extract.content.decide` reads; see that module for what each rule means)."""

    cdef bytes what, flags
    cdef const unsigned char *what_c
    cdef const unsigned char *flags_c
    cdef size_t ntags
    cdef tuple names, kinds
    cdef object rules
    cdef object classify, make_block, container, hidden_style, roles
    cdef double skip_share, wrapper_share
    cdef Py_ssize_t root_min_chars
    cdef public list blocks, containers
    cdef list parts
    cdef Py_ssize_t link_chars, link, boiler, page_chars
    cdef str kind

    def __init__(self, rules):
        self.rules = rules
        self.what = rules.what
        self.flags = rules.flags
        self.what_c = self.what
        self.flags_c = self.flags
        self.ntags = len(self.what)
        self.names = rules.names
        self.kinds = rules.kinds
        self.classify = rules.classify
        self.make_block = rules.make_block
        self.container = rules.container
        self.hidden_style = rules.hidden_style
        self.roles = rules.roles
        self.skip_share = rules.skip_share
        self.wrapper_share = rules.wrapper_share
        self.root_min_chars = rules.root_min_chars
        self.blocks = []
        self.containers = []
        self.parts = []
        self.link_chars = 0
        self.link = 0
        self.boiler = -1
        self.page_chars = 0
        self.kind = "p"

    def run(self, uintptr_t address):
        """Walk the children of the node at ``address`` (the ``mem_id`` of a live ``LexborNode``: its tree must
        outlive the call), then close the last block."""
        self.page_chars = self.text_chars(<lxb_dom_node_t *> address)
        self.walk(<lxb_dom_node_t *> address)
        self.flush()

    cdef Py_ssize_t text_chars(self, lxb_dom_node_t *node) except -1:
        """Characters of text under ``node``, outer whitespace not counted: what "the page's text" and "a part's
        share of it" mean. Scripts' and styles' text counts too: measured without it, the rules that use a share
        (tuned with it) kept 5 more boilerplate snippets on the tuning pages and one fewer of the article's."""
        return len(_deep_text(node).strip())

    cdef int flush(self) except -1:
        cdef object block
        if self.parts:
            block = self.make_block(self.kind, "".join(self.parts), self.link_chars)
            if block is not None:
                self.blocks.append(block)
            self.parts = []
            self.link_chars = 0
        return 0

    cdef bint hides(self, lxb_dom_attr_t *attr) except -1:
        """Whether the attribute hides its element: ``hidden``, ``aria-hidden="true"``, or a style with
        ``display:none`` or ``visibility:hidden`` (the regular expression only where a substring test found a
        candidate)."""
        cdef object style
        if attr.node.local_name == LXB_DOM_ATTR_STYLE:
            style = value_of(attr)
            return bool(style and ("none" in style or "hidden" in style) and self.hidden_style(style))
        return attr.node.local_name > LXB_DOM_ATTR__LAST_ENTRY and (
            attr_is(attr, "hidden", 6) or (attr_is(attr, "aria-hidden", 11) and value_is(attr, "true", 4))
        )

    cdef bint hidden(self, lxb_dom_node_t *node) except -1:
        """Whether an attribute of the element hides it."""
        cdef lxb_dom_attr_t *attr = (<lxb_dom_element_t *> node).first_attr
        while attr != NULL:
            if self.hides(attr):
                return True
            attr = attr.next
        return False

    cdef int walk(self, lxb_dom_node_t *top) except -1:
        """Every node under ``top`` in document order, iteratively: an explicit stack of the open inline, link and
        structural elements, not the C stack, so that a page nested as deep as lexbor parses it (5,000 elements,
        or 100,000) is read as a shallow one is, never flattened to one run of text (the recursive walk did that
        below 256 levels: a table of contents came out as one line)."""
        cdef Open *stack = NULL
        cdef Open *grown
        cdef Py_ssize_t size = 0, cap = 0
        cdef list closing = []  # per open structural element: what closing it needs (see open_element)
        cdef lxb_dom_node_t *child = top.first_child
        cdef lxb_dom_node_t *parent
        cdef lxb_dom_character_data_t *t
        cdef unsigned char what, mode
        cdef uintptr_t tid
        cdef str text
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
                        self.close_element(closing.pop())
                    child = parent.next
                    continue
                if child.type == LXB_DOM_NODE_TYPE_TEXT:
                    t = <lxb_dom_character_data_t *> child
                    if t.data.data != NULL and t.data.length and not (
                        not self.parts and ascii_blank(t.data.data, t.data.length)
                    ):
                        text = PyUnicode_DecodeUTF8(<char *> t.data.data, t.data.length, "replace")
                        if self.parts or not text.isspace():
                            self.parts.append(text)
                            if self.link:
                                self.link_chars += len(text.strip())
                    child = child.next
                    continue
                if child.type != LXB_DOM_NODE_TYPE_ELEMENT:
                    child = child.next
                    continue
                tid = child.local_name
                what = self.what_c[tid] if tid < self.ntags else INLINE
                if what == INLINE or what == LINK:
                    if (<lxb_dom_element_t *> child).first_attr != NULL and self.hidden(child):
                        child = child.next  # a hidden caption or word, as a hidden block is not read
                        continue
                    if what == LINK:
                        self.link += 1
                    mode = what
                elif what == STRUCTURAL:
                    if not self.open_element(child, tid, closing):
                        child = child.next
                        continue
                    mode = STRUCTURAL
                else:
                    if what == BREAK:
                        self.parts.append("\x00")
                    child = child.next
                    continue
                if size == cap:
                    cap = max(2 * cap, <Py_ssize_t> 64)
                    grown = <Open *> realloc(stack, cap * sizeof(Open))
                    if grown == NULL:
                        raise MemoryError()
                    stack = grown
                stack[size].node = child
                stack[size].mode = mode
                size += 1
                child = child.first_child
        finally:
            free(stack)

    cdef bint open_element(self, lxb_dom_node_t *node, uintptr_t tid, list closing) except -1:
        """What a structural element does before its children; False when they are not to be read (hidden, a
        wrapper of little text, boilerplate decided here). When they are, what closing it needs goes on
        ``closing``: the block kind outside it, its container, its flags and its own kind."""
        cdef lxb_dom_attr_t *attr = (<lxb_dom_element_t *> node).first_attr
        cdef lxb_dom_attr_t *cls = NULL
        cdef lxb_dom_attr_t *ident = NULL
        cdef lxb_dom_attr_t *role = NULL
        cdef bint boiler = False
        cdef bint body = False
        cdef int tier = 0
        cdef unsigned char flags = self.flags_c[tid]
        cdef str tag = self.names[tid]
        cdef object kind, opened = None, verdict, role_value = None, attrs = None
        cdef Py_ssize_t chars, n
        if flags & F_WRAPPER and self.text_chars(node) < self.wrapper_share * self.page_chars:
            return False
        while attr != NULL:
            if attr.node.local_name == LXB_DOM_ATTR_CLASS:
                cls = attr
            elif attr.node.local_name == LXB_DOM_ATTR_ID:
                ident = attr
            elif self.hides(attr):
                return False
            elif attr.node.local_name > LXB_DOM_ATTR__LAST_ENTRY:
                if attr_is(attr, "role", 4):
                    role = attr
                elif attr_is(attr, "itemprop", 8) and value_is(attr, "articleBody", 11):
                    body = True
            attr = attr.next
        if cls != NULL or ident != NULL or role != NULL:
            attrs = {}
            if cls != NULL:
                attrs["class"] = value_of(cls)
            if ident != NULL:
                attrs["id"] = value_of(ident)
            if role != NULL:
                attrs["role"] = role_value = value_of(role)
            name = " ".join([v for v in (attrs.get("class"), attrs.get("id")) if v])
            if name:
                verdict = self.classify(name)
                boiler = verdict[0]
                tier = verdict[1]
            if role_value:
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
        if flags & F_BLOCK and self.parts:
            self.flush()
        if boiler and self.boiler < 0 and self.page_chars:
            # the common case decided in C: a part named as boilerplate, well short of most of the page's text and
            # holding no article, is not visited (a third of a page's elements, typically)
            chars = self.text_chars(node)
            if chars < self.skip_share * self.page_chars and (
                chars < self.root_min_chars or not holds_root(node, self.flags_c, self.ntags)
            ):
                n = len(self.blocks)
                self.containers.append(self.container("boiler", 0, n, n, chars, tag, attrs, True))
                return False
        if boiler:
            opened = self.container("boiler", 0, len(self.blocks), -1, 0, tag, attrs, False)
            self.containers.append(opened)
            if self.boiler < 0:
                self.boiler = len(self.containers) - 1
        elif tier:
            opened = self.container("root", tier, len(self.blocks), -1, 0, tag, attrs, False)
            self.containers.append(opened)
        kind = self.kinds[tid]
        outer = self.kind
        if kind is not None:
            self.kind = kind
        if flags & F_CELL and self.parts:
            self.parts.append(" | ")
        closing.append((outer, opened, flags, kind))
        return True

    cdef int close_element(self, tuple closing) except -1:
        """What a structural element does after its children (``closing``: what :meth:`open_element` kept)."""
        cdef object outer = closing[0], opened = closing[1], kind = closing[3]
        cdef unsigned char flags = closing[2]
        if (flags & F_BLOCK or kind is not None) and self.parts:
            self.flush()
        self.kind = outer
        if opened is not None:
            opened.end = len(self.blocks)
            if self.boiler >= 0 and self.containers[self.boiler] is opened:
                self.boiler = -1
        return 0
