"""The ``substrings`` stage: exact-substring dedup in a build (``dedup: {substrings: ...}``), after paragraphs.

Its global phase (:data:`datapipe.substrings.phase.SUBSTRINGS_TASKS`) writes every input shard's text into the
stage's work folder (``<stage>/work``, one unit per shard), then runs the suffix-array units of
:mod:`datapipe.substrings` within the memory budget; the shard phase applies the decisions to each document: the
repeated spans are cut out, the spans and where each piece's kept copy is go into ``metadata.substrings``, and a
document left shorter than ``min_chars`` is removed as ``substrings/too_short`` with the same evidence.

The work folder stays with the stage: a later build names this stage folder in ``against`` and its spans are
removed there too (its text precedes the new build's; nothing here changes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from datapipe.config.stages import SubstringsConfig
from datapipe.io import fs
from datapipe.io.shards import Shard
from datapipe.runtime.evidence import Removal
from datapipe.runtime.stage import ConfiguredStage, TwoPhaseStage
from datapipe.runtime.stats import StageStats
from datapipe.substrings.apply import Result, apply_part

WORK = "work"  # the stage's work folder (datapipe.substrings.work), kept for later builds' ``against``
MAX_SPANS_RECORDED = 64  # a document's evidence lists its first spans; the counts cover all of them


@dataclass
class SubstringsStage(TwoPhaseStage, ConfiguredStage[SubstringsConfig]):
    name: str = "substrings"
    _results: dict[int, Result] = field(default_factory=dict, repr=False)

    @property
    def work(self) -> str:
        return fs.local_path(fs.join(self.out_dir, WORK))

    @property
    def priors(self) -> tuple[str, ...]:
        """The earlier builds' work folders, earliest first."""
        return tuple(fs.local_path(fs.join(stage_dir, WORK)) for stage_dir in self.config.against)

    def begin_shard(self, shard: Shard) -> None:
        # one part's documents with their decisions: read forwards once, a document's text at a time
        self._results = {
            r.doc: r for r in apply_part(self.work, shard.index, self.config.keep, self.config.lines)
        }
        self._first = min(self._results, default=0)

    def keep(self, index: int, doc: dict[str, object], stats: StageStats) -> Removal | None:
        result = self._results.pop(self._first + index)
        if not result.spans:
            return None
        text = result.text
        doc["text"] = text
        stats.counters["substrings/documents_cut"] += 1
        stats.counters["substrings/spans_removed"] += len(result.spans)
        stats.counters["substrings/bytes_removed"] += result.removed
        evidence = _evidence(result)
        metadata = doc.setdefault("metadata", {})
        assert isinstance(metadata, dict)
        metadata["substrings"] = evidence
        left = len(text.strip())
        if left < max(self.config.min_chars, 1):
            return Removal(
                "substrings/too_short",
                "chars_left",
                left,
                "<",
                max(self.config.min_chars, 1),
                note=f"{len(result.spans)} repeated spans removed ({result.removed:,} of {result.size:,} bytes)",
            )
        return None

    def finalize(self, shards: list[Shard], stats: list[StageStats]) -> dict[str, object]:
        return {**super().finalize(shards, stats), "substrings": self.read_global_report()}


def _evidence(result: Result) -> dict[str, object]:
    """What a reader of the document (or of its removal) sees: the bytes removed, and each span (its byte
    offsets in the document before the cut) with the pieces it repeats, each pointing at its kept copy as
    ``[document, offset]`` (the build's global document number: shard by shard, in order; an earlier build's
    documents are negative)."""
    spans = [
        {"start": s.start, "end": s.end, "copies": [[p.start, p.end, p.doc, p.offset] for p in s.pieces]}
        for s in result.spans[:MAX_SPANS_RECORDED]
    ]
    return {
        "bytes_removed": result.removed,
        "bytes_before": result.size,
        "spans": len(result.spans),
        "first_spans": spans,
    }
