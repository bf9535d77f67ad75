"""Candidate pairs, connected components and survivors, as per-key functions a dataflow engine can run.

Documents are referred to by ``(shard index, document index)`` tuples, which order them deterministically: the
survivor of a component is its lowest reference. Components are found with the large-star / small-star rounds of
Kiveris et al. (2014): each round groups edges by node and rewrites every node's neighbourhood to point at the
smallest node it knows, so no worker ever holds more than one node's edges, and after O(log n) rounds every
component is a star around its minimum.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

Ref = tuple[int, int]


def bucket_pairs(members: list[Ref], max_pairs_bucket: int) -> Iterator[tuple[Ref, Ref]]:
    """Candidate pairs from one LSH bucket (members sorted, distinct).

    Up to ``max_pairs_bucket`` members every pair is a candidate; a larger bucket (many copies of one page) gives a
    star around its first member plus a chain through the rest, enough to connect them once verified while the
    number of pairs stays linear in the bucket size.
    """
    n = len(members)
    if n <= max_pairs_bucket:
        for i in range(n):
            for j in range(i + 1, n):
                yield members[i], members[j]
        return
    first = members[0]
    for j in range(1, n):
        yield first, members[j]
        if j + 1 < n:
            yield members[j], members[j + 1]


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
