"""The compiled helpers' build switch (``datapipe.kernels.leaf``): compiled without numba's reference counting,
and still reading and writing the arrays they are handed."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numba
import numpy as np
import pytest

from datapipe.kernels.interned import Interned, fill, find, fnv
from datapipe.kernels.jit import leaf


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


def test_compiled_code_is_cached_in_a_folder_named_for_every_file_that_compiles(tmp_path):
    """A kernel carries the helpers of other files compiled into it, and numba's own cache checks only the kernel's
    file: the folder changes with any file that compiles something, not with the others. The stored tables'
    folder (``sources_digest``) changes with any file."""
    from datapipe.kernels.jit import _digests

    (tmp_path / "sub").mkdir()
    helper, caller, other = tmp_path / "sub" / "helper.py", tmp_path / "caller.py", tmp_path / "other.py"
    helper.write_text("@leaf\ndef f(a):\n    return a[0]\n")
    caller.write_text("@kernel\ndef g(a):\n    return f(a)\n")
    other.write_text("X = 1\n")
    compiled, every = _digests.__wrapped__(tmp_path)
    other.write_text("X = 2\n")
    assert _digests.__wrapped__(tmp_path)[0] == compiled  # nothing compiled changed
    assert _digests.__wrapped__(tmp_path)[1] != every  # a table's builder may be in any file
    helper.write_text("@leaf\ndef f(a):\n    return a[1]\n")
    assert _digests.__wrapped__(tmp_path)[0] != compiled  # the caller's cache must not be reused


def test_a_kernel_is_cached_there_and_other_libraries_numba_caches_are_left_alone():
    from datapipe.kernels.jit import cache_dir, kernel

    before = numba.config.CACHE_DIR

    @kernel
    def twice(a):  # pragma: no cover - compiled
        return 2 * a[0]

    assert before == numba.config.CACHE_DIR
    assert twice(np.array([21])) == 42
    folder = Path(cache_dir())
    assert folder.name.startswith("numba-") or os.environ.get("NUMBA_CACHE_DIR")
    assert any("twice" in p.name for p in folder.rglob("*.nbi"))


def test_every_compiled_function_goes_through_the_jit_module():
    """Only datapipe/kernels/jit.py calls numba's compiler: any other would cache beside its file (stale when a
    helper it calls changes) and escape the digest."""
    root = Path(__file__).resolve().parents[1] / "datapipe"
    direct = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if p.name != "jit.py"
        and re.search(r"numba\.(c?jit|njit|vectorize)|from numba import|@njit", p.read_text())
    ]
    assert direct == []
