# The walk's record of a block, as the compiled modules read it (records.pyx says why).

cdef class Block:
    cdef public str kind
    cdef public str text
    cdef public Py_ssize_t link_chars
    cdef public Py_ssize_t chars
    cdef public object mask
    cdef public tuple path


cdef class Container:
    cdef public str kind
    cdef public int tier
    cdef public Py_ssize_t start
    cdef public Py_ssize_t end
    cdef public Py_ssize_t chars
    cdef public str tag
    cdef public object attrs
    cdef public bint skipped
    cdef public Py_ssize_t link_chars
