# cython: language_level=3
"""The walk's record of a block (:class:`Block`), an extension type: the compiled walk makes a page's ~180 blocks
and the compiled verdicts and block features read them, each field at its place in the record
(``cimport``: ``records.pxd``). Why not the dataclass it was: each field set or read from compiled code went
through Python's attribute lookup, ~30 ns (16 a block: six set by the walk, four read by the verdicts, six by the
features), ~85 us of a page's ~2 ms on Trafilatura's evaluation pages. From Python it is the dataclass it was:
the same constructor, fields, equality, ``repr`` and pickling.
"""

_DEFAULT_PATH = (-1, -1, -1, -1)


cdef class Block:
    """A run of text between block boundaries, with what the decision needs: its ``kind`` (``"p"``,
    ``"h1"``..``"h6"``, ``"li"``, ``"tr"``, ``"pre"``), ``text``, ``link_chars`` (of its characters, those in
    links), ``chars`` (its length), ``mask`` (the groups of tags and names around it,
    :mod:`datapipe.extract.signals`, for the block model) and ``path`` (the numbers of its four innermost
    structural elements, numbered as the walk opened them, innermost last, -1 for a level it does not have: which
    blocks share a parent, a grandparent, ...: the block model's regions)."""

    def __init__(
        self, str kind, str text, Py_ssize_t link_chars, Py_ssize_t chars, object mask=0, tuple path=_DEFAULT_PATH
    ):
        self.kind = kind
        self.text = text
        self.link_chars = link_chars
        self.chars = chars
        self.mask = mask
        self.path = path

    def _fields(self):
        return (self.kind, self.text, self.link_chars, self.chars, self.mask, self.path)

    def __eq__(self, other):
        if type(other) is not Block:
            return NotImplemented
        return self._fields() == (<Block> other)._fields()

    def __ne__(self, other):
        if type(other) is not Block:
            return NotImplemented
        return self._fields() != (<Block> other)._fields()

    __hash__ = None  # mutable, as the dataclass (eq without frozen)

    def __repr__(self):
        return (
            f"Block(kind={self.kind!r}, text={self.text!r}, link_chars={self.link_chars!r}, chars={self.chars!r}, "
            f"mask={self.mask!r}, path={self.path!r})"
        )

    def __reduce__(self):
        return (Block, self._fields())
