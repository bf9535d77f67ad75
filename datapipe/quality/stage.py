"""The ``quality`` stage: score every document with one or more fastText classifiers, then select.

Scores go to ``metadata.quality.<classifier>`` (probability of the positive label). Selection keeps documents whose
score is at or above an absolute ``threshold`` (DCLM's published 0.018112 as the ``dclm`` preset), or the top
``keep_fraction``: the cut-off is then a global quantile of (score, tie-break) computed in a first pass over all
shards with Beam's approximate-quantiles combiner, and written to ``stage.json``. The tie-break is a hash of the
document id, so documents with equal scores are kept or dropped the same way on every run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import xxhash

from datapipe.io.jsonl import read_records, write_records_atomic
from datapipe.io.shards import Shard
from datapipe.quality.model import QualityModel
from datapipe.stage import TwoPhaseStage
from datapipe.stats import StageStats

BATCH = 512
DCLM_THRESHOLD = 0.018112


@dataclass(frozen=True)
class ClassifierRef:
    name: str
    model: str  # a path/URL, or "recipe:NAME" until build_mixture resolves it
    positive_label: str = "__label__hq"
    lowercase: bool = False
    identity: str = ""  # the recipe hash or the file size: part of the stage hash


@dataclass(frozen=True)
class QualityConfig:
    classifiers: tuple[ClassifierRef, ...]
    select_classifier: str | None = None
    threshold: float | None = None
    keep_fraction: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "classifiers": [
                {"name": c.name, "model": c.model, "positive_label": c.positive_label, "identity": c.identity}
                for c in self.classifiers
            ],
            "select": {
                "classifier": self.select_classifier,
                "threshold": self.threshold,
                "keep_fraction": self.keep_fraction,
            },
        }


def tiebreak(doc_id: str) -> int:
    return xxhash.xxh3_64_intdigest(doc_id.encode("utf-8"))


@dataclass
class QualityStage(TwoPhaseStage):
    source: str
    config: QualityConfig
    input_dir: str
    out_dir: str
    name: str = "quality"
    _models: dict[str, QualityModel] | None = field(default=None, repr=False)

    def __getstate__(self) -> dict[str, Any]:  # models load in setup(), once per worker
        return {**self.__dict__, "_models": None}

    @property
    def needs_global(self) -> bool:  # type: ignore[override]
        return self.config.keep_fraction is not None

    def setup(self) -> None:
        if self._models is None:
            self._models = {
                c.name: QualityModel(c.model, c.positive_label, c.lowercase) for c in self.config.classifiers
            }

    def _batches(self, shard: Shard):
        batch: list[dict] = []
        for doc in read_records(self.upstream(shard)):
            batch.append(doc)
            if len(batch) >= BATCH:
                yield batch
                batch = []
        if batch:
            yield batch

    def selection_keys(self, shard: Shard) -> list[tuple[float, int]]:
        """(score, tie-break) of every document of a shard, for the global quantile."""
        self.setup()
        assert self._models is not None
        model = self._models[self.config.select_classifier]
        out = []
        for batch in self._batches(shard):
            scores = model.scores([d["text"] for d in batch])
            out.extend((float(s), tiebreak(d["id"])) for s, d in zip(scores, batch, strict=True))
        return out

    def _cutoff(self) -> tuple[float, int] | None:
        if self.config.keep_fraction is not None:
            c = self.read_global_report()["cutoff"]
            return (c[0], c[1])
        if self.config.threshold is not None:
            return (self.config.threshold, -1)
        return None

    def process_shard(self, shard: Shard) -> StageStats:
        self.setup()
        assert self._models is not None
        cutoff = self._cutoff()
        stats = StageStats()
        kept = []
        for batch in self._batches(shard):
            texts = [d["text"] for d in batch]
            scores = {name: m.scores(texts) for name, m in self._models.items()}
            for i, doc in enumerate(batch):
                stats.docs_in += 1
                doc["metadata"]["quality"] = {
                    **doc["metadata"].get("quality", {}),
                    **{name: round(float(s[i]), 8) for name, s in scores.items()},
                }
                if cutoff is not None:
                    score = float(scores[self.config.select_classifier][i])
                    if (score, tiebreak(doc["id"])) < cutoff:
                        stats.remove("quality/below_cutoff")
                        continue
                stats.docs_kept += 1
                stats.chars_out += len(doc["text"])
                kept.append(doc)
        write_records_atomic(self.part_url(shard), kept)
        return stats

    def finalize(self, shards: list[Shard], stats: list[StageStats]) -> dict[str, Any]:
        extra = super().finalize(shards, stats)
        if self.config.keep_fraction is not None:
            extra["quality"] = self.read_global_report()
        return extra
