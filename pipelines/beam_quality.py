"""The global phase of the quality stage when it keeps a fraction: the cut-off as an approximate global quantile.

shards | (score, tie-break) per document | ApproximateQuantiles.Globally | cut-off -> global.json

It runs inside the build's pipeline, between the quality stage's input and its shard phase.
"""

from __future__ import annotations

from datapipe.quality.stage import QualityStage
from pipelines.beam_quiet import beam

QUANTILES = 1001  # cut-offs in steps of 0.1%


class WriteCutoff(beam.DoFn):
    def __init__(self, stage: QualityStage) -> None:
        self.stage = stage

    def process(self, quantiles):
        f = self.stage.config.keep_fraction
        assert f is not None
        index = min(len(quantiles) - 1, max(0, round((1.0 - f) * (len(quantiles) - 1))))
        cutoff = list(quantiles[index])
        self.stage.write_global_report({"keep_fraction": f, "cutoff": cutoff, "quantiles": len(quantiles)})
        yield cutoff


def quality_global(shards: beam.PCollection, stage: QualityStage, label: str) -> beam.PCollection:
    """The cut-off on ``shards``; one element once ``global.json`` is written."""
    return (
        shards
        | f"{label}/Spread" >> beam.Reshuffle()
        | f"{label}/Keys" >> beam.FlatMap(stage.selection_keys)
        | f"{label}/Quantiles" >> beam.transforms.stats.ApproximateQuantiles.Globally(QUANTILES)
        | f"{label}/Cutoff" >> beam.ParDo(WriteCutoff(stage))
    )
