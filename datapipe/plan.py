"""Plan a mixture build: for each source, its stages, each with a version hash and an output folder.

A stage's hash covers its config and the hashes (or, for raw files, name under the data root and size) of its
inputs, not the code:
``<output>/<source>/<stage>-<hash8>/``. Changing one stage's config changes its hash and every later stage's, so a
rerun redoes exactly what changed; a stage whose ``_SUCCESS`` exists is skipped.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from datapipe.config import MixtureConfig, SourceConfig
from datapipe.decon.stage import DeconStage
from datapipe.dedup.stage import DedupStage, ParagraphStage
from datapipe.extract.stage import ExtractStage
from datapipe.filters.stage import FilterStage
from datapipe.io import fs
from datapipe.io.shards import Shard, make_shards
from datapipe.pii import PIIStage
from datapipe.quality.stage import QualityStage
from datapipe.stage import Stage, is_done
from datapipe.tokenize.stage import TokenizeStage
from datapipe.tokenize.tokenizer import TokenizerIdentity


def stage_hash(stage: str, config: dict[str, Any], inputs: list[Any]) -> str:
    blob = json.dumps(
        {"stage": stage, "config": config, "inputs": inputs}, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class StagePlan:
    source: str
    stage: str
    config: dict[str, Any]
    inputs: tuple[Any, ...]
    hash: str
    out_dir: str
    shards: tuple[Shard, ...]

    @property
    def dirname(self) -> str:
        return f"{self.stage}-{self.hash[:8]}"

    @property
    def done(self) -> bool:
        return is_done(self.out_dir)

    def record(self) -> dict[str, Any]:
        """What ``stage.json`` says about how this stage was made."""
        return {"hash": self.hash, "config": self.config, "inputs": list(self.inputs)}


@dataclass(frozen=True)
class SourcePlan:
    source: SourceConfig
    stages: tuple[StagePlan, ...]

    def stage(self, name: str) -> StagePlan:
        return next(s for s in self.stages if s.stage == name)


def _make(
    source: str, stage: str, config: dict, inputs: list, output: str, shards: tuple[Shard, ...]
) -> StagePlan:
    h = stage_hash(stage, config, inputs)
    return StagePlan(
        source, stage, config, tuple(inputs), h, fs.join(output, source, f"{stage}-{h[:8]}"), shards
    )


def plan_mixture(
    mixture: MixtureConfig,
    sources: tuple[SourceConfig, ...],
    files: dict[str, list[str]],
    tokenizer: TokenizerIdentity,
) -> list[SourcePlan]:
    plans = []
    for src in sources:
        shards = make_shards(files[src.name], mixture.data_root)
        # shard names are relative to the data root, so the same data mounted elsewhere (another clone, a bucket
        # copy) keeps its hashes; the size guards against a file replaced under the same name
        raw_inputs = [{"shard": s.name, "size": fs.size(s.url)} for s in shards]
        stages = [_make(src.name, "extract", src.reader_config(), raw_inputs, mixture.output, shards)]
        later: list[tuple[str, dict[str, Any]]] = []
        if src.filters is not None:
            later.append(("filter", src.filters.to_dict()))
        if src.dedup is not None:
            later.append(("dedup", src.dedup.to_dict()))
        if src.paragraphs is not None:
            later.append(("paragraphs", src.paragraphs.to_dict()))
        if src.quality is not None:
            later.append(("quality", src.quality.to_dict()))
        if src.decon is not None:
            later.append(("decon", src.decon.to_dict(mixture.data_root)))
        if src.pii is not None:
            later.append(("pii", src.pii.to_dict()))
        later.append(("tokenize", {**mixture.tokenizer.to_dict(), "sha256": tokenizer.sha256}))
        for name, config in later:  # each stage's input is the one before it
            stages.append(_make(src.name, name, config, [stages[-1].hash], mixture.output, shards))
        plans.append(SourcePlan(src, tuple(stages)))
    return plans


def make_stage(mixture: MixtureConfig, plan: SourcePlan, stage: StagePlan) -> Stage:
    """The stage object (plain Python, picklable) that processes ``stage``'s shards."""
    if stage.stage == "extract":
        return ExtractStage(plan.source, stage.out_dir)
    upstream = plan.stages[plan.stages.index(stage) - 1]
    if stage.stage == "filter":
        assert plan.source.filters is not None
        return FilterStage(plan.source.name, plan.source.filters, upstream.out_dir, stage.out_dir)
    if stage.stage == "dedup":
        return DedupStage(plan.source.name, plan.source.dedup, upstream.out_dir, stage.out_dir)
    if stage.stage == "paragraphs":
        return ParagraphStage(plan.source.name, plan.source.paragraphs, upstream.out_dir, stage.out_dir)
    if stage.stage == "quality":
        return QualityStage(plan.source.name, plan.source.quality, upstream.out_dir, stage.out_dir)
    if stage.stage == "decon":
        return DeconStage(plan.source.name, plan.source.decon, upstream.out_dir, stage.out_dir)
    if stage.stage == "pii":
        return PIIStage(plan.source.name, plan.source.pii, upstream.out_dir, stage.out_dir)
    if stage.stage == "tokenize":
        return TokenizeStage(plan.source.name, mixture.tokenizer, upstream.out_dir, stage.out_dir)
    raise ValueError(f"unknown stage {stage.stage!r}")
