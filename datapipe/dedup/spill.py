"""The dedup global phases on files: a shuffle through partitioned record files on disk, in bounded memory.

Beam's DirectRunner keeps every ``GroupByKey`` in its own memory (14 band keys per document: 1.4e8 elements at
10^7 documents), and a Python dict of buckets costs ~100 bytes an entry. Here every grouping is a disk shuffle
(:mod:`datapipe.io.partitioned`): tasks write fixed-width numpy records split into ``parts`` partitions, and task
``p`` of the next phase reads partition ``p`` of every file, sorts it with numpy and finds its groups. A task holds
one partition of one phase (the corpus divided by ``parts``); the only all-corpus step, the components, holds the
verified edges, whose number grows with the near-duplicates, not with the corpus.

Both engines run these tasks as they are (the datatrove engine always; the Beam engine when its runner keeps
shuffles in memory), so the files, the removal lists and ``global.json`` are the same bytes on either engine and
for any number of workers. Every decision is a function of :mod:`datapipe.dedup.components`, called on the groups
of two or more (a singleton group decides nothing); the components are scipy's connected components, whose roots,
each component's lowest reference, are the ones the large-star/small-star rounds find.

Documents (one task per input shard, :func:`sign_shard`)::

    keys/part-SSSSS     (text hash, ref)               by hash % parts
    bands/part-SSSSS    (band, key, ref, content)      by key % parts
    earlier-*/part-KKKKK  an earlier build's stored keys (dedup.against), as shard k - K, by the same keys
  -> buckets(p)        exact groups -> exact/part-PPPPP (removals, by shard % parts)
                       LSH buckets  -> pairs/part-PPPPP (candidates, by a hash of the pair's first end)
  -> verify(q)         distinct pairs of partition q, exact Jaccard -> edges/part-QQQQQ
  -> components()      edges -> minhash/part-00000 (removals, by shard % parts), components.json
  -> write(r)          exact + minhash removals of the shards s with s % parts == r -> removals/part-SSSSS.json
  -> commit()          every task's figures -> global.json, _GLOBAL_SUCCESS

Lines (:func:`line_keys_shard` -> :func:`line_buckets` -> :func:`write` -> :func:`commit`) are the same without
the MinHash steps. Each task also writes its figures (``figures/<task>.json``: counters, the rows of the largest
partition it held, the bytes it wrote), which :func:`commit` adds up into the report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from datapipe.dedup import components
from datapipe.dedup.graph import bucket_pairs, smallest_connected
from datapipe.dedup.minhash import jaccard
from datapipe.dedup.store import (
    BAND,
    KEY,
    ShingleStore,
    earlier_shards,
    index_url,
    write_components,
    write_edges,
    write_line_removals,
    write_removals,
)
from datapipe.io import fs
from datapipe.io.partitioned import gather, read_all, write_partitioned
from datapipe.io.shards import Shard, part_name

if TYPE_CHECKING:  # the stages call these tables' tasks through the registry: no import back at run time
    from datapipe.dedup.stage import DedupStage, ParagraphStage

SHARDS_PER_PART = 8  # a partition holds about this many input shards' keys
MAX_PARTS = 4096
CHUNK = 100_000  # records decided per batch where a step walks a whole phase's output

PAIR = np.dtype([("sa", "<i8"), ("da", "<i8"), ("sb", "<i8"), ("db", "<i8")])
EDGE = np.dtype(
    [("sa", "<i8"), ("da", "<i8"), ("sb", "<i8"), ("db", "<i8"), ("jaccard", "<f8")]
)  # NaN: unverified
REMOVAL = np.dtype([("shard", "<i8"), ("doc", "<i8"), ("reason", "<i8"), ("ks", "<i8"), ("kd", "<i8")])
LINE = np.dtype([("hi", "<u8"), ("lo", "<u8"), ("shard", "<i8"), ("doc", "<i8"), ("line", "<i8")])
LINE_REMOVAL = np.dtype([("shard", "<i8"), ("doc", "<i8"), ("line", "<i8")])
REASONS = components.REASON_ORDER  # a removal record's reason is its index here


def partition_count(shards: int) -> int:
    """Partitions of a phase over ``shards`` input shards: one per ``SHARDS_PER_PART`` (at most ``MAX_PARTS``).

    A task holds one partition, and task p of a row reads partition p of each of the row before's files: the row
    makes shards x partitions small reads, which grow as the square of the corpus. At one partition per shard, 10^7
    planted documents (10^3 shards: 10^6 reads a row) cost 1.9x as much per document as 10^6 (docs/scaling.md);
    eight shards a partition make eight times fewer reads and hold ~45 MB of keys at 10^4 documents a shard."""
    return max(1, min(-(-shards // SHARDS_PER_PART), MAX_PARTS))


SCRATCH = (
    "_spill"  # a phase's scratch folder inside its stage's, where an engine keeps it there (Beam, local)
)


@dataclass(frozen=True)
class Spill:
    """Where one global phase's files go and how they are split: the scratch folder, the partition count and the
    indices of the input shards."""

    scratch: str
    parts: int
    shards: tuple[int, ...]
    earlier: tuple[tuple[str, int], ...] = ()  # dedup.against: (stage folder, shard) of each earlier shard

    @classmethod
    def of(cls, scratch: str, shards: tuple[Shard, ...] | list[Shard], stage: object = None) -> Spill:
        """The spill of ``stage``'s phase over ``shards`` (with the earlier builds its ``dedup.against`` names)."""
        against = getattr(stage, "earlier_builds", ())  # only a document dedup reads earlier builds' keys
        earlier = earlier_shards(against) if against else ()
        return cls(
            scratch, partition_count(len(shards) + len(earlier)), tuple(s.index for s in shards), earlier
        )

    def items(self, shards: tuple[Shard, ...] | list[Shard]) -> dict[str, list[object]]:
        """What each row of a task table runs over, by the name the row gives (``datapipe.orchestrate.registry``): the
        stage's shards, the partition numbers, the earlier builds' shards, or once."""
        return {
            "shards": list(shards),
            "partitions": list(range(self.parts)),
            "earlier": list(range(len(self.earlier))),
            "once": [None],
        }

    def earlier_ref(self, k: int) -> int:
        """The (negative) shard number of the k-th earlier shard: every earlier document sorts before ours."""
        return k - len(self.earlier)

    def url(self, kind: str, index: int) -> str:
        return fs.join(self.scratch, kind, part_name(index))

    def urls(self, kind: str, indices: tuple[int, ...] | range) -> list[str]:
        return [self.url(kind, i) for i in indices]

    def figures(self, task: str, figures: dict[str, int]) -> None:
        fs.write_text_atomic(fs.join(self.scratch, "figures", f"{task}.json"), json.dumps(figures) + "\n")


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer over uint64: spreads references (small, dense integers) over partitions."""
    z = x.astype(np.uint64)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _write(spill: Spill, kind: str, index: int, records: np.ndarray, partition: np.ndarray) -> int:
    """Write one partitioned file; its size in bytes (a shuffle figure)."""
    write_partitioned(spill.url(kind, index), records, partition, spill.parts)
    return int(records.nbytes)


def _groups(sorted_keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of every run of two or more equal keys in sorted columns."""
    n = len(sorted_keys[0])
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for col in sorted_keys:
        change[1:] |= col[1:] != col[:-1]
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], n)
    multi = ends - starts >= 2
    return starts[multi], ends[multi]


