"""The global phase of the quality stage (a kept fraction's cut-off, an ensemble's bucket boundaries), as a composite
transform:

    shards | the stage's selection array per shard | CombineGlobally(gather) | the stage's report -> global.json

It only moves data: the arrays and the report are the stage's (``QualityStage.selection_array`` and
``selection_report``), which the datatrove engine calls too. It runs inside the build's pipeline, between the quality stage's input and its shard phase.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from datapipe.quality.stage import QualityStage
from pipelines.beam.quiet import beam


class GatherArrays(beam.CombineFn):
    """Every shard's key array, in a list (16 bytes a document); the cut-off is taken over all of them."""

    def create_accumulator(self) -> list[np.ndarray]:
        return []

    def add_input(self, acc: list[np.ndarray], keys: np.ndarray) -> list[np.ndarray]:
        acc.append(keys)
        return acc

    def merge_accumulators(self, accs) -> list[np.ndarray]:
        return [keys for acc in accs for keys in acc]

    def extract_output(self, acc: list[np.ndarray]) -> list[np.ndarray]:
        return acc


class WriteCutoff(beam.DoFn):
    def __init__(self, stage: QualityStage) -> None:
        self.stage = stage

    def process(self, parts: list[np.ndarray]):
        report: dict[str, Any] = self.stage.selection_report(parts)
        self.stage.write_global_report(report)
        yield report["documents"]


class QualityCutoff(beam.PTransform):
    """The cut-off on a PCollection of shards; one element once ``global.json`` is written."""

    def __init__(self, stage: QualityStage) -> None:
        super().__init__()
        self.stage = stage

    def expand(self, shards):
        stage = self.stage
        return (
            shards
            | "Spread" >> beam.Reshuffle()
            | "Keys" >> beam.Map(stage.selection_array)
            | "Gather" >> beam.CombineGlobally(GatherArrays())
            | "Cutoff" >> beam.ParDo(WriteCutoff(stage))
        )
