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
from pipelines.beam_runner import pipeline

EDGE_BLOCK = 64  # kept edges are written per (shard, block of 64 documents)
CODER = beam.coders.FastPrimitivesCoder()
CC_ROUNDS = 4  # large-star/small-star rounds a first attempt runs; a graph that needs more gets twice as many
MAX_CC_ROUNDS = 64
LARGEST = 10  # components the report lists


def _largest_key(component: tuple) -> tuple:
    size, members = component
    return size, [-x for x in members[0]]


class ReportFigures(beam.CombineFn):
    """The run report from ``(kind, name, value)`` figures: ``sum`` (shuffle bytes, counters) and ``max`` (held
    sizes) per name, and ``component`` values ``(size, members)`` into a size histogram in powers of two and the
    largest few. Its accumulator stays small however many figures arrive."""

    def create_accumulator(self):
        return {"sum": {}, "max": {}, "histogram": {}, "largest": []}

    def add_input(self, acc, figure):
        kind, name, value = figure
        if kind == "sum":
            acc["sum"][name] = acc["sum"].get(name, 0) + value
        elif kind == "max":
            acc["max"][name] = max(acc["max"].get(name, 0), value)
        else:
            bucket = 1 << max(0, (value[0] - 1).bit_length())
            acc["histogram"][bucket] = acc["histogram"].get(bucket, 0) + 1
            acc["largest"].append(value)
            if len(acc["largest"]) > 4 * LARGEST:
                acc["largest"] = sorted(acc["largest"], key=_largest_key, reverse=True)[:LARGEST]
        return acc

    def merge_accumulators(self, accs):
        out = self.create_accumulator()
        for a in accs:
            for part, fn in (("sum", int.__add__), ("max", max), ("histogram", int.__add__)):
                for k, v in a[part].items():
                    out[part][k] = fn(out[part][k], v) if k in out[part] else v
            out["largest"].extend(a["largest"])
        out["largest"] = sorted(out["largest"], key=_largest_key, reverse=True)[:LARGEST]
        return out

    def extract_output(self, acc):
        return {**acc, "largest": sorted(acc["largest"], key=_largest_key, reverse=True)[:LARGEST]}


def _distinct(values) -> int:
    return len(set(values))


def _count(values) -> int:
    return sum(1 for _ in values)


class Figures:
    """The figures of one global phase, from branches off its main flow, combined into one report element. The
    global phase and the stages after it share the build's pipeline, so Beam's metrics (read when a pipeline
    ends) would come too late; and the report element, combined from every figure, is what the commit waits for."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.parts: list[beam.PCollection] = []

    def group(
        self,
        grouped: beam.PCollection,
        step: str,
        shuffle: str | None,
        held: str | None = None,
        size=_distinct,
    ) -> beam.PCollection:
        """Figures of a ``GroupByKey``'s output: the encoded bytes that went into it (``shuffle_bytes.<shuffle>``,
        summed over steps) and the size of its largest group, which a ``DoFn`` holds (``held.<held>``)."""

        def figures(kv):
            key, values = kv
            if shuffle:
                yield "sum", f"shuffle_bytes.{shuffle}", sum(len(CODER.encode((key, v))) for v in values)
            if held:
                yield "max", f"held.{held}", size(values)

        self.parts.append(grouped | f"{self.label}/Figures/{step}" >> beam.FlatMap(figures))
        return grouped

    def add(self, pcoll: beam.PCollection) -> None:
        """A PCollection of figures already."""
        self.parts.append(pcoll)

    def report(self) -> beam.PCollection:
        """One element, the combined figures, once every branch is complete."""
        return (
            self.parts
            | f"{self.label}/AllFigures" >> beam.Flatten()
            | f"{self.label}/Report" >> beam.CombineGlobally(ReportFigures())
        )


def report_figures(figures: dict) -> tuple[dict, dict, dict, int]:
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


class SignShard(beam.DoFn):
    def __init__(self, stage: DedupStage) -> None:
        self.stage = stage

    def setup(self) -> None:
        self.stage.setup()

    def process(self, shard):
        exact, bands, n = self.stage.sign_shard(shard)
        yield beam.pvalue.TaggedOutput("figures", ("sum", "counters.documents", n))
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
        _, members = element  # (ref, content key)
        yield from bucket_pairs(sorted(set(members)), self.max_pairs_bucket)


class VerifyPairs(beam.DoFn):
    """Exact Jaccard of the two shingle sets, read from the shard files the sign pass wrote; counts go to the
    ``figures`` output."""

    def __init__(self, stage_dir: str, threshold: float) -> None:
        self.stage_dir = stage_dir
        self.threshold = threshold

    def setup(self) -> None:
        self.store = ShingleStore(self.stage_dir)

    def process(self, element):
        _, pairs = element
        verified = rejected = 0
        for a, b in sorted(pairs):
            j = jaccard(self.store.get(a), self.store.get(b))
            if j >= self.threshold:
                verified += 1
                yield a, b, round(j, 4)
            else:
                rejected += 1
        yield beam.pvalue.TaggedOutput("figures", ("sum", "counters.pairs_verified", verified))
        yield beam.pvalue.TaggedOutput("figures", ("sum", "counters.pairs_rejected", rejected))


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
        yield "sum", "files.edges", 1


def _both_ways(edge):
    a, b = edge[0], edge[1]
    return [(a, b), (b, a)]


def _star(fn):
    """A star step over one node's neighbourhood, its edges emitted in both directions for the next grouping."""

    def apply(element):
        node, nbrs = element
        for a, b in fn(node, set(nbrs)):  # a set: an edge can arrive more than once within a round
            yield a, b
            yield b, a

    return apply


