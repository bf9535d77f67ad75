"""The global phases of the dedup stages, as transforms inside the build's pipeline.

Document level (``dedup``)::

    shards | SignShard ──exact──► GroupByKey(text hash) ──► all but the lowest ref ─┐
                       └─band───► GroupByKey(band key) ──► candidate pairs           │
                                  | Distinct | GroupByKey(shard pair) | verify       │
                                  | large-star/small-star rounds | ref -> root ──────┤
                                                                                      ▼
                          GroupByKey(input shard) ──► removals/part-NNNNN.json ──► global.json

Paragraph level (``paragraphs``)::

    shards | line keys | GroupByKey(line hash) | all but the first occurrence | GroupByKey(shard) | removals

What crosses workers is keys and references, never text: per document one 128-bit text hash, ``bands`` 64-bit
band keys, and per line one 128-bit hash. The only collections a ``DoFn`` materializes are an LSH bucket, one
node's neighbourhood in a components round, the candidate pairs between two shards, and one shard's removal list:
their sizes grow with the largest duplicate cluster (or shard), not with the corpus. Candidate pairs are verified
in groups keyed by (document a, shard of b): a group holds one document's candidates, and consecutive groups
mostly touch the same two shards, whose shingle files stay loaded.

The run report (each shuffle's encoded bytes, the largest collection of each kind a ``DoFn`` held, counters) is
computed by branches of the same pipeline (:class:`Figures`) and written with the decisions, because the stage's
shard phase and the stages after it run in that pipeline too.

Components: a fixed number of large-star/small-star rounds (``CC_ROUNDS``; near-duplicate clusters are star-like
and converge in two or three). A node not in star form after them means the rounds were too few: then neither the
removal lists nor ``global.json`` are written, the stage does not finish, and the engine runs it again with twice
the rounds (up to ``MAX_CC_ROUNDS``).
"""

from __future__ import annotations

from datapipe.dedup.graph import bucket_pairs, large_star, small_star
from datapipe.dedup.minhash import jaccard
from datapipe.dedup.stage import DedupStage, ParagraphStage, component_report, first_reason
from datapipe.dedup.store import ShingleStore, write_removals
from pipelines.beam_quiet import PipelineOptions, beam

NS = "datapipe.dedup"
EDGE_BLOCK = 64  # kept edges are written per (shard, block of 64 documents)
CODER = beam.coders.FastPrimitivesCoder()
CC_ROUNDS = 4  # large-star/small-star rounds a first attempt runs; a graph that needs more gets twice as many
MAX_CC_ROUNDS = 64


