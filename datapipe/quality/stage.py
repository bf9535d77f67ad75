"""The ``quality`` stage: score every document with one or more scorers (fastText classifiers, embedding scorers:
:mod:`datapipe.quality.scorers`), then select.

Scores go to ``metadata.quality.<classifier>`` (probability of the positive label). Selection keeps documents whose
score is at or above an absolute ``threshold`` (DCLM's published 0.018112 as the ``dclm`` preset), or the top
``keep_fraction``: the cut-off is then a global quantile of (score, tie-break) computed in a first pass over all
shards (:mod:`datapipe.quality.cutoff`, exact, the same on every engine), and written to ``stage.json``. The
tie-break is a hash of the document id, so documents with equal scores are kept or dropped the same way on every
run.

A first pass keeps the scores it computed in ``scores/part-NNNNN.npz`` (8 bytes per document and scorer), and the
shard pass reads them instead of scoring again: with a transformers scorer, scoring is nearly all of the stage's
time, and it would otherwise be paid twice. The folder is removed before the stage commits.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xxhash

from datapipe.config.stages import QualityConfig
from datapipe.io import fs
from datapipe.io.shards import Shard
from datapipe.quality.cutoff import cutoff_report, keys_array
from datapipe.quality.ensemble import ENSEMBLE, bucket_of, combine, ensemble_report, scores_array
from datapipe.quality.scorers import Scorer, load_scorer
from datapipe.runtime.evidence import Removal
from datapipe.runtime.stage import WARM_TEXT, ConfiguredStage, TwoPhaseStage
from datapipe.runtime.stats import StageStats

BATCH = 512
SCORES = "scores"  # the first pass's scores, per shard, for the shard pass (removed before the commit)


def tiebreak(ref: str) -> int:
    """Orders documents of equal score by their ``ref`` (where they were read: unique and stable, unlike the
    input's own ids; a part file of an older build has it as ``id``)."""
    return xxhash.xxh3_64_intdigest(ref.encode("utf-8"))


@dataclass
class QualityStage(TwoPhaseStage, ConfiguredStage[QualityConfig]):
    name: str = "quality"
    _models: dict[str, Scorer] | None = field(default=None, repr=False)

    def __getstate__(self) -> dict[str, object]:  # models load in setup(), once per worker
        return {**self.__dict__, "_models": None}

    @property
    def needs_global(self) -> bool:  # type: ignore[override]
        return self.config.keep_fraction is not None or self.config.ensemble is not None

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.config.classifiers]

    def selection_array(self, shard: Shard) -> np.ndarray:
        """What the global phase gathers of one shard: every scorer's scores for an ensemble (its buckets'
        boundaries), else the selected scorer's (score, tie-break) keys for ``keep_fraction``'s cut-off."""
        if self.config.ensemble is None:
            return keys_array(self.selection_keys(shard))
        self.setup()
        assert self._models is not None
        parts = []
        raw: dict[str, list[np.ndarray]] = {n: [] for n in self.names}
        for batch in self._batches(shard):
            texts = [d["text"] for d in batch]
            batch_scores = {n: self._models[n].scores(texts) for n in self.names}
            for n, v in batch_scores.items():
                raw[n].append(v)
            scores = {n: [round(float(s), 8) for s in v] for n, v in batch_scores.items()}
            parts.append(scores_array(self.names, scores))
        self._save_scores(shard, raw)
        return np.concatenate(parts) if parts else scores_array(self.names, {n: [] for n in self.names})

    def _scores_url(self, shard: Shard) -> str:
        return fs.join(self.out_dir, SCORES, f"{shard.part}.npz")

    def _save_scores(self, shard: Shard, scores: dict[str, list[np.ndarray]]) -> None:
        buf = io.BytesIO()
        arrays: dict[str, Any] = {n: np.concatenate(v) if v else np.zeros(0) for n, v in scores.items()}
        np.savez(buf, **arrays)
        fs.write_bytes_atomic(self._scores_url(shard), buf.getvalue())

    def _saved_scores(self, shard: Shard) -> dict[str, np.ndarray]:
        """The scores the first pass kept for this shard, by scorer ({} when it kept none)."""
        url = self._scores_url(shard)
        if not fs.exists(url):
            return {}
        with np.load(io.BytesIO(fs.read_bytes(url))) as saved:
            return {n: saved[n] for n in saved.files}

    def cleanup(self) -> None:
        """Before the commit: the first pass's scores are no longer needed."""
        fs.remove(fs.join(self.out_dir, SCORES))

    def selection_report(self, parts: list[np.ndarray]) -> dict[str, Any]:
        """``global.json`` from every shard's :meth:`selection_array` (a pure function of them)."""
        if self.config.ensemble is not None:
            return ensemble_report(parts, self.names, self.config.ensemble.buckets)
        assert self.config.keep_fraction is not None
        return cutoff_report(parts, self.config.keep_fraction)

    def setup(self) -> None:
        if self._models is None:
            self._models = {
                c.name: load_scorer(c.model, c.positive_label, c.lowercase) for c in self.config.classifiers
            }

    def warm(self) -> None:
        """Load the classifiers and score :data:`WARM_TEXT` with each (their kernels load on the first batch)."""
        self.setup()
        assert self._models is not None
        for model in self._models.values():
            model.scores([WARM_TEXT])

    def _batches(self, shard: Shard):
        batch: list[dict] = []
        for doc in super().documents(shard):
            batch.append(doc)
            if len(batch) >= BATCH:
                yield batch
                batch = []
        if batch:
            yield batch

    def selection_keys(self, shard: Shard) -> list[tuple[float, int]]:
        """(score, tie-break) of every document of a shard, for the global quantile."""
        self.setup()
        assert self._models is not None and self.config.select_classifier is not None
        name = self.config.select_classifier
        model = self._models[name]
        out: list[tuple[float, int]] = []
        raw: list[np.ndarray] = []
        for batch in self._batches(shard):
            scores = model.scores([d["text"] for d in batch])
            raw.append(scores)
            out.extend(
                (round(float(s), 8), tiebreak(d.get("ref", d["id"])))
                for s, d in zip(scores, batch, strict=True)
            )
        self._save_scores(shard, {name: raw})
        return out

    def _cutoff(self) -> tuple[float, int] | None:
        if self.config.ensemble is not None:
            return None
        if self.config.keep_fraction is not None:
            c = self.read_global_report()["cutoff"]
            return None if c is None else (c[0], c[1])  # None: the input had no document
        if self.config.threshold is not None:
            return (self.config.threshold, -1)
        return None

    def begin_shard(self, shard: Shard) -> None:
        self._cut = self._cutoff()
        self._bounds = self.read_global_report()["boundaries"] if self.config.ensemble is not None else None

    def documents(self, shard: Shard):
        """Documents with ``metadata.quality`` filled in, scored a batch at a time (or read from the first pass's
        scores, which are the same numbers: the same scorers on the same batches)."""
        self.setup()
        assert self._models is not None
        saved = self._saved_scores(shard)
        start = 0
        for batch in self._batches(shard):
            texts = [d["text"] for d in batch]
            end = start + len(batch)
            scores = {
                name: saved[name][start:end] if len(saved.get(name, ())) >= end else m.scores(texts)
                for name, m in self._models.items()
            }
            start = end
            for i, doc in enumerate(batch):
                doc["metadata"]["quality"] = {
                    **doc["metadata"].get("quality", {}),
                    **{name: round(float(s[i]), 8) for name, s in scores.items()},
                }
                yield doc

    def keep(self, index: int, doc: dict[str, Any], stats: StageStats) -> str | None:
        for name, score in doc["metadata"]["quality"].items():
            stats.observe(f"quality/{name}", score, "unit")
        if self._bounds is not None:
            return self._keep_bucket(doc, stats)
        if self._cut is None:
            return None
        score = doc["metadata"]["quality"][self.config.select_classifier]
        if (score, tiebreak(doc.get("ref", doc["id"]))) < self._cut:
            name = self.config.select_classifier
            tie = score == self._cut[0]  # at the cut-off score: the ref's hash decided
            why = Removal(
                "quality/below_cutoff",
                f"quality/{name}",
                score,
                "=" if tie else "<",
                self._cut[0],
                note="a tie at the cut-off, broken by the ref's hash" if tie else None,
            )
            return why
        return None

    def _keep_bucket(self, doc: dict[str, Any], stats: StageStats) -> str | None:
        """An ensemble: each scorer's bucket and their combination into ``metadata.quality_buckets`` (the evidence),
        then the selection by bucket."""
        ensemble = self.config.ensemble
        assert ensemble is not None and self._bounds is not None
        scores = doc["metadata"]["quality"]
        buckets: dict[str, float] = {n: bucket_of(scores[n], self._bounds[n]) for n in self.names}
        combined = combine(buckets, dict(ensemble.weights), ensemble.combine)
        doc["metadata"]["quality_buckets"] = {**buckets, ENSEMBLE: combined}
        stats.observe("quality/ensemble_bucket", combined / max(1, ensemble.buckets - 1), "unit")
        if self.config.min_bucket is not None and combined < self.config.min_bucket:
            note = ", ".join(f"{n} {int(b)}" for n, b in buckets.items())
            return Removal(
                "quality/below_bucket",
                "quality/ensemble",
                combined,
                "<",
                self.config.min_bucket,
                note=note,
            )
        copies = max((n for bucket, n in self.config.repeat if combined >= bucket), default=1)
        if copies > 1:  # the tokenize stage writes it that many times
            doc["metadata"]["quality_repeats"] = copies
            stats.counters["quality/repeats"] += copies - 1
        return None

    def finalize(self, shards: list[Shard], stats: list[StageStats]) -> dict[str, object]:
        extra = super().finalize(shards, stats)
        if self.needs_global:
            extra["quality"] = self.read_global_report()
        return extra
