"""The decisions of the dedup global phases, as pure functions both engines call (Beam's transforms in
``pipelines/beam/dedup.py``, datatrove's steps in ``pipelines/datatrove/steps.py``).

An engine groups keys (text hashes, band keys, line hashes), runs the connected-components rounds and writes
files; everything it decides about a document is decided here:

* which copy of an exact duplicate survives (the lowest reference) and which are removed (:func:`exact_removals`);
* which line occurrence survives (the first) (:func:`line_removals`);
* a node's component root once the components are in star form, and whether they are (:func:`star_root`);
* the removal a MinHash component makes of each non-root member (:func:`minhash_removal`);
* which reason names a document several methods removed (:func:`merge_decisions`, in ``REASON_ORDER``);
* whether a verified candidate pair is an edge, and its weight (:func:`edge_weight`);
* which block of the edge files a verified edge goes to (:func:`edge_block`);
* the component report: the size histogram in powers of two and the largest components (:class:`ComponentTally`,
  :func:`component_report`), and the run's figures as it lists them (:func:`report_figures`).

Documents are ``(shard index, document index)`` references (lines add a line index), which order them
deterministically; the survivor of a component is its lowest reference, the same whichever engine finds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

Ref = tuple[int, int]
LineRef = tuple[int, int, int]
Removal = tuple[int, tuple[object, ...]]  # (input shard, the decision its removal list holds)

EDGE_BLOCK = 64  # kept edges are written per (shard, block of 64 documents) of their smaller end
LARGEST = 10  # components the report lists
EXACT, MINHASH = "dedup/exact", "dedup/minhash"
REASON_ORDER = (EXACT, MINHASH)  # when several methods remove the same document, the first of these names it


def exact_removals(refs: Iterable[Ref]) -> Iterator[Removal]:
    """Of the references that share one text hash, every one but the lowest: ``(shard, (doc, reason, survivor))``.

    ``refs`` is walked twice and never stored (an engine's grouped values may be a lazy iterable)."""
    keep = min(refs)
    for ref in refs:
        if ref != keep:
            yield ref[0], (ref[1], EXACT, keep)


def line_removals(refs: Iterable[LineRef]) -> Iterator[Removal]:
    """Of the occurrences of one line hash, every one but the first: ``(shard, (doc, line))``."""
    first = min(refs)
    for ref in refs:
        if ref != first:
            yield ref[0], (ref[1], ref[2])


def star_root(node: Ref, neighbours: set[Ref]) -> tuple[Ref, bool]:
    """The root of ``node``'s component from its neighbourhood after the large-star/small-star rounds, and whether
    the graph is in star form there (every node but a root has exactly one neighbour, its root); when it is not,
    the rounds were too few and the phase must run again with more."""
    root = min(neighbours | {node})
    return root, root == node or len(neighbours) == 1


def minhash_removal(node: Ref, root: Ref) -> Removal:
    """A component member that is not its root is removed in favour of the root."""
    return node[0], (node[1], MINHASH, root)


def first_reason(decisions: Iterable[tuple[str, object]]) -> tuple[str, object]:
    """Of several ``(reason, survivor)`` decisions for one document, the one whose reason comes first."""
    return min(
        decisions, key=lambda d: (REASON_ORDER.index(d[0]) if d[0] in REASON_ORDER else len(REASON_ORDER), d)
    )


def merge_decisions(items: Iterable[tuple[int, str, Any]]) -> list[tuple[int, str, Any]]:
    """One shard's ``(doc, reason, survivor)`` decisions with one per document: a document removed by several
    methods is named by the first in ``REASON_ORDER`` whose survivor is kept.

    Exact copies share their shingles, so a document that both methods removed is in one MinHash component with
    its exact group's lowest copy; when that copy is not the component's root, MinHash removed it too, and the
    document's recorded kept copy must be the root, which survives (issue 39: a kept copy is always kept)."""
    by_doc: dict[int, list[tuple[str, object]]] = {}
    for doc, reason, survivor in items:
        by_doc.setdefault(doc, []).append((reason, tuple(survivor)))
    out = []
    for doc, decisions in by_doc.items():
        roots = {survivor for reason, survivor in decisions if reason == MINHASH}
        kept = [d for d in decisions if d[0] == MINHASH or not roots or d[1] in roots]
        out.append((doc, *first_reason(kept)))
    return out


def chained_reason(reason: str, earlier_reason: str) -> str:
    """The reason a document is removed for when its kept copy was itself removed (by an earlier build) for
    ``earlier_reason`` in favour of a third: an exact copy of an exact copy is exact; a chain with a near copy in
    it is near (the same as one build of both finds, where all three are in one MinHash component)."""
    return max(reason, earlier_reason, key=REASON_ORDER.index)


def edge_weight(jaccard: float, threshold: float) -> float | None:
    """A verified candidate pair is an edge when its exact Jaccard reaches ``threshold``; its recorded weight is
    the Jaccard to 4 decimals (None: no edge)."""
    return round(jaccard, 4) if jaccard >= threshold else None


def edge_block(a: Ref, b: Ref) -> tuple[int, int]:
    """The (shard, block) whose edge file holds the edge ``a``-``b``: that of its smaller end."""
    lo = min(a, b)
    return lo[0], lo[1] // EDGE_BLOCK


def size_bucket(size: int) -> int:
    """The histogram bucket of a component size: the power of two at or above it."""
    return 1 << max(0, (size - 1).bit_length())


def _largest_key(component: tuple[int, list[list[int]]]) -> tuple[int, list[int]]:
    size, members = component
    return size, [-x for x in members[0]]


def component_entry(members: Iterable[Ref]) -> tuple[int, list[list[int]]]:
    """A component as the report lists it: ``(size, sorted members)``."""
    ordered = sorted(set(members))
    return len(ordered), [list(m) for m in ordered]


@dataclass
class ComponentTally:
    """The size histogram and the largest components, from components added one at a time or tallies merged in
    any order (an engine's combiner); it holds at most ``4 * LARGEST`` components, however many arrive."""

    histogram: dict[int, int] = field(default_factory=dict)
    largest: list[tuple[int, list[list[int]]]] = field(default_factory=list)

    def add(self, entry: tuple[int, list[list[int]]]) -> None:
        bucket = size_bucket(entry[0])
        self.histogram[bucket] = self.histogram.get(bucket, 0) + 1
        self.largest.append(entry)
        if len(self.largest) > 4 * LARGEST:
            self.largest = self.top()

    def merge(self, other: ComponentTally) -> None:
        for bucket, n in other.histogram.items():
            self.histogram[bucket] = self.histogram.get(bucket, 0) + n
        self.largest = sorted(self.largest + other.largest, key=_largest_key, reverse=True)[:LARGEST]

    def top(self) -> list[tuple[int, list[list[int]]]]:
        """The ``LARGEST`` largest components, largest first (equal sizes: the lowest first member first)."""
        return sorted(self.largest, key=_largest_key, reverse=True)[:LARGEST]

    def to_dict(self) -> dict[str, Any]:
        """``components.json``: the histogram by bucket (as strings) and the largest components."""
        return {
            "histogram": {str(k): v for k, v in sorted(self.histogram.items())},
            "largest": [[size, members] for size, members in self.top()],
        }


def component_report(
    histogram: dict[str, int], largest: list, held_max: int, shuffle: dict
) -> dict[str, object]:
    """``global.json``'s common part: component-size histogram (powers of two), the largest components' members,
    the largest collection a worker held and the shuffle figures."""
    return {
        "components": sum(histogram.values()),
        "component_size_histogram": {
            f"<={k}": v for k, v in sorted(histogram.items(), key=lambda kv: int(kv[0]))
        },
        "largest_components": [{"size": size, "members": members} for size, members in largest],
        "largest_held_collection": held_max,
        "shuffle_bytes": shuffle,
    }


def report_figures(figures: dict[str, Any]) -> tuple[dict, dict, dict, int]:
    """(counters, shuffle bytes per kind, held size per kind, largest held) from combined figures."""
    sums, maxes = figures["sum"], figures["max"]
    counters = {k.split(".", 1)[1]: v for k, v in sorted(sums.items()) if k.startswith("counters.")}
    docs = max(1, counters.get("documents", 0))
    shuffle = {
        k.split(".", 1)[1]: {"bytes": v, "per_document": round(v / docs, 1)}
        for k, v in sorted(sums.items())
        if k.startswith("shuffle_bytes.")
    }
    held = {k.split(".", 1)[1]: v for k, v in sorted(maxes.items()) if k.startswith("held.")}
    return counters, shuffle, held, max(held.values(), default=0)
