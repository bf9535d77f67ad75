"""The global phases of the dedup stages through Beam's ``GroupByKey`` (``--global-shuffle beam``, the default on a
distributed runner), as composite transforms inside the build's pipeline. The other path, the phase's task table
that the datatrove engine runs too, is :mod:`pipelines.beam.phase`; ``benchmarks/global_shuffle.py`` compares them.

Document level (:class:`DedupGlobal`)::

    shards | SignShard ──exact──► GroupByKey(text hash) ──► exact_removals ───────────┐
                       └─band───► GroupByKey(band key) ──► candidate pairs           │
                                  | Distinct | GroupByKey(shard pair) | verify       │
                                  | large-star/small-star rounds | star_root ────────┤
                                                                                      ▼
                          GroupByKey(input shard) ──► removals/part-NNNNN.json ──► global.json

Paragraph level (:class:`ParagraphsGlobal`)::

    shards | line keys | GroupByKey(line hash) | line_removals | GroupByKey(shard) | removals

This module only moves data: every decision (which copy survives, a node's root, which reason names a document,
the component report) is a function of :mod:`datapipe.dedup.components`, which the datatrove engine calls too.

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

from collections.abc import Callable, Iterable
from typing import Any

from datapipe.dedup.components import (
    ComponentTally,
    component_entry,
    component_report,
    edge_block,
    edge_weight,
    exact_removals,
    line_removals,
    merge_decisions,
    minhash_removal,
    report_figures,
    star_root,
)
from datapipe.dedup.graph import bucket_pairs, large_star, small_star
from datapipe.dedup.minhash import jaccard
from datapipe.dedup.stage import DedupStage, ParagraphStage
from datapipe.dedup.store import (
    ShingleStore,
    write_components,
    write_edges,
    write_line_removals,
    write_removals,
)
from datapipe.errors import DatapipeError
from pipelines.beam.quiet import PipelineOptions, beam
from pipelines.beam.runner import pipeline

CODER = beam.coders.FastPrimitivesCoder()
CC_ROUNDS = 4  # large-star/small-star rounds a first attempt runs; a graph that needs more gets twice as many
MAX_CC_ROUNDS = 64

__all__ = [
    "CC_ROUNDS",
    "DedupGlobal",
    "ParagraphsGlobal",
    "ReportFigures",
    "next_cc_rounds",
    "run_dedup_global",
]


class ReportFigures(beam.CombineFn):
    """The run report from ``(kind, name, value)`` figures: ``sum`` (shuffle bytes, counters) and ``max`` (held
    sizes) per name, and ``component`` values ``(size, members)`` into a :class:`ComponentTally`. Its accumulator
    stays small however many figures arrive."""

    def create_accumulator(self) -> dict[str, Any]:
        return {"sum": {}, "max": {}, "components": ComponentTally()}

    def add_input(self, acc: dict[str, Any], figure: tuple[str, str, Any]) -> dict[str, Any]:
        kind, name, value = figure
        if kind == "sum":
            acc["sum"][name] = acc["sum"].get(name, 0) + value
        elif kind == "max":
            acc["max"][name] = max(acc["max"].get(name, 0), value)
        else:
            acc["components"].add(value)
        return acc

    def merge_accumulators(self, accs: Iterable[dict[str, Any]]) -> dict[str, Any]:
        out = self.create_accumulator()
        for a in accs:
            for k, v in a["sum"].items():
                out["sum"][k] = out["sum"].get(k, 0) + v
            for k, v in a["max"].items():
                out["max"][k] = max(out["max"].get(k, v), v)
            out["components"].merge(a["components"])
        return out

    def extract_output(self, acc: dict[str, Any]) -> dict[str, Any]:
        tally: ComponentTally = acc["components"]
        return {"sum": acc["sum"], "max": acc["max"], "histogram": tally.histogram, "largest": tally.top()}


def _distinct(values: Iterable[object]) -> int:
    return len(set(values))


def _count(values: Iterable[object]) -> int:
    return sum(1 for _ in values)


class Figures:
    """The figures of one global phase, from branches off its main flow, combined into one report element. The
    global phase and the stages after it share the build's pipeline, so Beam's metrics (read when a pipeline
    ends) would come too late; and the report element, combined from every figure, is what the commit waits for.
    Used inside a composite transform's ``expand``, so its labels are scoped by it."""

    def __init__(self) -> None:
        self.parts: list[beam.PCollection] = []

    def group(
        self,
        grouped: beam.PCollection,
        step: str,
        shuffle: str | None,
        held: str | None = None,
        size: Callable[[Iterable[object]], int] = _distinct,
    ) -> beam.PCollection:
        """Figures of a ``GroupByKey``'s output: the encoded bytes that went into it (``shuffle_bytes.<shuffle>``,
        summed over steps) and the size of its largest group, which a ``DoFn`` holds (``held.<held>``)."""

        def figures(kv):
            key, values = kv
            if shuffle:
                yield "sum", f"shuffle_bytes.{shuffle}", sum(len(CODER.encode((key, v))) for v in values)
            if held:
                yield "max", f"held.{held}", size(values)

        self.parts.append(grouped | f"Figures/{step}" >> beam.FlatMap(figures))
        return grouped

    def add(self, pcoll: beam.PCollection) -> None:
        """A PCollection of figures already."""
        self.parts.append(pcoll)

    def report(self) -> beam.PCollection:
        """One element, the combined figures, once every branch is complete."""
        return self.parts | "AllFigures" >> beam.Flatten() | "Report" >> beam.CombineGlobally(ReportFigures())


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


