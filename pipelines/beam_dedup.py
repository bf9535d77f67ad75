"""The global phases of the dedup stages as Beam pipelines.

Document level (``dedup``)::

    shards | SignShard ──exact──► GroupByKey(text hash) ──► all but the lowest ref ─┐
                       └─band───► GroupByKey(band key) ──► candidate pairs           │
                                  | Distinct | GroupByKey(shard pair) | verify       │
                                  | large-star/small-star rounds | ref -> root ──────┤
                                                                                      ▼
                                                  GroupByKey(input shard) ──► removals/part-NNNNN.json

Paragraph level (``paragraphs``)::

    shards | line keys | GroupByKey(line hash) | all but the first occurrence | GroupByKey(shard) | removals

What crosses workers is keys and references, never text: per document one 128-bit text hash, ``bands`` 64-bit
band keys, and per line one 128-bit hash. The only collections a ``DoFn`` materializes are an LSH bucket, one
node's neighbourhood in a components round, the candidate pairs between two shards, and one shard's removal list:
their sizes grow with the largest duplicate cluster (or shard), not with the corpus. Candidate pairs are verified
in groups keyed by (document a, shard of b): a group holds one document's candidates, and consecutive groups
mostly touch the same two shards, whose shingle files stay loaded. Each is recorded in the
``held`` distribution metric and each shuffle's encoded bytes in ``shuffle_bytes.*`` counters.
"""

from __future__ import annotations

from typing import Any

from datapipe.dedup.graph import bucket_pairs, large_star, small_star
from datapipe.dedup.minhash import jaccard
from datapipe.dedup.stage import DedupStage, ParagraphStage, component_report, first_reason
from datapipe.dedup.store import ShingleStore, write_removals
from pipelines.beam_quiet import PipelineOptions, beam

NS = "datapipe.dedup"
EDGE_BLOCK = 64  # kept edges are written per (shard, block of 64 documents)
CODER = beam.coders.FastPrimitivesCoder()


def _held(n: int, what: str) -> None:
    """Record the size of a collection a DoFn materialized (``held.<what>``)."""
    beam.metrics.Metrics.distribution(NS, f"held.{what}").update(n)


def _measure(name: str):
    counter = beam.metrics.Metrics.counter(NS, f"shuffle_bytes.{name}")

    def fn(element):
        counter.inc(len(CODER.encode(element)))
        return element

    return beam.Map(fn)


class SignShard(beam.DoFn):
    def __init__(self, stage: DedupStage) -> None:
        self.stage = stage

    def setup(self) -> None:
        self.stage.setup()

    def process(self, shard):
        exact, bands, n = self.stage.sign_shard(shard)
        beam.metrics.Metrics.counter(NS, "documents").inc(n)
        for element in exact:
            yield beam.pvalue.TaggedOutput("exact", element)
        for element in bands:
            yield beam.pvalue.TaggedOutput("band", element)


def exact_removals(element):
    """All references of one text hash but the lowest (the iterable is walked twice, never stored)."""
    _, refs = element
    keep = min(refs)
    for ref in refs:
        if ref != keep:
            yield ref[0], (ref[1], "dedup/exact", keep)


class BucketPairs(beam.DoFn):
    def __init__(self, max_pairs_bucket: int) -> None:
        self.max_pairs_bucket = max_pairs_bucket

    def process(self, element):
        _, refs = element
        members = sorted(set(refs))
        _held(len(members), "bucket")
        yield from bucket_pairs(members, self.max_pairs_bucket)


class VerifyPairs(beam.DoFn):
    """Exact Jaccard of the two shingle sets, read from the shard files the sign pass wrote."""

    def __init__(self, stage_dir: str, threshold: float) -> None:
        self.stage_dir = stage_dir
        self.threshold = threshold

    def setup(self) -> None:
        self.store = ShingleStore(self.stage_dir)

    def process(self, element):
        _, pairs = element
        pairs = sorted(pairs)
        _held(len(pairs), "pairs")
        kept = beam.metrics.Metrics.counter(NS, "pairs_verified")
        rejected = beam.metrics.Metrics.counter(NS, "pairs_rejected")
        for a, b in pairs:
            j = jaccard(self.store.get(a), self.store.get(b))
            if j >= self.threshold:
                kept.inc()
                yield a, b, round(j, 4)
            else:
                rejected.inc()