def _removal_records(items: list[tuple[int, tuple[Any, ...]]]) -> np.ndarray:
    """``(shard, (doc, reason, (survivor shard, survivor doc)))`` decisions as REMOVAL records."""
    out = np.zeros(len(items), dtype=REMOVAL)
    if items:
        out[:] = [(s, d, REASONS.index(reason), k[0], k[1]) for s, (d, reason, k) in items]
    return out


# ---------------------------------------------------------------------------------------------- documents


def sign_shard(stage: DedupStage, spill: Spill, shard: Shard) -> None:
    """One input shard's keys (``stage.sign_records``), partitioned; the stage writes its shingle sets."""
    keys, banded, n = stage.sign_records(shard)
    parts = np.uint64(spill.parts)
    written = _write(spill, "keys", shard.index, keys, (keys["lo"] % parts).astype(np.int64))
    written += _write(spill, "bands", shard.index, banded, (banded["key"] % parts).astype(np.int64))
    spill.figures(f"sign-{shard.index:05d}", {"counters.documents": n, "shuffle_bytes.keys": written})


def import_earlier(stage: DedupStage, spill: Spill, k: int) -> None:
    """The k-th shard of the earlier builds (``dedup.against``): its stored keys, renumbered to shard
    ``earlier_ref(k)`` and partitioned as this phase's own."""
    stage_dir, index = spill.earlier[k]
    ref = spill.earlier_ref(k)
    keys = read_all(index_url(stage_dir, "keys", index), KEY)
    banded = read_all(index_url(stage_dir, "bands", index), BAND)
    keys["shard"], banded["shard"] = ref, ref
    parts = np.uint64(spill.parts)
    written = _write(spill, "earlier-keys", k, keys, (keys["lo"] % parts).astype(np.int64))
    written += _write(spill, "earlier-bands", k, banded, (banded["key"] % parts).astype(np.int64))
    spill.figures(
        f"earlier-{k:05d}", {"counters.earlier_documents": len(keys), "shuffle_bytes.keys": written}
    )


