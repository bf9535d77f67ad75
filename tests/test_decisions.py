"""The global phases' decisions, as the pure functions both engines call, tested without any engine."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from datapipe.dedup.components import (
    EDGE_BLOCK,
    LARGEST,
    ComponentTally,
    component_entry,
    edge_block,
    exact_removals,
    first_reason,
    line_removals,
    merge_decisions,
    minhash_removal,
    star_root,
)
from datapipe.dedup.graph import large_star, local_components, small_star
from datapipe.quality.cutoff import cutoff, cutoff_report, keys_array

refs = st.tuples(st.integers(0, 5), st.integers(0, 200))


@given(st.lists(refs, min_size=1, max_size=30, unique=True))
def test_exact_copies_keep_the_lowest_reference(group):
    removed = list(exact_removals(group))
    keep = min(group)
    assert sorted((s, d) for s, (d, _, _) in removed) == sorted(r for r in group if r != keep)
    assert all(reason == "dedup/exact" and survivor == keep for _, (_, reason, survivor) in removed)


def test_exact_removals_walk_a_one_pass_iterable_twice_safely():
    group = [(2, 5), (0, 9), (1, 1)]
    assert list(exact_removals(tuple(group))) == [
        (2, (5, "dedup/exact", (0, 9))),
        (1, (1, "dedup/exact", (0, 9))),
    ]


def test_line_occurrences_keep_the_first():
    occurrences = [(1, 3, 0), (0, 7, 2), (0, 7, 1)]
    assert list(line_removals(occurrences)) == [(1, (3, 0)), (0, (7, 2))]


def test_several_methods_are_named_by_the_first_reason_whose_kept_copy_survives():
    items = [(4, "dedup/minhash", (0, 1)), (4, "dedup/exact", (0, 1)), (5, "dedup/minhash", (0, 1))]
    assert sorted(merge_decisions(items)) == [(4, "dedup/exact", (0, 1)), (5, "dedup/minhash", (0, 1))]
    # the exact copy (0, 2) is in the same MinHash component, whose root (0, 1) removed it: (0, 2) is not kept,
    # so the document names the root (issue 39 item 9)
    items = [(4, "dedup/minhash", (0, 1)), (4, "dedup/exact", (0, 2)), (6, "dedup/exact", [0, 2])]
    assert sorted(merge_decisions(items)) == [(4, "dedup/minhash", (0, 1)), (6, "dedup/exact", (0, 2))]
    assert first_reason([("dedup/minhash", (0, 0)), ("other", (0, 0))]) == ("dedup/minhash", (0, 0))


def _rounds(edges, n):
    """The large-star/small-star rounds as an engine runs them, in memory."""
    directed = {(a, b) for a, b in edges} | {(b, a) for a, b in edges}
    for _ in range(n):
        for fn in (large_star, small_star):
            nbrs: dict = {}
            for a, b in directed:
                nbrs.setdefault(a, set()).add(b)
            directed = set()
            for node, ns in nbrs.items():
                for a, b in fn(node, ns):
                    directed |= {(a, b), (b, a)}
    nbrs = {}
    for a, b in directed:
        nbrs.setdefault(a, set()).add(b)
    return nbrs


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(refs, refs), min_size=1, max_size=40))
def test_star_roots_after_enough_rounds_are_union_find_roots(edges):
    edges = [(a, b) for a, b in edges if a != b]
    nbrs = _rounds(edges, 16)
    truth = local_components(edges)
    for node, ns in nbrs.items():
        root, converged = star_root(node, ns)
        assert converged and root == truth[node]
        if root != node:
            assert minhash_removal(node, root) == (node[0], (node[1], "dedup/minhash", root))


def test_star_root_reports_a_graph_not_yet_in_star_form():
    assert star_root((0, 5), {(0, 1), (0, 2)}) == ((0, 1), False)
    assert star_root((0, 5), {(0, 1)}) == ((0, 1), True)
    assert star_root((0, 1), {(0, 5), (0, 7)}) == ((0, 1), True)


def test_edge_blocks_follow_the_smaller_end():
    assert edge_block((3, EDGE_BLOCK + 1), (1, 2)) == (1, 0)
    assert edge_block((2, 2 * EDGE_BLOCK), (2, 2 * EDGE_BLOCK + 5)) == (2, 2)


def test_component_tally_is_the_same_in_any_split_and_order():
    rng = random.Random(7)
    nodes = [(s, d) for s in range(10) for d in range(400)]
    rng.shuffle(nodes)
    comps = []  # disjoint, as components are
    while len(comps) < 200:
        size = rng.randint(2, 30)
        comps.append(component_entry(nodes[:size]))
        nodes = nodes[size:]
    whole = ComponentTally()
    for c in comps:
        whole.add(c)
    parts = [ComponentTally() for _ in range(5)]
    shuffled = comps[:]
    rng.shuffle(shuffled)
    for i, c in enumerate(shuffled):
        parts[i % 5].add(c)
    merged = ComponentTally()
    for p in reversed(parts):
        merged.merge(p)
    assert merged.to_dict() == whole.to_dict()
    doc = whole.to_dict()
    assert sum(doc["histogram"].values()) == len(comps) and len(doc["largest"]) == LARGEST
    assert [c[0] for c in doc["largest"]] == sorted((c[0] for c in comps), reverse=True)[:LARGEST]
    assert all(int(k) >= 2 and int(k) & (int(k) - 1) == 0 for k in doc["histogram"])


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0, 1), st.integers(0, 2**64 - 1)),
        min_size=1,
        max_size=300,
        unique_by=lambda k: k[1],
    ),
    st.floats(0.01, 1.0),
    st.integers(1, 6),
)
def test_cutoff_is_the_exact_quantile_in_any_split(keys, fraction, parts):
    keys = [(round(s, 8), t) for s, t in keys]
    ordered = sorted(keys)
    want = ordered[min(len(keys) - 1, max(0, round((1 - fraction) * (len(keys) - 1))))]
    split = [keys_array(keys[i::parts]) for i in range(parts)]
    assert cutoff(split, fraction) == want
    assert cutoff([keys_array(keys)], fraction) == want
    kept = sum(1 for k in keys if k >= want)
    assert kept == len(keys) - ordered.index(want)


def test_cutoff_of_nothing_and_its_report():
    assert cutoff([keys_array([])], 0.5) is None
    assert cutoff_report([keys_array([])], 0.5) == {"keep_fraction": 0.5, "cutoff": None, "documents": 0}
    big = keys_array([(0.5, 2**64 - 1), (0.25, 3)])
    assert big.dtype.names == ("score", "tiebreak") and cutoff([big], 1.0) == (0.25, 3)
    assert cutoff_report([big], 0.4)["cutoff"] == [0.5, 2**64 - 1]  # rank round(0.6 * 1) = 1