class BucketPairs(beam.DoFn):
    def __init__(self, max_pairs_bucket: int) -> None:
        self.max_pairs_bucket = max_pairs_bucket

    def process(self, element):
        _, members = element  # (ref, content key)
        yield from bucket_pairs(members, self.max_pairs_bucket)


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
            weight = edge_weight(jaccard(self.store.get(a), self.store.get(b)), self.threshold)
            if weight is not None:
                verified += 1
                yield a, b, weight
            else:
                rejected += 1
        yield beam.pvalue.TaggedOutput("figures", ("sum", "counters.pairs_verified", verified))
        yield beam.pvalue.TaggedOutput("figures", ("sum", "counters.pairs_rejected", rejected))


class WriteEdges(beam.DoFn):
    """Verified edges with their Jaccard, for inspection: one file per block of the edges' smaller ends."""

    def __init__(self, stage_dir: str) -> None:
        self.stage_dir = stage_dir

    def process(self, element):
        (shard, block), edges = element
        write_edges(self.stage_dir, shard, block, edges)
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
    """``(node, root)`` for every node but a root; a node not yet in star form counts as ``unconverged``."""
    node, nbrs = element
    root, converged = star_root(node, set(nbrs))
    if not converged:
        yield beam.pvalue.TaggedOutput("figures", ("sum", "unconverged", 1))
    if root != node:
        yield node, root


def _component_figures(element):
    root, members = element
    entry = component_entry([*members, root])
    yield "max", "held.component", entry[0]
    yield "component", "", entry


class WriteRemovals(beam.DoFn):
    """One shard's sorted removal list; yields a figure, so the report waits for every list."""

    def __init__(self, stage_dir: str, merge_reasons: bool) -> None:
        self.stage_dir = stage_dir
        self.merge_reasons = merge_reasons

    def process(self, element):
        shard, items = element
        # documents, or lines (only the file shuffle reads earlier builds: no dedup.against here)
        if self.merge_reasons:
            write_removals(self.stage_dir, {shard: merge_decisions(items)})
        else:
            write_line_removals(self.stage_dir, {shard: list(items)})
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
        tally = ComponentTally(figures["histogram"], figures["largest"])
        doc = tally.to_dict()
        report = component_report(doc["histogram"], doc["largest"], held, shuffle)
        report["counters"] = counters
        report["largest_held_by_kind"] = held_by
        if self.rounds is not None:
            report["cc_rounds"] = self.rounds
            write_components(self.stage.out_dir, doc)
        self.stage.write_global_report(report)
        yield None


