"""The global phase of the quality stage when it keeps a fraction: the cut-off as an approximate global quantile.

shards | (score, tie-break) per document | ApproximateQuantiles.Globally | cut-off -> global.json
"""

from __future__ import annotations

from datapipe.quality.stage import QualityStage
from pipelines.beam_quiet import PipelineOptions, beam

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


def run_quality_global(stage: QualityStage, shards: list, options: PipelineOptions) -> None:
    with beam.Pipeline(options=options) as p:
        _ = (
            p
            | "Shards" >> beam.Create(shards)
            | "Spread" >> beam.Reshuffle()
            | "Keys" >> beam.FlatMap(stage.selection_keys)
            | "Quantiles" >> beam.transforms.stats.ApproximateQuantiles.Globally(QUANTILES)
            | "Cutoff" >> beam.ParDo(WriteCutoff(stage))
        )