def _roots(element):
    """In star form every node but the root has exactly one neighbour, its root; a node that is not yet so counts
    as ``unconverged``."""
    node, nbrs = element
    nbrs = set(nbrs)
    root = min(nbrs | {node})
    if root != node and len(nbrs) != 1:
        yield beam.pvalue.TaggedOutput("figures", ("sum", "unconverged", 1))
    if root != node:
        yield node, root


def _component_figures(element):
    root, members = element
    members = sorted(set(members) | {root})
    yield "max", "held.component", len(members)
    yield "component", "", (len(members), [list(m) for m in members])


class WriteRemovals(beam.DoFn):
    """One shard's sorted removal list; yields a figure, so the report waits for every list."""

    def __init__(self, stage_dir: str, merge_reasons: bool) -> None:
        self.stage_dir = stage_dir
        self.merge_reasons = merge_reasons

    def process(self, element):
        shard, items = element
        items = list(items)
        if self.merge_reasons:  # a document removed by several methods is named by the first in REASON_ORDER
            by_doc: dict[int, list[tuple]] = {}
            for idx, reason, survivor in items:
                by_doc.setdefault(idx, []).append((reason, survivor))
            items = [(idx, *first_reason(decisions)) for idx, decisions in by_doc.items()]
        write_removals(self.stage_dir, shard, items)
        yield "sum", "files.removals", 1