def _inputs(spill: Spill, kind: str) -> list[str]:
    """This phase's own shards' files of a kind, and the earlier builds' (their documents first by reference)."""
    return spill.urls(kind, spill.shards) + spill.urls(f"earlier-{kind}", range(len(spill.earlier)))


def buckets(stage: DedupStage, spill: Spill, p: int) -> None:
    """Partition ``p`` of every shard's keys: exact groups -> removals; LSH buckets -> candidate pairs."""
    keys = gather(_inputs(spill, "keys"), KEY, p)
    keys = keys[np.lexsort((keys["doc"], keys["shard"], keys["lo"], keys["hi"]))]
    found: list[tuple[int, tuple[object, ...]]] = []
    for start, end in zip(*_groups([keys["hi"], keys["lo"]]), strict=True):
        refs = list(zip(keys["shard"][start:end].tolist(), keys["doc"][start:end].tolist(), strict=True))
        found.extend(r for r in components.exact_removals(refs) if r[0] >= 0)  # earlier builds' are not ours
    exact = _removal_records(found)
    figures = {"held.keys": len(keys)}
    del keys
    written = _write(spill, "exact", p, exact, exact["shard"] % spill.parts)
    shape = stage.shape
    if shape.minhash:
        pairs: list[tuple[components.Ref, components.Ref]] = []
        bands = gather(_inputs(spill, "bands"), BAND, p)
        order = np.lexsort((bands["content"], bands["doc"], bands["shard"], bands["key"], bands["band"]))
        bands = bands[order]
        figures["held.bands"] = len(bands)
        starts, ends = _groups([bands["band"], bands["key"]])
        figures["held.bucket"] = int((ends - starts).max()) if len(starts) else min(1, len(bands))
        shard_col, doc_col, content_col = bands["shard"], bands["doc"], bands["content"]
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            members = zip(
                zip(shard_col[start:end].tolist(), doc_col[start:end].tolist(), strict=True),
                content_col[start:end].tolist(),
                strict=True,
            )
            # a pair of two earlier documents cannot change which of ours is removed
            pairs.extend(pq for pq in bucket_pairs(members, shape.max_bucket_pairs) if pq[1][0] >= 0)
        candidates = np.zeros(len(pairs), dtype=PAIR)
        if pairs:
            candidates[:] = [(*a, *b) for a, b in pairs]
        node = (candidates["sa"].astype(np.uint64) << np.uint64(32)) | candidates["da"].astype(np.uint64)
        written += _write(
            spill, "pairs", p, candidates, (_mix(node) % np.uint64(spill.parts)).astype(np.int64)
        )
        figures["counters.candidates"] = len(candidates)
    figures["shuffle_bytes.buckets"] = written
    spill.figures(f"buckets-{p:05d}", figures)


