"""One table of stages: the order they run in, what part of a source's config each takes, how its hash config is
written, the stage object that processes its shards, and the kind of global phase it needs (if any).

The plan walks this table; the engines look a stage's global phase up by its ``phase`` name in their own table of
transforms or steps. Adding a stage is one row here plus its module: no dispatch chain elsewhere.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from datapipe.config.mixture import MixtureConfig, SourceConfig
from datapipe.runtime.phase import TaskRow
from datapipe.runtime.stage import Stage

# the global phases an engine must know how to run (each with its pure decisions in datapipe/)
DEDUP = "dedup"  # exact groups and MinHash components -> per-shard removal lists (datapipe.dedup.components)
PARAGRAPHS = "paragraphs"  # repeated lines -> per-shard line removals
QUALITY_CUTOFF = "quality_cutoff"  # a global quantile of scores -> one cut-off (datapipe.quality.cutoff)
SUBSTRINGS = (
    "substrings"  # the text of every shard -> suffix-array units -> repeated spans (datapipe.substrings)
)
PHASES = (DEDUP, PARAGRAPHS, QUALITY_CUTOFF, SUBSTRINGS)
# each phase's task table (module, name): the rows every engine runs in order, a row's tasks in parallel as it
# likes; a task is (name, function(stage, plan, item), what the row's tasks share out: shards, partitions, earlier
# builds' shards, or once), the plan a datapipe.dedup.spill.Spill
_PHASE_TASKS = {
    DEDUP: ("datapipe.dedup.spill", "DEDUP_TASKS"),
    PARAGRAPHS: ("datapipe.dedup.spill", "LINE_TASKS"),
    QUALITY_CUTOFF: ("datapipe.quality.phase", "QUALITY_TASKS"),
    SUBSTRINGS: ("datapipe.substrings.phase", "SUBSTRINGS_TASKS"),
}


def phase_tasks(phase: str) -> tuple[TaskRow, ...]:
    """The task table of a global phase (:mod:`datapipe.runtime.phase`): the one protocol both engines execute (Beam's file-shuffle path and
    datatrove always; Beam's GroupByKey path is the alternative for dedup and paragraphs on a distributed
    runner)."""
    module, name = _PHASE_TASKS[phase]
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class StageKind:
    """One row of the table.

    ``hash_config(mixture, source, tokenizer_sha256)`` is the stage's config as its version hash covers it, or
    None when the source does not run this stage; ``make(mixture, source, input_dir, out_dir)`` builds the stage
    object (``input_dir`` is the stage before's folder, "" for the first); ``phase`` names the global phase a
    two-phase stage runs before its shards (whether a given stage needs it is the stage's own ``needs_global``: a
    quality stage only with ``keep_fraction``)."""

    name: str
    hash_config: Callable[[MixtureConfig, SourceConfig, str], dict[str, object] | None]
    make: Callable[[MixtureConfig, SourceConfig, str, str], Stage]
    phase: str | None = None


def _extract(mixture: MixtureConfig, src: SourceConfig, input_dir: str, out_dir: str) -> Stage:
    from datapipe.extract.stage import ExtractStage

    return ExtractStage(src, out_dir)


def _document_stage(path: str, field: str) -> Callable[[MixtureConfig, SourceConfig, str, str], Stage]:
    """The constructor of the stage class ``module:Class``, made from (source name, the source's ``field`` config,
    input folder, output folder). The module is imported when a stage is made, not when the table is read, so
    planning and the config checks load no fastText, numba or tokenizer."""
    module, cls = path.split(":")

    def make(mixture: MixtureConfig, src: SourceConfig, input_dir: str, out_dir: str) -> Stage:
        config = getattr(src, field)
        if config is None:
            raise ValueError(f"source {src.name!r} does not run {cls}: it has no {field} config")
        stage: Stage = getattr(importlib.import_module(module), cls)(src.name, config, input_dir, out_dir)
        return stage

    return make


def _tokenize(mixture: MixtureConfig, src: SourceConfig, input_dir: str, out_dir: str) -> Stage:
    from datapipe.tokenize.stage import TokenizeStage

    return TokenizeStage(
        src.name,
        mixture.tokenizer,
        input_dir,
        out_dir,
        by_language=src.by_language is not None,
        rehydrate=src.rehydrate.weights if src.rehydrate is not None else None,
        quality_repeats=bool(src.quality is not None and src.quality.repeat),
    )


def _tokenize_config(mixture: MixtureConfig, src: SourceConfig, tokenizer_sha256: str) -> dict[str, object]:
    """The tokenizer; and, only when asked (so earlier builds keep their hashes), per-language caches and
    rehydration (the language weights are the manifest's: changing them rebuilds nothing)."""
    out: dict[str, object] = {**mixture.tokenizer.to_dict(), "sha256": tokenizer_sha256}
    if src.by_language is not None:
        out["by_language"] = True
    if src.rehydrate is not None:
        out["rehydrate"] = src.rehydrate.to_dict()
    if src.quality is not None and src.quality.repeat:  # its rows are split as rehydration's are
        out["quality_repeats"] = True
    return out


def _config_of(field: str) -> Callable[[MixtureConfig, SourceConfig, str], dict[str, object] | None]:
    """The hash config of a stage configured by the source's ``field`` (None when the source has none)."""

    def config(mixture: MixtureConfig, src: SourceConfig, tokenizer_sha256: str) -> dict[str, object] | None:
        value = getattr(src, field)
        return None if value is None else value.to_dict()

    return config


def _dedup_config(
    mixture: MixtureConfig, src: SourceConfig, tokenizer_sha256: str
) -> dict[str, object] | None:
    """The dedup config, and with ``against`` the earlier dedup stages it resolves to (their folder names carry
    their version hashes): a rebuilt earlier build makes this stage run again."""
    if src.dedup is None:
        return None
    doc = src.dedup.to_dict()
    if src.dedup.against:
        from datapipe.dedup.store import earlier_shards

        stages: dict[str, int] = {}
        for stage_dir, _ in earlier_shards(src.dedup.against):
            stages[stage_dir] = stages.get(stage_dir, 0) + 1
        doc["against_stages"] = [[d.rstrip("/").rsplit("/", 1)[-1], n] for d, n in stages.items()]
    return doc


def _substrings_config(
    mixture: MixtureConfig, src: SourceConfig, tokenizer_sha256: str
) -> dict[str, object] | None:
    """The substrings config, and with ``against`` the earlier stages' folder names (they carry their version
    hashes): a rebuilt earlier build makes this stage run again."""
    if src.substrings is None:
        return None
    doc = src.substrings.to_dict()
    if src.substrings.against:
        doc["against_stages"] = [d.rstrip("/").rsplit("/", 1)[-1] for d in src.substrings.against]
    return doc


def _extract_config(mixture: MixtureConfig, src: SourceConfig, tokenizer_sha256: str) -> dict[str, object]:
    """The extract stage's config, and when datapipe's learned extractor runs, its shipped models' digests: models
    trained again decide other blocks, so the stage's output is another version."""
    doc = src.reader_config()
    ex = doc.get("extract")
    if ex is not None and ex.get("method") == "datapipe" and ex.get("learned"):
        from datapipe.extract.model import shipped

        models = shipped()
        doc["extract"] = {**ex, "models": [models.blocks.digest, models.page_types.digest]}
    return doc


STAGES: tuple[StageKind, ...] = (
    StageKind("extract", _extract_config, _extract),
    StageKind(
        "filter", _config_of("filters"), _document_stage("datapipe.filters.stage:FilterStage", "filters")
    ),
    StageKind("dedup", _dedup_config, _document_stage("datapipe.dedup.stage:DedupStage", "dedup"), DEDUP),
    StageKind(
        "paragraphs",
        _config_of("paragraphs"),
        _document_stage("datapipe.dedup.stage:ParagraphStage", "paragraphs"),
        PARAGRAPHS,
    ),
    StageKind(
        "substrings",
        _substrings_config,
        _document_stage("datapipe.substrings.stage:SubstringsStage", "substrings"),
        SUBSTRINGS,
    ),
    StageKind(
        "quality",
        _config_of("quality"),
        _document_stage("datapipe.quality.stage:QualityStage", "quality"),
        QUALITY_CUTOFF,
    ),
    StageKind(
        "decon",
        lambda m, s, t: (
            None if s.decon is None else s.decon.to_dict(m.data_root)
        ),  # files named under the root
        _document_stage("datapipe.decon.stage:DeconStage", "decon"),
    ),
    StageKind("pii", _config_of("pii"), _document_stage("datapipe.pii.stage:PIIStage", "pii")),
    StageKind("tokenize", _tokenize_config, _tokenize),
)

BY_NAME = {kind.name: kind for kind in STAGES}

# what a worker imports to run any row of the table or any global phase (the stage classes' modules and the task
# tables'): a parent its workers are forked from imports them ahead (datapipe/orchestrate/warm.py); one left out here
# only costs each worker its import
WORKER_MODULES = (
    "datapipe.extract.stage",
    "datapipe.filters.stage",
    "datapipe.dedup.stage",
    "datapipe.substrings.stage",
    "datapipe.quality.stage",
    "datapipe.decon.stage",
    "datapipe.pii.stage",
    "datapipe.tokenize.stage",
    *sorted({module for module, _ in _PHASE_TASKS.values()}),
)