class Figures:
    """The run report's figures, computed inside the pipeline (the global phase and the stages after it share one
    pipeline, so Beam's metrics, read when a pipeline ends, come too late): ``(name, value)`` pairs from branches
    off the main flow, summed (shuffle bytes, counters) or maxed (held collection sizes) per name."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.sums: list[beam.PCollection] = []
        self.maxes: list[beam.PCollection] = []

    def shuffle(self, pcoll: beam.PCollection, name: str, step: str | None = None) -> beam.PCollection:
        """Count the encoded bytes of what ``pcoll`` sends into a shuffle (as ``shuffle_bytes.<name>``, summed over
        every ``step`` of that name); returns ``pcoll``."""
        key = f"shuffle_bytes.{name}"
        label = f"{self.label}/Bytes/{step or name}"
        self.sums.append(pcoll | label >> beam.Map(lambda e: (key, len(CODER.encode(e)))))
        return pcoll

    def held(self, grouped: beam.PCollection, what: str, step: str, size=lambda vs: len(set(vs))) -> None:
        """Record the largest group of ``grouped`` a DoFn materializes as ``held.<what>``."""
        key = f"held.{what}"
        self.maxes.append(grouped | f"{self.label}/Held/{step}" >> beam.Map(lambda kv: (key, size(kv[1]))))

    def count(self, pcoll: beam.PCollection, name: str, value=lambda _: 1) -> None:
        key = f"counters.{name}"
        self.sums.append(pcoll | f"{self.label}/Count/{name}" >> beam.Map(lambda e: (key, value(e))))

    def combined(self) -> tuple[beam.PCollection, beam.PCollection]:
        """The sums and the maxima, each a PCollection of ``(name, value)`` to pass as ``AsDict``."""
        p = self.sums[0].pipeline if self.sums else self.maxes[0].pipeline
        out = []
        for kind, parts, fn in (("Sums", self.sums, sum), ("Maxima", self.maxes, max)):
            if not parts:
                parts = [p | f"{self.label}/No{kind}" >> beam.Create([])]
            out.append(
                parts
                | f"{self.label}/All{kind}" >> beam.Flatten()
                | f"{self.label}/{kind}" >> beam.CombinePerKey(fn)
            )
        return out[0], out[1]


def report_figures(sums: dict, maxes: dict) -> tuple[dict, dict, dict, int]:
    """(counters, shuffle bytes per kind, held size per kind, largest held) from the figures' two dicts."""
    counters = {k.split(".", 1)[1]: v for k, v in sorted(sums.items()) if k.startswith("counters.")}
    docs = max(1, counters.get("documents", 0))
    shuffle = {
        k.split(".", 1)[1]: {"bytes": v, "per_document": round(v / docs, 1)}
        for k, v in sorted(sums.items())
        if k.startswith("shuffle_bytes.")
    }
    held = {k.split(".", 1)[1]: v for k, v in sorted(maxes.items())}
    return counters, shuffle, held, max(held.values(), default=0)


class SignShard(beam.DoFn):
    def __init__(self, stage: DedupStage) -> None:
        self.stage = stage

    def setup(self) -> None:
        self.stage.setup()

    def process(self, shard):
        exact, bands, n = self.stage.sign_shard(shard)
        yield beam.pvalue.TaggedOutput("documents", n)
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
        yield from bucket_pairs(sorted(set(refs)), self.max_pairs_bucket)


class VerifyPairs(beam.DoFn):
    """Exact Jaccard of the two shingle sets, read from the shard files the sign pass wrote; rejected pairs go to
    the ``rejected`` output (to be counted)."""

    def __init__(self, stage_dir: str, threshold: float) -> None:
        self.stage_dir = stage_dir
        self.threshold = threshold

    def setup(self) -> None:
        self.store = ShingleStore(self.stage_dir)

    def process(self, element):
        _, pairs = element
        for a, b in sorted(pairs):
            j = jaccard(self.store.get(a), self.store.get(b))
            if j >= self.threshold:
                yield a, b, round(j, 4)
            else:
                yield beam.pvalue.TaggedOutput("rejected", 1)


class WriteEdges(beam.DoFn):
    """Verified edges with their Jaccard, for inspection: one file per block of 64 documents of a shard, holding
    the edges whose smaller end is there."""

    def __init__(self, stage_dir: str) -> None:
        self.stage_dir = stage_dir

    def process(self, element):
        import json

        from datapipe.io import fs

        (shard, block), edges = element
        name = f"part-{shard:05d}-{block:05d}.json"
        fs.write_text_atomic(fs.join(self.stage_dir, "edges", name), json.dumps(sorted(edges)) + "\n")
        yield shard


def _both_ways(edge):
    a, b = edge
    return [(a, b), (b, a)]


def _star(fn):
    def apply(element):
        node, nbrs = element
        return fn(node, set(nbrs))  # an edge can arrive more than once within a round

    return apply


def _roots(element):
    """In star form every node but the root has exactly one neighbour, its root; a node that is not yet so is
    sent to the ``unconverged`` output."""
    node, nbrs = element
    nbrs = set(nbrs)
    root = min(nbrs | {node})
    if root != node and len(nbrs) != 1:
        yield beam.pvalue.TaggedOutput("unconverged", 1)
    if root != node:
        yield node, root


