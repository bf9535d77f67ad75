"""The compiled helpers' build switch (``datapipe.kernels.leaf``): compiled without numba's reference counting,
and still reading and writing the arrays they are handed."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from datapipe.kernels.interned import Interned, fill, find, fnv
from datapipe.kernels.leaf import leaf


def test_a_leaf_is_compiled_without_the_runtime():
    """If a numba release stopped honouring ``_nrt=False``, an allocating leaf would compile; it must not."""

    @leaf
    def allocates(n):  # pragma: no cover - compiled
        scratch = np.zeros(n, dtype=np.int64)
        return scratch[0]

    # numba 0.61-0.68 refuse np.zeros there ("Only accept returning of array passed into the function"), a
    # slice copy at lowering ("NRT required but not enabled")
    with pytest.raises(
        numba.core.errors.NumbaError, match="NRT required|Only accept returning of array passed"
    ):
        allocates(3)


def test_a_leaf_reads_and_writes_what_it_is_handed_and_a_caller_with_the_runtime_calls_it():
    @leaf
    def add_into(a, b):  # pragma: no cover - compiled
        for i in range(len(a)):
            a[i] += b[i]
        return a[0]

    @numba.njit
    def caller(n):  # pragma: no cover - compiled
        a, b = np.ones(n, dtype=np.int64), np.arange(n)
        total = 0
        for _ in range(3):
            total += add_into(a, b)
        return a, total

    a, total = caller(5)
    assert a.tolist() == [1, 4, 7, 10, 13] and total == 3
    t = Interned(4, 16, 1)  # the interning table's helpers are leaves: filled and searched from Python
    words = [b"ab", b"c", b"ab"]
    joined = np.frombuffer(b"".join(words), dtype=np.uint8)
    fill(t.table, t.hashes, t.starts, t.arena, t.counts, joined, np.array([2, 1], dtype=np.int64))
    assert int(t.counts[0]) == 2
    data = np.frombuffer(b"xcab", dtype=np.uint8)
    assert find(t.table, t.hashes, t.starts, t.arena, data, 2, 4, np.uint64(fnv(data, 2, 4)))[0] == 0
    assert find(t.table, t.hashes, t.starts, t.arena, data, 1, 2, np.uint64(fnv(data, 1, 2)))[0] == 1
    assert find(t.table, t.hashes, t.starts, t.arena, data, 0, 1, np.uint64(fnv(data, 0, 1)))[0] == -1
