"""One table of stages: the order they run in, what part of a source's config each takes, how its hash config is
written, the stage object that processes its shards, and the kind of global phase it needs (if any).

The plan walks this table; the engines look a stage's global phase up by its ``phase`` name in their own table of
transforms or steps. Adding a stage is one row here plus its module: no dispatch chain elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from datapipe.config.mixture import MixtureConfig, SourceConfig
from datapipe.stage import Stage

# the global phases an engine must know how to run (each with its pure decisions in datapipe/)
DEDUP = "dedup"  # exact groups and MinHash components -> per-shard removal lists (datapipe.dedup.components)
PARAGRAPHS = "paragraphs"  # repeated lines -> per-shard line removals
QUALITY_CUTOFF = "quality_cutoff"  # a global quantile of scores -> one cut-off (datapipe.quality.cutoff)
PHASES = (DEDUP, PARAGRAPHS, QUALITY_CUTOFF)


@dataclass(frozen=True)
class StageKind:
    """One row of the table.

    ``hash_config(mixture, source, tokenizer_sha256)`` is the stage's config as its version hash covers it, or
    None when the source does not run this stage; ``make(mixture, source, input_dir, out_dir)`` builds the stage
    object (``input_dir`` is the stage before's folder, "" for the first); ``phase`` names the global phase a
    two-phase stage runs before its shards (whether a given stage needs it is the stage's own ``needs_global``: a
    quality stage only with ``keep_fraction``)."""

    name: str
    hash_config: Callable[[MixtureConfig, SourceConfig, str], dict[str, Any] | None]
    make: Callable[[MixtureConfig, SourceConfig, str, str], Stage]
    phase: str | None = None


def _extract(mixture: MixtureConfig, src: SourceConfig, input_dir: str, out_dir: str) -> Stage:
    from datapipe.extract.stage import ExtractStage

    return ExtractStage(src, out_dir)


def _filter(mixture: MixtureConfig, src: SourceConfig, input_dir: str, out_dir: str) -> Stage:
    from datapipe.filters.stage import FilterStage

    assert src.filters is not None
    return FilterStage(src.name, src.filters, input_dir, out_dir)


def _dedup(mixture: MixtureConfig, src: SourceConfig, input_dir: str, out_dir: str) -> Stage:
    from datapipe.dedup.stage import DedupStage

    assert src.dedup is not None
    return DedupStage(src.name, src.dedup, input_dir, out_dir)


def _paragraphs(mixture: MixtureConfig, src: SourceConfig, input_dir: str, out_dir: str) -> Stage:
    from datapipe.dedup.stage import ParagraphStage

    assert src.paragraphs is not None
    return ParagraphStage(src.name, src.paragraphs, input_dir, out_dir)


def _quality(mixture: MixtureConfig, src: SourceConfig, input_dir: str, out_dir: str) -> Stage:
    from datapipe.quality.stage import QualityStage

    assert src.quality is not None
    return QualityStage(src.name, src.quality, input_dir, out_dir)


def _decon(mixture: MixtureConfig, src: SourceConfig, input_dir: str, out_dir: str) -> Stage:
    from datapipe.decon.stage import DeconStage

    assert src.decon is not None
    return DeconStage(src.name, src.decon, input_dir, out_dir)


def _pii(mixture: MixtureConfig, src: SourceConfig, input_dir: str, out_dir: str) -> Stage:
    from datapipe.pii.stage import PIIStage

    assert src.pii is not None
    return PIIStage(src.name, src.pii, input_dir, out_dir)


def _tokenize(mixture: MixtureConfig, src: SourceConfig, input_dir: str, out_dir: str) -> Stage:
    from datapipe.tokenize.stage import TokenizeStage

    return TokenizeStage(src.name, mixture.tokenizer, input_dir, out_dir)


def _to_dict(config: Any) -> dict[str, Any] | None:
    return None if config is None else config.to_dict()


STAGES: tuple[StageKind, ...] = (
    StageKind("extract", lambda m, s, t: s.reader_config(), _extract),
    StageKind("filter", lambda m, s, t: _to_dict(s.filters), _filter),
    StageKind("dedup", lambda m, s, t: _to_dict(s.dedup), _dedup, DEDUP),
    StageKind("paragraphs", lambda m, s, t: _to_dict(s.paragraphs), _paragraphs, PARAGRAPHS),
    StageKind("quality", lambda m, s, t: _to_dict(s.quality), _quality, QUALITY_CUTOFF),
    StageKind("decon", lambda m, s, t: None if s.decon is None else s.decon.to_dict(m.data_root), _decon),
    StageKind("pii", lambda m, s, t: _to_dict(s.pii), _pii),
    StageKind("tokenize", lambda m, s, t: {**m.tokenizer.to_dict(), "sha256": t}, _tokenize),
)

BY_NAME = {kind.name: kind for kind in STAGES}