class WriteReport(beam.DoFn):
    """Runs once, on the combined figures (so after every removal list is written): ``global.json`` and
    ``_GLOBAL_SUCCESS``, then yields the element the shard phase waits for. A dedup phase whose components did not
    converge in its rounds writes nothing and yields nothing: the engine runs it again with more."""

    def __init__(self, stage: DedupStage | ParagraphStage, rounds: int | None) -> None:
        self.stage = stage
        self.rounds = rounds

    def process(self, figures):
        if figures["sum"].get("unconverged"):
            return
        counters, shuffle, held_by, held = report_figures(figures)
        histogram = {str(k): v for k, v in sorted(figures["histogram"].items())}
        largest = [[size, members] for size, members in figures["largest"]]
        report = component_report(histogram, largest, held, shuffle)
        report["counters"] = counters
        report["largest_held_by_kind"] = held_by
        if self.rounds is not None:
            import json

            from datapipe.io import fs

            report["cc_rounds"] = self.rounds
            doc = {"histogram": histogram, "largest": largest}
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
    signed = (
        shards
        | f"{label}/Spread" >> beam.Reshuffle()
        | f"{label}/Sign" >> beam.ParDo(SignShard(stage)).with_outputs("figures", "exact", "band")
    )
    fig.add(signed.figures)
    removal_sets = []
    if stage.config.exact:
        texts = fig.group(signed.exact | f"{label}/GroupText" >> beam.GroupByKey(), "Texts", "exact")
        removal_sets.append(texts | f"{label}/ExactRemovals" >> beam.FlatMap(exact_removals))
    if mh is not None:
        buckets = signed.band | f"{label}/GroupBands" >> beam.GroupByKey()
        pairs = (
            fig.group(buckets, "Bands", "bands", held="bucket")
            | f"{label}/Pairs" >> beam.ParDo(BucketPairs(mh.max_bucket_pairs))
            | f"{label}/DistinctPairs" >> beam.Distinct()
        )
        if mh.verify:
            grouped = (
                pairs
                | f"{label}/ByDocAndShard" >> beam.Map(lambda ab: ((ab[0][0], ab[0][1], ab[1][0]), ab))
                | f"{label}/GroupShardPairs" >> beam.GroupByKey()
            )
            verified = fig.group(
                grouped, "Pairs", "pairs", held="pairs", size=_count
            ) | f"{label}/Verify" >> beam.ParDo(VerifyPairs(stage.out_dir, mh.threshold)).with_outputs(
                "figures", main="edges"
            )
            fig.add(verified.figures)
            edges = verified.edges
        else:
            edges = pairs | f"{label}/Unverified" >> beam.Map(lambda ab: (ab[0], ab[1], None))
        if mh.keep_edges:
            blocks = (
                edges
                | f"{label}/EdgesByBlock"
                >> beam.Map(lambda e: ((min(e[0], e[1])[0], min(e[0], e[1])[1] // EDGE_BLOCK), e))
                | f"{label}/GroupEdges" >> beam.GroupByKey()
            )
            fig.add(
                fig.group(blocks, "Edges", None, held="edges", size=_count)
                | f"{label}/WriteEdges" >> beam.ParDo(WriteEdges(stage.out_dir))
            )
        directed = edges | f"{label}/BothWays" >> beam.FlatMap(_both_ways)
        for r in range(cc_rounds):  # no Distinct between rounds: every star step takes a set of neighbours
            for step, fn in ((f"Large{r}", large_star), (f"Small{r}", small_star)):
                grouped = directed | f"{label}/{step}/Group" >> beam.GroupByKey()
                fig.group(grouped, step, "components", held="neighbourhood")
                directed = grouped | f"{label}/{step}/Star" >> beam.FlatMap(_star(fn))
        roots = (
            directed
            | f"{label}/Final/Group" >> beam.GroupByKey()
            | f"{label}/Roots" >> beam.FlatMap(_roots).with_outputs("figures", main="roots")
        )
        fig.add(roots.figures)
        removal_sets.append(
            roots.roots
            | f"{label}/MinhashRemovals"
            >> beam.Map(lambda nr: (nr[0][0], (nr[0][1], "dedup/minhash", nr[1])))
        )
        fig.add(
            roots.roots
            | f"{label}/ByRoot" >> beam.Map(lambda nr: (nr[1], nr[0]))
            | f"{label}/GroupComponents" >> beam.GroupByKey()
            | f"{label}/Components" >> beam.FlatMap(_component_figures)
        )
    _write_removals(removal_sets, stage.out_dir, True, fig, label, shards.pipeline)
    return fig.report() | f"{label}/Commit" >> beam.ParDo(
        WriteReport(stage, cc_rounds if mh is not None else None)
    )


def _write_removals(
    removal_sets: list, stage_dir: str, merge: bool, fig: Figures, label: str, p: beam.Pipeline
) -> None:
    """Every ``(shard, decision)`` grouped by shard and written; each write adds a figure."""
    if not removal_sets:
        removal_sets = [p | f"{label}/NoRemovals" >> beam.Create([])]
    grouped = (
        removal_sets | f"{label}/AllRemovals" >> beam.Flatten() | f"{label}/GroupByShard" >> beam.GroupByKey()
    )
    fig.add(
        fig.group(grouped, "Removals", "removals", held="removals", size=_count)
        | f"{label}/WriteRemovals" >> beam.ParDo(WriteRemovals(stage_dir, merge_reasons=merge))
    )


class LineKeys(beam.DoFn):
    def __init__(self, stage: ParagraphStage) -> None:
        self.stage = stage

    def process(self, shard):
        keys, docs = self.stage.line_keys(shard)
        yield beam.pvalue.TaggedOutput("figures", ("sum", "counters.documents", docs))
        yield beam.pvalue.TaggedOutput("figures", ("sum", "counters.lines", len(keys)))
        yield from keys


def paragraph_removals(element):
    """All occurrences of one line hash but the first (walked twice, never stored)."""
    _, refs = element
    first = min(refs)
    for ref in refs:
        if ref != first:
            yield ref[0], (ref[1], ref[2])


def paragraphs_global(shards: beam.PCollection, stage: ParagraphStage, label: str) -> beam.PCollection:
    """The line-level global phase on ``shards``; one element once ``_GLOBAL_SUCCESS`` is written."""
    fig = Figures(label)
    keyed = (
        shards
        | f"{label}/Spread" >> beam.Reshuffle()
        | f"{label}/LineKeys" >> beam.ParDo(LineKeys(stage)).with_outputs("figures", main="lines")
    )
    fig.add(keyed.figures)
    grouped = keyed.lines | f"{label}/GroupLines" >> beam.GroupByKey()
    removals = fig.group(grouped, "Lines", "lines") | f"{label}/Removals" >> beam.FlatMap(paragraph_removals)
    _write_removals([removals], stage.out_dir, False, fig, label, shards.pipeline)
    return fig.report() | f"{label}/Commit" >> beam.ParDo(WriteReport(stage, None))


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
        stage.reset_global()
        with pipeline(options) as p:
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