class WriteEdges(beam.DoFn):
    """Verified edges with their Jaccard, for inspection: one file per block of 64 documents of a shard, holding
    the edges whose smaller end is there."""

    def __init__(self, stage_dir: str) -> None:
        self.stage_dir = stage_dir

    def process(self, element):
        import json

        from datapipe.io import fs

        (shard, block), edges = element
        edges = sorted(edges)
        _held(len(edges), "edges")
        name = f"part-{shard:05d}-{block:05d}.json"
        fs.write_text_atomic(fs.join(self.stage_dir, "edges", name), json.dumps(edges) + "\n")
        yield shard


def _both_ways(edge):
    a, b = edge
    return [(a, b), (b, a)]


def _star(fn):
    def apply(element):
        node, nbrs = element
        nbrs = set(nbrs)  # an edge can arrive more than once within a round
        _held(len(nbrs), "neighbourhood")
        return fn(node, nbrs)

    return apply


def _roots(element):
    """In star form every node but the root has exactly one neighbour, its root."""
    node, nbrs = element
    nbrs = set(nbrs)
    root = min(nbrs | {node})
    if root != node and len(nbrs) != 1:
        beam.metrics.Metrics.counter(NS, "not_converged").inc()
    if root != node:
        yield node, root


class WriteRemovals(beam.DoFn):
    def __init__(self, stage_dir: str, merge_reasons: bool) -> None:
        self.stage_dir = stage_dir
        self.merge_reasons = merge_reasons

    def process(self, element):
        shard, items = element
        items = list(items)
        _held(len(items), "removals")
        if self.merge_reasons:  # a document removed by several methods is named by the first in REASON_ORDER
            by_doc: dict[int, list[tuple]] = {}
            for idx, reason, survivor in items:
                by_doc.setdefault(idx, []).append((reason, survivor))
            items = [(idx, *first_reason(decisions)) for idx, decisions in by_doc.items()]
        write_removals(self.stage_dir, shard, items)
        yield shard


class ComponentSizes(beam.CombineFn):
    """Histogram of component sizes in powers of two: a bounded accumulator, however many components."""

    def create_accumulator(self):
        return {}

    def add_input(self, acc, size):
        bucket = 1 << max(0, (size - 1).bit_length())
        acc[bucket] = acc.get(bucket, 0) + 1
        return acc

    def merge_accumulators(self, accs):
        out: dict[int, int] = {}
        for a in accs:
            for k, v in a.items():
                out[k] = out.get(k, 0) + v
        return out

    def extract_output(self, acc):
        return acc


class WriteComponents(beam.DoFn):
    def __init__(self, stage_dir: str) -> None:
        self.stage_dir = stage_dir

    def process(self, _, histogram, largest):
        import json

        from datapipe.io import fs

        doc = {"histogram": {str(k): v for k, v in sorted(histogram.items())}, "largest": largest}
        fs.write_text_atomic(fs.join(self.stage_dir, "components.json"), json.dumps(doc) + "\n")
        yield None


def _component(element):
    root, members = element
    members = sorted(set(members) | {root})
    _held(len(members), "component")
    return len(members), [list(m) for m in members]