def unique_pairs(pairs: np.ndarray) -> np.ndarray:
    """``np.unique`` of an array of :data:`PAIR` records (sorted by ``sa, da, sb, db``, each once): one sort of
    the fields as integers, where ``np.unique`` compares whole records (0.035 s against 0.011 s for the e2e
    build's 73,096 candidates)."""
    order = np.lexsort([pairs[name] for name in reversed(PAIR.names or ())])
    ordered = pairs[order]
    values = ordered.view(np.int64).reshape(len(ordered), len(PAIR.names or ()))
    first = np.ones(len(ordered), dtype=bool)
    first[1:] = np.any(values[1:] != values[:-1], axis=1)
    return ordered[first]


def verify(stage: DedupStage, spill: Spill, q: int) -> None:
    """The distinct candidate pairs of partition ``q``: edges with their exact Jaccard (or every candidate an edge,
    Jaccard NaN, with ``verify`` off)."""
    shape = stage.shape
    if not shape.minhash:
        return
    pairs = unique_pairs(gather(spill.urls("pairs", range(spill.parts)), PAIR, q))
    edges = np.zeros(len(pairs), dtype=EDGE)
    for name in PAIR.names or ():
        edges[name] = pairs[name]
    figures = {"held.pairs": len(pairs)}
    if shape.verify:
        store = ShingleStore(stage.out_dir, earlier=spill.earlier)
        weights = np.full(len(pairs), np.nan)
        for i, (sa, da, sb, db) in enumerate(pairs.tolist()):
            weight = components.edge_weight(
                jaccard(store.get((sa, da)), store.get((sb, db))), shape.threshold
            )
            if weight is not None:
                weights[i] = weight
        verified = ~np.isnan(weights)
        edges["jaccard"] = weights
        edges = edges[verified]
        figures.update(
            {
                "counters.pairs_verified": int(verified.sum()),
                "counters.pairs_rejected": int((~verified).sum()),
            }
        )
    else:
        edges["jaccard"] = np.nan
    written = _write(spill, "edges", q, edges, np.zeros(len(edges), dtype=np.int64))  # read whole
    figures["shuffle_bytes.edges"] = written
    spill.figures(f"verify-{q:05d}", figures)


def _ref(x: int) -> components.Ref:
    """A reference from its one-integer form ``shard << 32 | doc`` (shard may be negative: an earlier build)."""
    return x >> 32, x & 0xFFFFFFFF


