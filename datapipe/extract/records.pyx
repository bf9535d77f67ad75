# cython: language_level=3
"""The walk's records of a page: :class:`Block` and :class:`Container`, extension types. The compiled walk makes a
page's ~180 blocks and ~100 containers and the compiled verdicts and block features read them, each field at its
place in the record (``cimport``: ``records.pxd``, where :func:`set_block` and :func:`set_container` write every
field, for ``__init__`` and for the walk). Why not the dataclasses they were: each field set or read from
compiled code went through Python's attribute lookup, ~30 ns (16 a block: six set by the walk, four read by the
verdicts, six by the features; ~20 a container), ~150 us of a page's ~2 ms on Trafilatura's evaluation pages.
From Python each is the dataclass it was (:class:`Record`): the same constructor, fields, equality, ``repr`` and
pickling.
"""

_DEFAULT_PATH = (-1, -1, -1, -1)


cdef class Record:
    """What a dataclass gave the records, from their :attr:`FIELDS` in order: equality of the same type's fields,
    no hash (mutable), ``repr`` and pickling by the constructor."""

    FIELDS = ()

    def _fields(self):
        """The fields in order, as ``dataclasses.astuple`` gave them."""
        return tuple([getattr(self, name) for name in self.FIELDS])

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self._fields() == other._fields()

    def __ne__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self._fields() != other._fields()

    __hash__ = None  # mutable, as a dataclass with eq and not frozen

    def __repr__(self):
        fields = ", ".join(f"{name}={value!r}" for name, value in zip(self.FIELDS, self._fields()))
        return f"{type(self).__name__}({fields})"

    def __reduce__(self):
        return (type(self), self._fields())


cdef class Block(Record):
    """A run of text between block boundaries, with what the decision needs: its ``kind`` (``"p"``,
    ``"h1"``..``"h6"``, ``"li"``, ``"tr"``, ``"pre"``), ``text``, ``link_chars`` (of its characters, those in
    links), ``chars`` (its length), ``mask`` (the groups of tags and names around it,
    :mod:`datapipe.extract.signals`, for the block model) and ``path`` (the numbers of its four innermost
    structural elements, numbered as the walk opened them, innermost last, -1 for a level it does not have: which
    blocks share a parent, a grandparent, ...: the block model's regions)."""

    FIELDS = ("kind", "text", "link_chars", "chars", "mask", "path")

    def __init__(
        self, str kind, str text, Py_ssize_t link_chars, Py_ssize_t chars, object mask=0, tuple path=_DEFAULT_PATH
    ):
        set_block(self, kind, text, link_chars, chars, mask, path)


cdef class Container(Record):
    """An element whose blocks are judged together: boilerplate by name (``kind`` "boiler"), a root candidate
    (``kind`` "root", ``tier`` 1-3) or a part named a teaser (kind "root", :data:`datapipe.extract.names.TEASER_TIER`),
    as the range of blocks it holds (``start`` to ``end``, -1 while open), with its characters (``chars``), its
    ``tag`` and ``attrs``, whether the walk left it unread (``skipped``: its text measured, not visited) and, of
    its characters, those in links (``link_chars``, set by :func:`datapipe.extract.rules.decide`)."""

    FIELDS = ("kind", "tier", "start", "end", "chars", "tag", "attrs", "skipped", "link_chars")

    def __init__(
        self,
        str kind,
        int tier,
        Py_ssize_t start,
        Py_ssize_t end=-1,
        Py_ssize_t chars=0,
        str tag="",
        object attrs=None,
        bint skipped=False,
        Py_ssize_t link_chars=0,
    ):
        set_container(self, kind, tier, start, end, chars, tag, attrs, skipped, link_chars)

    @property
    def name(self):
        """Tag, role, id and class (``div@navigation#menu.main-nav|top``): what the audit shows. Written only
        when asked for: most containers hold no kept-or-dropped block worth naming."""
        out = self.tag
        if self.attrs:
            for key, mark in (("role", "@"), ("id", "#"), ("class", ".")):
                value = self.attrs.get(key)
                if value:
                    out += mark + "|".join(value.split())
        return out