class WriteRemovalLists(beam.PTransform):
    """Every ``(shard, decision)`` grouped by shard and written; the output is a figure per file written (the
    report waits for them), and the grouping's figures go to ``fig``."""

    def __init__(self, stage_dir: str, merge: bool, fig: Figures) -> None:
        super().__init__()
        self.stage_dir, self.merge, self.fig = stage_dir, merge, fig

    def expand(self, removals):
        grouped = removals | "GroupByShard" >> beam.GroupByKey()
        return self.fig.group(
            grouped, "Removals", "removals", held="removals", size=_count
        ) | "Write" >> beam.ParDo(WriteRemovals(self.stage_dir, merge_reasons=self.merge))


class Components(beam.PTransform):
    """Verified edges -> ``(node, root)`` for every non-root node, by ``rounds`` large-star/small-star rounds; the
    figures (neighbourhood sizes, convergence, component sizes) go to ``fig``."""

    def __init__(self, rounds: int, fig: Figures) -> None:
        super().__init__()
        self.rounds, self.fig = rounds, fig

    def expand(self, edges):
        directed = edges | "BothWays" >> beam.FlatMap(_both_ways)
        for r in range(self.rounds):  # no Distinct between rounds: every star step takes a set of neighbours
            for step, fn in ((f"Large{r}", large_star), (f"Small{r}", small_star)):
                grouped = directed | f"{step}/Group" >> beam.GroupByKey()
                self.fig.group(grouped, step, "components", held="neighbourhood")
                directed = grouped | f"{step}/Star" >> beam.FlatMap(_star(fn))
        roots = (
            directed
            | "Final/Group" >> beam.GroupByKey()
            | "Roots" >> beam.FlatMap(_roots).with_outputs("figures", main="roots")
        )
        self.fig.add(roots.figures)
        self.fig.add(
            roots.roots
            | "ByRoot" >> beam.Map(lambda nr: (nr[1], nr[0]))
            | "GroupComponents" >> beam.GroupByKey()
            | "Components" >> beam.FlatMap(_component_figures)
        )
        return roots.roots


class VerifiedEdges(beam.PTransform):
    """LSH band members -> candidate pairs -> edges ``(a, b, jaccard)`` (verified by exact Jaccard, or every
    candidate with Jaccard None when ``verify`` is off); kept edge files written when asked."""

    def __init__(self, stage: DedupStage, fig: Figures) -> None:
        super().__init__()
        self.stage, self.fig = stage, fig

    def expand(self, bands):
        shape = self.stage.shape
        fig = self.fig
        pairs = (
            fig.group(bands | "GroupBands" >> beam.GroupByKey(), "Bands", "bands", held="bucket")
            | "Pairs" >> beam.ParDo(BucketPairs(shape.max_bucket_pairs))
            | "DistinctPairs" >> beam.Distinct()
        )
        if shape.verify:
            grouped = (
                pairs
                | "ByDocAndShard" >> beam.Map(lambda ab: ((ab[0][0], ab[0][1], ab[1][0]), ab))
                | "GroupShardPairs" >> beam.GroupByKey()
            )
            verified = fig.group(
                grouped, "Pairs", "pairs", held="pairs", size=_count
            ) | "Verify" >> beam.ParDo(VerifyPairs(self.stage.out_dir, shape.threshold)).with_outputs(
                "figures", main="edges"
            )
            fig.add(verified.figures)
            edges = verified.edges
        else:
            edges = pairs | "Unverified" >> beam.Map(lambda ab: (ab[0], ab[1], None))
        if shape.keep_edges:
            blocks = edges | "EdgesByBlock" >> beam.Map(lambda e: (edge_block(e[0], e[1]), e))
            fig.add(
                fig.group(
                    blocks | "GroupEdges" >> beam.GroupByKey(), "Edges", None, held="edges", size=_count
                )
                | "WriteEdges" >> beam.ParDo(WriteEdges(self.stage.out_dir))
            )
        return edges