def find_components(stage: DedupStage, spill: Spill, _: None = None) -> None:
    """One task: every verified edge -> connected components; each non-root member's removal (for the write
    tasks), ``components.json`` and, with ``keep_edges``, the edge files."""
    if not stage.shape.minhash:
        return
    edges = np.concatenate([read_all(u, EDGE) for u in spill.urls("edges", range(spill.parts))])
    a = (edges["sa"] << 32) | edges["da"]  # a reference as one integer, in the same order
    b = (edges["sb"] << 32) | edges["db"]
    nodes, inverse = np.unique(np.concatenate([a, b]), return_inverse=True)
    n, m = len(nodes), len(edges)
    # nodes are sorted: a component's smallest index is its smallest reference, and grouping by it orders the
    # components by that reference
    labels = smallest_connected(inverse[:m].astype(np.int64), inverse[m:].astype(np.int64), n)
    root_of = nodes[labels]
    members = np.flatnonzero((nodes != root_of) & (nodes >= 0))  # an earlier build's documents are not ours
    removals = np.zeros(len(members), dtype=REMOVAL)
    for start in range(0, len(members), CHUNK):  # decided one at a time, held as records, not Python objects
        rows = members[start : start + CHUNK]
        removals[start : start + len(rows)] = _removal_records(
            [
                components.minhash_removal(_ref(x), _ref(r))
                for x, r in zip(nodes[rows].tolist(), root_of[rows].tolist(), strict=True)
            ]
        )
    written = _write(spill, "minhash", 0, removals, removals["shard"] % spill.parts)
    del removals, members, root_of
    tally = components.ComponentTally()
    order = np.argsort(labels, kind="stable")
    bounds = np.append(np.flatnonzero(np.diff(labels[order])) + 1, n) if n else np.zeros(0, dtype=np.int64)
    start = 0
    for end in bounds.tolist():  # one component at a time: the tally keeps the largest few
        tally.add(components.component_entry(_ref(x) for x in nodes[order[start:end]].tolist()))
        start = end
    write_components(stage.out_dir, tally.to_dict())
    if stage.shape.keep_edges:
        blocks: dict[tuple[int, int], list] = {}
        for sa, da, sb, db, j in edges.tolist():
            blocks.setdefault(components.edge_block((sa, da), (sb, db)), []).append(
                ((sa, da), (sb, db), None if np.isnan(j) else j)
            )
        for (shard, block), items_ in blocks.items():
            write_edges(stage.out_dir, shard, block, items_)
    doc = tally.to_dict()
    spill.figures(
        "components",
        {
            "held.edges": len(edges),
            "held.component": max((s for s, _ in doc["largest"]), default=0),
            "shuffle_bytes.components": written,
        },
    )
    fs.write_text_atomic(fs.join(spill.scratch, "components.json"), json.dumps(doc) + "\n")


def write(stage: DedupStage, spill: Spill, r: int) -> None:
    """The removal lists of the shards ``s`` with ``s % parts == r``: every decision about them, one per document
    (the first reason in ``REASON_ORDER``), sorted."""
    kinds = stage.shape.removal_kinds  # exact's list is written (maybe empty) whenever keys were signed
    urls = spill.urls("exact", range(spill.parts))
    if "minhash" in kinds:
        urls.append(spill.url("minhash", 0))
    found = gather(urls, REMOVAL, r)
    found = found[np.lexsort((found["kd"], found["ks"], found["reason"], found["doc"], found["shard"]))]
    shards = np.unique(found["shard"]).tolist()
    decisions = {}
    for s in shards:
        mine = found[found["shard"] == s].tolist()
        decisions[s] = components.merge_decisions(
            [(d, REASONS[reason], (ks, kd)) for _, d, reason, ks, kd in mine]
        )
    write_removals(stage.out_dir, decisions, spill.earlier)
    spill.figures(f"write-{r:05d}", {"held.removals": len(found), "counters.removal_files": len(shards)})


def commit(stage: DedupStage | ParagraphStage, spill: Spill, _: None = None) -> dict[str, Any]:
    """Every task's figures -> ``global.json`` and ``_GLOBAL_SUCCESS``; the report."""
    sums: dict[str, int] = {}
    maxes: dict[str, int] = {}
    for url in fs.glob(fs.join(spill.scratch, "figures", "*.json")):
        for name, value in json.loads(fs.read_text(url)).items():
            if name.startswith("held."):
                maxes[name] = max(maxes.get(name, 0), value)
            else:
                sums[name] = sums.get(name, 0) + value
    counters, shuffle, held, largest = components.report_figures({"sum": sums, "max": maxes})
    comps_url = fs.join(spill.scratch, "components.json")
    doc = json.loads(fs.read_text(comps_url)) if fs.exists(comps_url) else {"histogram": {}, "largest": []}
    report = components.component_report(doc["histogram"], doc["largest"], largest, shuffle)
    report.update(
        {
            "counters": counters,
            "largest_held_by_kind": held,
            "shuffle": "files",
            "partitions": spill.parts,
        }
    )
    if spill.earlier:  # survivors there are named by negative shards: shard k - K is the k-th listed here
        stages: dict[str, int] = {}
        for stage_dir, _shard in spill.earlier:
            stages[stage_dir] = stages.get(stage_dir, 0) + 1
        report["against"] = [{"stage": d, "shards": n} for d, n in stages.items()]
    stage.write_global_report(report)
    return report


