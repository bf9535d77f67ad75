"""Keyed permutations and per-block mixture counts."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datapipe.data.permutation import BlockShuffle, FeistelPermutation, block_counts, derive_key
from tests.conftest import REPO


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 20_000), key=st.integers(0, 2**64 - 1))
def test_feistel_is_a_bijection(n, key):
    out = FeistelPermutation(n, key).apply(np.arange(n))
    assert np.array_equal(np.sort(out), np.arange(n))


@settings(max_examples=3, deadline=None)
@given(n=st.integers(1_000_000, 10_000_000), key=st.integers(0, 2**64 - 1))
def test_feistel_is_a_bijection_at_scale(n, key):
    out = FeistelPermutation(n, key).apply(np.arange(n))
    assert np.array_equal(np.bincount(out, minlength=n), np.ones(n, dtype=np.int64))


def test_small_domains_and_range_check():
    assert FeistelPermutation(1, 5).apply(np.arange(1)).tolist() == [0]
    assert sorted(FeistelPermutation(2, 5).apply(np.arange(2)).tolist()) == [0, 1]
    with pytest.raises(IndexError):
        FeistelPermutation(10, 1).apply([10])


def test_different_keys_differ_and_it_shuffles():
    n = 100_000
    a = FeistelPermutation(n, derive_key(1, 0)).apply(np.arange(n))
    b = FeistelPermutation(n, derive_key(2, 0)).apply(np.arange(n))
    assert (a != b).mean() > 0.99
    # neighbours land far apart and the order is not close to the identity
    assert np.median(np.abs(np.diff(a))) > n / 10
    assert abs(np.corrcoef(np.arange(n), a)[0, 1]) < 0.02


def test_same_key_same_order_in_a_new_process():
    code = (
        f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
        "from datapipe.data.permutation import FeistelPermutation, derive_key\n"
        "import numpy as np\n"
        "print(FeistelPermutation(123457, derive_key(42, 3)).apply(np.arange(0, 123457, 997)).tolist())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    here = FeistelPermutation(123457, derive_key(42, 3)).apply(np.arange(0, 123457, 997)).tolist()
    assert out.strip() == str(here)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 5_000), key=st.integers(0, 2**32), block=st.integers(1, 64), window=st.integers(1, 8))
def test_block_shuffle_is_a_bijection(n, key, block, window):
    out = BlockShuffle(n, key, block, window).apply(np.arange(n))
    assert np.array_equal(np.sort(out), np.arange(n))


def test_block_shuffle_keeps_reads_local():
    s = BlockShuffle(1_000_000, 7, block=64, window=8)
    out = s.apply(np.arange(512))  # the first window: 8 blocks of 64 rows
    assert len(np.unique(out // 64)) == 8


def test_block_counts_largest_remainder():
    counts = block_counts({"web": 700, "code": 23, "math": 34.0, "wiki": 3.65}, 2048)
    assert sum(counts.values()) == 2048
    total = 700 + 23 + 34 + 3.65
    for name, w in {"web": 700, "code": 23, "math": 34.0, "wiki": 3.65}.items():
        assert abs(counts[name] - w / total * 2048) < 1
    with pytest.raises(ValueError, match="'tiny'"):
        block_counts({"big": 1.0, "tiny": 1e-6}, 2048)