class WriteRemovals(beam.DoFn):
    """One shard's sorted removal list; nothing when the components did not converge (side input), so a phase
    that must run again leaves no list behind."""

    def __init__(self, stage_dir: str, merge_reasons: bool) -> None:
        self.stage_dir = stage_dir
        self.merge_reasons = merge_reasons

    def process(self, element, unconverged=0):
        if unconverged:
            return
        shard, items = element
        items = list(items)
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


def _component(element):
    root, members = element
    members = sorted(set(members) | {root})
    return len(members), [list(m) for m in members]


class WriteDedupReport(beam.DoFn):
    """Runs once every removal list is written (its input): ``global.json`` and ``_GLOBAL_SUCCESS``, then yields the
    one element the shard phase waits for. Yields nothing when the components did not converge in this many
    rounds: the engine runs the phase again with more."""

    def __init__(self, stage: DedupStage, rounds: int | None) -> None:
        self.stage = stage
        self.rounds = rounds

    def process(self, _, sums, maxes, histogram, largest, unconverged):
        if unconverged:
            return
        counters, shuffle, held_by, held = report_figures(sums, maxes)
        report = component_report({str(k): v for k, v in sorted(histogram.items())}, largest, held, shuffle)
        report["counters"] = counters
        report["largest_held_by_kind"] = held_by
        if self.rounds is not None:
            report["cc_rounds"] = self.rounds
            import json

            from datapipe.io import fs

            doc = {"histogram": {str(k): v for k, v in sorted(histogram.items())}, "largest": largest}
            fs.write_text_atomic(fs.join(self.stage.out_dir, "components.json"), json.dumps(doc) + "\n")
        self.stage.write_global_report(report)
        yield None