# ------------------------------------------------------------------------------------------------- lines


def line_keys_shard(stage: ParagraphStage, spill: Spill, shard: Shard) -> None:
    """One input shard's line hashes, partitioned."""
    keys, n = stage.line_keys(shard)
    lines = np.zeros(len(keys), dtype=LINE)
    if keys:
        hashes = np.array([h for h, _ in keys], dtype=object)
        lines["hi"] = (hashes >> 64).astype(np.uint64)
        lines["lo"] = (hashes & ((1 << 64) - 1)).astype(np.uint64)
        refs = np.array([r for _, r in keys], dtype=np.int64).reshape(-1, 3)
        lines["shard"], lines["doc"], lines["line"] = refs[:, 0], refs[:, 1], refs[:, 2]
    written = _write(
        spill, "lines", shard.index, lines, (lines["lo"] % np.uint64(spill.parts)).astype(np.int64)
    )
    spill.figures(
        f"lines-{shard.index:05d}",
        {"counters.documents": n, "counters.lines": len(keys), "shuffle_bytes.lines": written},
    )


def line_buckets(stage: ParagraphStage, spill: Spill, p: int) -> None:
    """Partition ``p`` of every shard's line hashes: each repeated line's occurrences but the first, removed."""
    lines = gather(spill.urls("lines", spill.shards), LINE, p)
    lines = lines[np.lexsort((lines["line"], lines["doc"], lines["shard"], lines["lo"], lines["hi"]))]
    found: list[tuple[int, tuple[object, ...]]] = []
    for start, end in zip(*_groups([lines["hi"], lines["lo"]]), strict=True):
        refs = list(
            zip(
                lines["shard"][start:end].tolist(),
                lines["doc"][start:end].tolist(),
                lines["line"][start:end].tolist(),
                strict=True,
            )
        )
        found.extend(components.line_removals(refs))
    removed = np.zeros(len(found), dtype=LINE_REMOVAL)
    if found:
        removed[:] = [(s, d, line) for s, (d, line) in found]
    written = _write(spill, "line-removals", p, removed, removed["shard"] % spill.parts)
    spill.figures(
        f"line-buckets-{p:05d}",
        {
            "held.lines": len(lines),
            "counters.lines_removed": len(found),
            "shuffle_bytes.line_removals": written,
        },
    )


def write_lines(stage: ParagraphStage, spill: Spill, r: int) -> None:
    """The line removal lists of the shards ``s`` with ``s % parts == r``, sorted."""
    found = np.unique(gather(spill.urls("line-removals", range(spill.parts)), LINE_REMOVAL, r))
    shards = np.unique(found["shard"]).tolist()
    by_shard = {}
    for s in shards:
        mine = found[found["shard"] == s]
        by_shard[s] = list(zip(mine["doc"].tolist(), mine["line"].tolist(), strict=True))
    write_line_removals(stage.out_dir, by_shard)
    spill.figures(f"write-{r:05d}", {"held.removals": len(found), "counters.removal_files": len(shards)})


# The tasks of each global phase in order, with what one task takes: an input shard (``shards``), a partition
# number (``partitions``), an earlier build's shard number (``earlier``: none without ``dedup.against``) or
# nothing (``once``: one task). An engine runs each row's tasks, in parallel as it
# likes, after every task of the row before has finished.
DEDUP_TASKS = (
    ("signatures", sign_shard, "shards"),
    ("earlier", import_earlier, "earlier"),
    ("buckets", buckets, "partitions"),
    ("verify", verify, "partitions"),
    ("components", find_components, "once"),
    ("removals", write, "partitions"),
    ("commit", commit, "once"),
)
LINE_TASKS = (
    ("lines", line_keys_shard, "shards"),
    ("line-buckets", line_buckets, "partitions"),
    ("removals", write_lines, "partitions"),
    ("commit", commit, "once"),
)
