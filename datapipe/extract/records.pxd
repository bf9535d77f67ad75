# The walk's records of a page, as the compiled modules read and write them (records.pyx says why).

cdef class Record:
    pass


cdef class Block(Record):
    cdef public str kind
    cdef public str text
    cdef public Py_ssize_t link_chars
    cdef public Py_ssize_t chars
    cdef public object mask
    cdef public tuple path


cdef class Container(Record):
    cdef public str kind
    cdef public int tier
    cdef public Py_ssize_t start
    cdef public Py_ssize_t end
    cdef public Py_ssize_t chars
    cdef public str tag
    cdef public object attrs
    cdef public bint skipped
    cdef public Py_ssize_t link_chars


cdef inline Block set_block(
    Block b, str kind, str text, Py_ssize_t link_chars, Py_ssize_t chars, object mask, tuple path
):
    """Every field of ``b`` (its ``__init__``, and the walk's blocks made without one)."""
    b.kind = kind
    b.text = text
    b.link_chars = link_chars
    b.chars = chars
    b.mask = mask
    b.path = path
    return b


cdef inline Container set_container(
    Container c, str kind, int tier, Py_ssize_t start, Py_ssize_t end, Py_ssize_t chars, str tag, object attrs,
    bint skipped, Py_ssize_t link_chars,
):
    """Every field of ``c`` (its ``__init__``, and the walk's containers made without one)."""
    c.kind = kind
    c.tier = tier
    c.start = start
    c.end = end
    c.chars = chars
    c.tag = tag
    c.attrs = attrs
    c.skipped = skipped
    c.link_chars = link_chars
    return c