def dedup_global(
    shards: beam.PCollection, stage: DedupStage, label: str, cc_rounds: int = CC_ROUNDS
) -> beam.PCollection:
    """The document-level global phase on ``shards``: removal lists and ``global.json``; the result holds one
    element once ``_GLOBAL_SUCCESS`` is written (none when the components needed more than ``cc_rounds``)."""
    mh = stage.config.minhash
    fig = Figures(label)
    p = shards.pipeline
    signed = (
        shards
        | f"{label}/Spread" >> beam.Reshuffle()
        | f"{label}/Sign" >> beam.ParDo(SignShard(stage)).with_outputs("documents", "exact", "band")
    )
    fig.count(signed.documents, "documents", value=lambda n: n)
    removal_sets = []
    if stage.config.exact:
        texts = fig.shuffle(signed.exact, "exact") | f"{label}/GroupText" >> beam.GroupByKey()
        removal_sets.append(texts | f"{label}/ExactRemovals" >> beam.FlatMap(exact_removals))
    unconverged = p | f"{label}/Converged" >> beam.Create([0])
    histogram = p | f"{label}/NoHistogram" >> beam.Create([{}])
    largest = p | f"{label}/NoLargest" >> beam.Create([[]])
    if mh is not None:
        buckets = fig.shuffle(signed.band, "bands") | f"{label}/GroupBands" >> beam.GroupByKey()
        fig.held(buckets, "bucket", "Buckets")
        pairs = (
            buckets
            | f"{label}/Pairs" >> beam.ParDo(BucketPairs(mh.max_bucket_pairs))
            | f"{label}/DistinctPairs" >> beam.Distinct()
        )
        if mh.verify:
            by_doc = pairs | f"{label}/ByDocAndShard" >> beam.Map(
                lambda ab: ((ab[0][0], ab[0][1], ab[1][0]), ab)
            )
            grouped = fig.shuffle(by_doc, "pairs") | f"{label}/GroupShardPairs" >> beam.GroupByKey()
            fig.held(grouped, "pairs", "Pairs", size=lambda vs: sum(1 for _ in vs))
            verified = grouped | f"{label}/Verify" >> beam.ParDo(
                VerifyPairs(stage.out_dir, mh.threshold)
            ).with_outputs("rejected", main="edges")
            edges = verified.edges
            fig.count(edges, "pairs_verified")
            fig.count(verified.rejected, "pairs_rejected")
        else:
            edges = pairs | f"{label}/Unverified" >> beam.Map(lambda ab: (ab[0], ab[1], None))
        if mh.keep_edges:
            blocks = (
                edges
                | f"{label}/EdgesByBlock"
                >> beam.Map(lambda e: ((min(e[0], e[1])[0], min(e[0], e[1])[1] // EDGE_BLOCK), e))
                | f"{label}/GroupEdges" >> beam.GroupByKey()
            )
            fig.held(blocks, "edges", "Edges", size=lambda vs: sum(1 for _ in vs))
            _ = blocks | f"{label}/WriteEdges" >> beam.ParDo(WriteEdges(stage.out_dir))
        edges = edges | f"{label}/DropWeights" >> beam.Map(lambda e: (e[0], e[1]))
        for r in range(cc_rounds):  # no Distinct between rounds: every star step takes a set of neighbours
            for step, fn in ((f"Large{r}", large_star), (f"Small{r}", small_star)):
                both = edges | f"{label}/{step}/Both" >> beam.FlatMap(_both_ways)
                grouped = fig.shuffle(both, "components", step) | f"{label}/{step}/Group" >> beam.GroupByKey()
                fig.held(grouped, "neighbourhood", step)
                edges = grouped | f"{label}/{step}/Star" >> beam.FlatMap(_star(fn))
        final = (
            edges
            | f"{label}/Final/Both" >> beam.FlatMap(_both_ways)
            | f"{label}/Final/Group" >> beam.GroupByKey()
        )
        roots = final | f"{label}/Roots" >> beam.FlatMap(_roots).with_outputs("unconverged", main="roots")
        unconverged = roots.unconverged | f"{label}/Unconverged" >> beam.CombineGlobally(sum)
        removal_sets.append(
            roots.roots
            | f"{label}/MinhashRemovals"
            >> beam.Map(lambda nr: (nr[0][0], (nr[0][1], "dedup/minhash", nr[1])))
        )
        by_root = roots.roots | f"{label}/ByRoot" >> beam.Map(lambda nr: (nr[1], nr[0]))
        comp_groups = by_root | f"{label}/GroupComponents" >> beam.GroupByKey()
        fig.held(comp_groups, "component", "Components", size=lambda vs: len(set(vs)) + 1)
        components = comp_groups | f"{label}/Component" >> beam.Map(_component)
        histogram = (
            components
            | f"{label}/Sizes" >> beam.Map(lambda c: c[0])
            | f"{label}/Histogram" >> beam.CombineGlobally(ComponentSizes())
        )
        largest = components | f"{label}/Largest" >> beam.combiners.Top.Of(
            10, key=lambda c: (c[0], [-x for x in c[1][0]])
        )
    written = _write_removals(removal_sets, stage.out_dir, True, fig, label, unconverged)
    sums, maxes = fig.combined()
    return written | f"{label}/Report" >> beam.ParDo(
        WriteDedupReport(stage, cc_rounds if mh is not None else None),
        beam.pvalue.AsDict(sums),
        beam.pvalue.AsDict(maxes),
        beam.pvalue.AsSingleton(histogram),
        beam.pvalue.AsSingleton(largest),
        beam.pvalue.AsSingleton(unconverged),
    )


def _write_removals(
    removal_sets: list, stage_dir: str, merge: bool, fig: Figures, label: str, unconverged=None
) -> beam.PCollection:
    """Every ``(shard, decision)`` grouped by shard and written; the result holds one element (the written
    shards' list) once all are written."""
    p = fig.sums[0].pipeline
    if not removal_sets:
        removal_sets = [p | f"{label}/NoRemovals" >> beam.Create([])]
    by_shard = fig.shuffle(removal_sets | f"{label}/AllRemovals" >> beam.Flatten(), "removals")
    grouped = by_shard | f"{label}/GroupByShard" >> beam.GroupByKey()
    fig.held(grouped, "removals", "Removals", size=lambda vs: sum(1 for _ in vs))
    side = [] if unconverged is None else [beam.pvalue.AsSingleton(unconverged)]
    return (
        grouped
        | f"{label}/WriteRemovals" >> beam.ParDo(WriteRemovals(stage_dir, merge_reasons=merge), *side)
        | f"{label}/Written" >> beam.combiners.ToList()
    )


class LineKeys(beam.DoFn):
    def __init__(self, stage: ParagraphStage) -> None:
        self.stage = stage

    def process(self, shard):
        keys, docs = self.stage.line_keys(shard)
        yield beam.pvalue.TaggedOutput("documents", docs)
        yield from keys


def paragraph_removals(element):
    """All occurrences of one line hash but the first (walked twice, never stored)."""
    _, refs = element
    first = min(refs)
    for ref in refs:
        if ref != first:
            yield ref[0], (ref[1], ref[2])


class WriteParagraphReport(beam.DoFn):
    def __init__(self, stage: ParagraphStage) -> None:
        self.stage = stage

    def process(self, _, sums, maxes):
        counters, shuffle, held_by, held = report_figures(sums, maxes)
        report = component_report({}, [], held, shuffle)
        report["counters"] = counters
        report["largest_held_by_kind"] = held_by
        self.stage.write_global_report(report)
        yield None


def paragraphs_global(shards: beam.PCollection, stage: ParagraphStage, label: str) -> beam.PCollection:
    """The line-level global phase on ``shards``; one element once ``_GLOBAL_SUCCESS`` is written."""
    fig = Figures(label)
    keyed = (
        shards
        | f"{label}/Spread" >> beam.Reshuffle()
        | f"{label}/LineKeys" >> beam.ParDo(LineKeys(stage)).with_outputs("documents", main="lines")
    )
    fig.count(keyed.documents, "documents", value=lambda n: n)
    fig.count(keyed.lines, "lines")
    removals = (
        fig.shuffle(keyed.lines, "lines")
        | f"{label}/GroupLines" >> beam.GroupByKey()
        | f"{label}/Removals" >> beam.FlatMap(paragraph_removals)
    )
    written = _write_removals([removals], stage.out_dir, False, fig, label)
    sums, maxes = fig.combined()
    return written | f"{label}/Report" >> beam.ParDo(
        WriteParagraphReport(stage), beam.pvalue.AsDict(sums), beam.pvalue.AsDict(maxes)
    )


def build_global(
    shards: beam.PCollection, stage, label: str, cc_rounds: int = CC_ROUNDS
) -> beam.PCollection | None:
    """The stage's global phase on ``shards`` (None for a stage without one, or whose phase an earlier run
    committed); the result holds one element once the phase is committed."""
    from datapipe.quality.stage import QualityStage
    from pipelines.beam_quality import quality_global

    if not isinstance(stage, DedupStage | ParagraphStage | QualityStage) or stage.global_done():
        return None
    if isinstance(stage, DedupStage):
        return dedup_global(shards, stage, label, cc_rounds)
    if isinstance(stage, ParagraphStage):
        return paragraphs_global(shards, stage, label)
    return quality_global(shards, stage, label)


def run_dedup_global(
    stage: DedupStage, shards: list, options: PipelineOptions, cc_rounds: int = CC_ROUNDS
) -> dict:
    """The document-level global phase alone, as a pipeline of its own (benchmarks), with as many rounds as the
    components need; returns the report."""
    while True:
        with beam.Pipeline(options=options) as p:
            dedup_global(p | "Shards" >> beam.Create(shards), stage, "Dedup", cc_rounds)
        if stage.global_done():
            return stage.read_global_report()
        cc_rounds = next_cc_rounds(stage, cc_rounds)


def next_cc_rounds(stage, rounds: int) -> int:
    """The rounds for another attempt at a phase whose components did not converge in ``rounds``."""
    if rounds >= MAX_CC_ROUNDS:
        from datapipe.errors import DatapipeError

        raise DatapipeError(
            f"{stage.out_dir}: duplicate components did not converge in {rounds} large-star/small-star rounds"
        )
    return rounds * 2
