"""Compiled span comparison for the open-addressing tables that confirm a matching hash element by element
(``datapipe.filters.gopher``'s n-gram tables, ``datapipe.kernels.fasttext``'s word table): a hash picks the
candidate, this decides, so no collision can merge two different spans."""

from __future__ import annotations

from datapipe.kernels.jit import leaf


@leaf
def same_span(a, i, b, j, n):  # pragma: no cover - compiled
    """``a[i:i + n] == b[j:j + n]``, element by element, without slicing."""
    for k in range(n):  # noqa: SIM110 - numba compiles the loop, not all() over a generator
        if a[i + k] != b[j + k]:
            return False
    return True
