"""Candidate pairs, connected components and survivors, as per-key functions a dataflow engine can run.

Documents are referred to by ``(shard index, document index)`` tuples, which order them deterministically: the
survivor of a component is its lowest reference. Components are found with the large-star / small-star rounds of
Kiveris et al. (2014): each round groups edges by node and rewrites every node's neighbourhood to point at the
smallest node it knows, so no worker ever holds more than one node's edges, and after O(log n) rounds every
component is a star around its minimum.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from datapipe.kernels.jit import kernel

Ref = tuple[int, int]


def bucket_pairs(members: Iterable[tuple[Ref, int]], max_pairs_bucket: int) -> Iterator[tuple[Ref, Ref]]:
    """Candidate pairs from one LSH bucket: ``members`` are ``(ref, content)`` in any order and with repeats
    (taken sorted and distinct, so every engine pairs the same way), where equal ``content`` keys mean identical
    shingle sets (Jaccard 1).

    Members with the same content are joined to the first of them, and only those firsts pair up: copies of a page
    (many in a crawl, and in the e2e benchmark's larger sizes) then add one pair each instead of making the bucket
    quadratic. Up to ``max_pairs_bucket`` firsts every pair is a candidate; beyond that a star around the first
    plus a chain through the rest, enough to connect them once verified while the pairs stay linear in the bucket.
    Whatever the copies, the members end up connected exactly when they were with every pair a candidate.
    """
    firsts: dict[int, Ref] = {}
    reps: list[Ref] = []
    for ref, content in sorted(set(members)):
        first = firsts.get(content)
        if first is None:
            firsts[content] = ref
            reps.append(ref)
        else:
            yield first, ref
    n = len(reps)
    if n <= max_pairs_bucket:
        for i in range(n):
            for j in range(i + 1, n):
                yield reps[i], reps[j]
        return
    first = reps[0]
    for j in range(1, n):
        yield first, reps[j]
        if j + 1 < n:
            yield reps[j], reps[j + 1]


def large_star(node: Ref, neighbours: Iterable[Ref]) -> Iterator[tuple[Ref, Ref]]:
    """Connect every larger neighbour to the smallest node of the neighbourhood (node included)."""
    nbrs = set(neighbours)
    m = min(nbrs | {node})
    for v in nbrs:
        if v > node:
            yield v, m


def small_star(node: Ref, neighbours: Iterable[Ref]) -> Iterator[tuple[Ref, Ref]]:
    """Connect the node and its smaller neighbours to the smallest of them."""
    smaller = {v for v in neighbours if v <= node} | {node}
    m = min(smaller)
    for v in smaller:
        if v != m:
            yield v, m


def local_components(edges: Iterable[tuple[Ref, Ref]]) -> dict[Ref, Ref]:
    """Union-find: node -> its component's smallest node, for every node on an edge (a reference for tests)."""
    parent: dict[Ref, Ref] = {}

    def find(x: Ref) -> Ref:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            lo, hi = min(ra, rb), max(ra, rb)
            parent[hi] = lo
    return {x: find(x) for x in list(parent)}


@kernel
def smallest_connected(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """Union-find over nodes ``0 .. n-1`` and the edges ``(a[i], b[i])`` (int64 arrays): for each node, the smallest
    node of its component. What the global phase's one components task runs (:mod:`datapipe.dedup.spill`), compiled:
    scipy's ``connected_components`` did the same in a few ms but cost that task 0.1 s of importing
    ``scipy.sparse`` and ``scipy.linalg`` first (2026-12-05), while every other process of a small build waited.

    A root is always the smallest node of its tree (two roots join under the smaller), so every parent is a smaller
    node, and one pass in increasing order leaves each node pointing at its root."""
    parent = np.arange(n)
    for i in range(a.shape[0]):
        x = a[i]
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        y = b[i]
        while parent[y] != y:
            parent[y] = parent[parent[y]]
            y = parent[y]
        if x < y:
            parent[y] = x
        elif y < x:
            parent[x] = y
    for x in range(n):
        parent[x] = parent[parent[x]]
    return parent