def _metrics(result) -> dict[str, Any]:
    from apache_beam.metrics.metric import MetricsFilter

    out: dict[str, Any] = {"held": 0, "held_by": {}, "shuffle_bytes": {}, "counters": {}}
    res = result.metrics().query(MetricsFilter().with_namespace(NS))
    for d in res["distributions"]:
        size = d.committed.max if d.committed else 0
        what = d.key.metric.name.split(".", 1)[1]
        out["held_by"][what] = max(out["held_by"].get(what, 0), size)
        out["held"] = max(out["held"], size)
    for c in res["counters"]:
        name = c.key.metric.name
        if name.startswith("shuffle_bytes."):
            out["shuffle_bytes"][name.split(".", 1)[1]] = c.committed
        else:
            out["counters"][name] = c.committed
    return out


def run_dedup_global(stage: DedupStage, shards: list, options: PipelineOptions, cc_rounds: int = 12) -> dict:
    """Run the document-level global phase; writes removal lists and ``global.json``; returns the report."""
    mh = stage.config.minhash
    p = beam.Pipeline(options=options)
    signed = (
        p
        | "Shards" >> beam.Create(shards)
        | "Spread" >> beam.Reshuffle()
        | "Sign" >> beam.ParDo(SignShard(stage)).with_outputs("exact", "band")
    )
    removal_sets = []
    if stage.config.exact:
        removal_sets.append(
            signed.exact
            | "MeasureExact" >> _measure("exact")
            | "GroupText" >> beam.GroupByKey()
            | "ExactRemovals" >> beam.FlatMap(exact_removals)
        )
    if mh is not None:
        pairs = (
            signed.band
            | "MeasureBands" >> _measure("bands")
            | "GroupBands" >> beam.GroupByKey()
            | "Pairs" >> beam.ParDo(BucketPairs(mh.max_bucket_pairs))
            | "DistinctPairs" >> beam.Distinct()
        )
        if mh.verify:
            edges = (
                pairs
                | "ByDocAndShard" >> beam.Map(lambda ab: ((ab[0][0], ab[0][1], ab[1][0]), ab))
                | "MeasurePairs" >> _measure("pairs")
                | "GroupShardPairs" >> beam.GroupByKey()
                | "Verify" >> beam.ParDo(VerifyPairs(stage.out_dir, mh.threshold))
            )
        else:
            edges = pairs | "Unverified" >> beam.Map(lambda ab: (ab[0], ab[1], None))
        if mh.keep_edges:
            _ = (
                edges
                | "EdgesByBlock"
                >> beam.Map(lambda e: ((min(e[0], e[1])[0], min(e[0], e[1])[1] // EDGE_BLOCK), e))
                | "GroupEdges" >> beam.GroupByKey()
                | "WriteEdges" >> beam.ParDo(WriteEdges(stage.out_dir))
            )
        edges = edges | "DropWeights" >> beam.Map(lambda e: (e[0], e[1]))
        for r in range(cc_rounds):
            edges = (
                edges
                | f"Large{r}/Both" >> beam.FlatMap(_both_ways)
                | f"Large{r}/Measure" >> _measure("components")
                | f"Large{r}/Group" >> beam.GroupByKey()
                | f"Large{r}/Star" >> beam.FlatMap(_star(large_star))
                | f"Small{r}/Both" >> beam.FlatMap(_both_ways)
                | f"Small{r}/Measure" >> _measure("components")
                | f"Small{r}/Group" >> beam.GroupByKey()
                | f"Small{r}/Star" >> beam.FlatMap(_star(small_star))
                | f"Round{r}/Distinct" >> beam.Distinct()
            )
        roots = (
            edges
            | "Final/Both" >> beam.FlatMap(_both_ways)
            | "Final/Group" >> beam.GroupByKey()
            | "Roots" >> beam.FlatMap(_roots)
        )
        removal_sets.append(
            roots | "MinhashRemovals" >> beam.Map(lambda nr: (nr[0][0], (nr[0][1], "dedup/minhash", nr[1])))
        )
        components = (
            roots
            | "ByRoot" >> beam.Map(lambda nr: (nr[1], nr[0]))
            | "GroupComponents" >> beam.GroupByKey()
            | "Component" >> beam.Map(_component)
        )
        histogram = (
            components
            | "Sizes" >> beam.Map(lambda c: c[0])
            | "Histogram" >> beam.CombineGlobally(ComponentSizes())
        )
        largest = components | "Largest" >> beam.combiners.Top.Of(
            10, key=lambda c: (c[0], [-x for x in c[1][0]])
        )
        _ = (
            p
            | "One" >> beam.Create([None])
            | "WriteComponents"
            >> beam.ParDo(
                WriteComponents(stage.out_dir),
                beam.pvalue.AsSingleton(histogram),
                beam.pvalue.AsSingleton(largest),
            )
        )
    if removal_sets:
        _ = (
            removal_sets
            | "AllRemovals" >> beam.Flatten()
            | "MeasureRemovals" >> _measure("removals")
            | "GroupByShard" >> beam.GroupByKey()
            | "WriteRemovals" >> beam.ParDo(WriteRemovals(stage.out_dir, merge_reasons=True))
        )
    result = p.run()
    result.wait_until_finish()
    return _finish(stage, result)


def _finish(stage, result) -> dict:
    import json

    from datapipe.io import fs

    m = _metrics(result)
    if m["counters"].get("not_converged"):
        from datapipe.errors import DatapipeError

        raise DatapipeError(
            f"{stage.out_dir}: connected components did not converge; raise dedup.minhash.cc_rounds"
        )
    docs = max(1, m["counters"].get("documents", 0))
    shuffle = {
        k: {"bytes": v, "per_document": round(v / docs, 1)} for k, v in sorted(m["shuffle_bytes"].items())
    }
    comp_url = fs.join(stage.out_dir, "components.json")
    comps = json.loads(fs.read_text(comp_url)) if fs.exists(comp_url) else {"histogram": {}, "largest": []}
    report = component_report(comps["histogram"], comps["largest"], int(m["held"]), shuffle)
    report["counters"] = m["counters"]
    report["largest_held_by_kind"] = dict(sorted(m["held_by"].items()))
    stage.write_global_report(report)
    return report


def _line_keys(stage: ParagraphStage):
    def fn(shard):
        keys, docs = stage.line_keys(shard)
        beam.metrics.Metrics.counter(NS, "documents").inc(docs)
        beam.metrics.Metrics.counter(NS, "lines").inc(len(keys))
        return keys

    return fn


def paragraph_removals(element):
    """All occurrences of one line hash but the first (walked twice, never stored)."""
    _, refs = element
    first = min(refs)
    for ref in refs:
        if ref != first:
            yield ref[0], (ref[1], ref[2])


def run_paragraphs_global(stage: ParagraphStage, shards: list, options: PipelineOptions) -> dict:
    p = beam.Pipeline(options=options)
    _ = (
        p
        | "Shards" >> beam.Create(shards)
        | "Spread" >> beam.Reshuffle()
        | "LineKeys" >> beam.FlatMap(_line_keys(stage))
        | "MeasureLines" >> _measure("lines")
        | "GroupLines" >> beam.GroupByKey()
        | "Removals" >> beam.FlatMap(paragraph_removals)
        | "MeasureRemovals" >> _measure("removals")
        | "GroupByShard" >> beam.GroupByKey()
        | "WriteRemovals" >> beam.ParDo(WriteRemovals(stage.out_dir, merge_reasons=False))
    )
    result = p.run()
    result.wait_until_finish()
    return _finish(stage, result)


def run_global(stage, shards: list, options: PipelineOptions) -> dict | None:
    """Run the stage's global phase unless an earlier run committed it; None for stages without one."""
    from datapipe.quality.stage import QualityStage
    from pipelines.beam_quality import run_quality_global

    if not isinstance(stage, DedupStage | ParagraphStage | QualityStage) or stage.global_done():
        return None
    if isinstance(stage, DedupStage):
        return run_dedup_global(stage, shards, options)
    if isinstance(stage, ParagraphStage):
        return run_paragraphs_global(stage, shards, options)
    run_quality_global(stage, shards, options)
    return stage.read_global_report()