class DedupGlobal(beam.PTransform):
    """The document-level global phase on a PCollection of shards: removal lists and ``global.json``; its output
    holds one element once ``_GLOBAL_SUCCESS`` is written (none when the components needed more than
    ``cc_rounds``)."""

    def __init__(self, stage: DedupStage, cc_rounds: int = CC_ROUNDS) -> None:
        super().__init__()
        self.stage, self.cc_rounds = stage, cc_rounds

    def expand(self, shards):
        stage = self.stage
        fig = Figures()
        signed = (
            shards
            | "Spread" >> beam.Reshuffle()
            | "Sign" >> beam.ParDo(SignShard(stage)).with_outputs("figures", "exact", "band")
        )
        fig.add(signed.figures)
        removal_sets = []
        shape = stage.shape
        if shape.exact:
            texts = fig.group(signed.exact | "GroupText" >> beam.GroupByKey(), "Texts", "exact")
            removal_sets.append(texts | "ExactRemovals" >> beam.FlatMap(lambda kv: exact_removals(kv[1])))
        if shape.minhash:
            edges = signed.band | "Edges" >> VerifiedEdges(stage, fig)
            roots = edges | "Components" >> Components(self.cc_rounds, fig)
            removal_sets.append(roots | "MinhashRemovals" >> beam.MapTuple(minhash_removal))
        if not removal_sets:
            removal_sets = [shards.pipeline | "NoRemovals" >> beam.Create([])]
        removals = removal_sets | "AllRemovals" >> beam.Flatten()
        fig.add(removals | "Removals" >> WriteRemovalLists(stage.out_dir, True, fig))
        rounds = self.cc_rounds if shape.minhash else None
        return fig.report() | "Commit" >> beam.ParDo(WriteReport(stage, rounds))


class LineKeys(beam.DoFn):
    def __init__(self, stage: ParagraphStage) -> None:
        self.stage = stage

    def process(self, shard):
        keys, docs = self.stage.line_keys(shard)
        yield beam.pvalue.TaggedOutput("figures", ("sum", "counters.documents", docs))
        yield beam.pvalue.TaggedOutput("figures", ("sum", "counters.lines", len(keys)))
        yield from keys


class ParagraphsGlobal(beam.PTransform):
    """The line-level global phase on a PCollection of shards; one element once ``_GLOBAL_SUCCESS`` is written."""

    def __init__(self, stage: ParagraphStage) -> None:
        super().__init__()
        self.stage = stage

    def expand(self, shards):
        fig = Figures()
        keyed = (
            shards
            | "Spread" >> beam.Reshuffle()
            | "LineKeys" >> beam.ParDo(LineKeys(self.stage)).with_outputs("figures", main="lines")
        )
        fig.add(keyed.figures)
        grouped = keyed.lines | "GroupLines" >> beam.GroupByKey()
        removals = fig.group(grouped, "Lines", "lines") | "LineRemovals" >> beam.FlatMap(
            lambda kv: line_removals(kv[1])
        )
        fig.add(removals | "Removals" >> WriteRemovalLists(self.stage.out_dir, False, fig))
        return fig.report() | "Commit" >> beam.ParDo(WriteReport(self.stage, None))


def run_dedup_global(
    stage: DedupStage, shards: list, options: PipelineOptions, cc_rounds: int = CC_ROUNDS
) -> dict[str, object]:
    """The document-level global phase alone, as a pipeline of its own (benchmarks), with as many rounds as the
    components need; returns the report."""
    while True:
        stage.reset_global()
        with pipeline(options) as p:
            _ = p | "Shards" >> beam.Create(shards) | "Dedup" >> DedupGlobal(stage, cc_rounds)
        if stage.global_done():
            return stage.read_global_report()
        cc_rounds = next_cc_rounds(stage.out_dir, cc_rounds)


def next_cc_rounds(out_dir: str, rounds: int) -> int:
    """The rounds for another attempt at a phase whose components did not converge in ``rounds``."""
    if rounds >= MAX_CC_ROUNDS:
        raise DatapipeError(
            f"{out_dir}: duplicate components did not converge in {rounds} large-star/small-star rounds"
        )
    return rounds * 2
