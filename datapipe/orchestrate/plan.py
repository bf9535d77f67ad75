"""Plan a mixture build: for each source, its stages, each with a version hash and an output folder.

The stages and their order come from the one table in :mod:`datapipe.orchestrate.registry`. Before planning,
:func:`check_inputs` (globs, list files, filter presets) and :func:`resolve_eval_sets` (evaluation files) run every
check that needs the data or a stage module, so a mistake is one line naming the field before any work.

A stage's hash covers its config and the hashes (or, for raw files, name under the data root and size) of its
inputs, not the code:
``<output>/<source>/<stage>-<hash8>/``. Changing one stage's config changes its hash and every later stage's, so a
rerun redoes exactly what changed; a stage whose ``_SUCCESS`` exists is skipped.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from dataclasses import dataclass

from datapipe.config.mixture import MixtureConfig, SourceConfig
from datapipe.crawl.source import CrawlPlan, plan_files, store_dir
from datapipe.errors import ConfigError, DatapipeError
from datapipe.io import fs
from datapipe.io.html_files import FILES_PER_SHARD
from datapipe.io.shards import Shard, make_bundles, make_shards
from datapipe.orchestrate.registry import BY_NAME, STAGES
from datapipe.runtime.stage import Stage, TwoPhaseStage, is_done

log = logging.getLogger(__name__)


def stage_hash(stage: str, config: dict[str, object], inputs: list[object]) -> str:
    blob = json.dumps(
        {"stage": stage, "config": config, "inputs": inputs}, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class StagePlan:
    source: str
    stage: str
    config: dict[str, object]
    inputs: tuple[object, ...]
    hash: str
    out_dir: str
    shards: tuple[Shard, ...]

    @property
    def dirname(self) -> str:
        return f"{self.stage}-{self.hash[:8]}"

    @property
    def done(self) -> bool:
        return is_done(self.out_dir)

    def record(self) -> dict[str, object]:
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


def check_inputs(
    mixture: MixtureConfig, sources: tuple[SourceConfig, ...], *, dry_run: bool = False
) -> dict[str, list[str]]:
    """List each source's input files; a glob that matches nothing, a missing list file or (in any source of the
    mixture) a threshold its filter preset does not have is a :class:`ConfigError` naming the field. A Common
    Crawl source's files are its sample of the dump's listing (:func:`crawl_plan`), their URLs."""
    from datapipe.filters.presets import build_chain, check_language_preset

    for (
        src
    ) in mixture.sources:  # thresholds named in `overrides` must exist in the preset: no I/O, so all of them
        if src.filters is not None:
            field = f"sources.{src.name}.filters"
            build_chain(src.filters.preset, dict(src.filters.overrides), file=mixture.file, field=field)
            languages = src.langid.languages if src.langid is not None else None
            check_language_preset(
                src.filters.preset, languages, src.filters.fallback, file=mixture.file, source=src.name
            )
    resolve_languages(
        mixture, sources
    )  # its errors (a weight for a language the source cannot have) before work
    for src in sources:
        _check_rehydration(mixture, src)
        _check_language_words(mixture, src)
    out: dict[str, list[str]] = {}
    for s in sources:
        files: list[str] = []
        if s.commoncrawl is not None:
            plan = crawl_plan(mixture, s, store=not dry_run)
            files = [plan.url(f) for f in plan.files]
        for i, pattern in enumerate(s.paths):
            field = f"sources.{s.name}.paths[{i}]"
            try:
                matched, others = fs.glob_split(pattern)
            except Exception as e:  # any file system's error (a hub client without network raises
                # its HTTP library's own) is one line naming the field, never a traceback
                why = (str(e).strip().splitlines() or [""])[0][:300]
                raise ConfigError(
                    mixture.file, field, f"cannot list {pattern!r}: {type(e).__name__}: {why}".rstrip(": ")
                ) from None
            broken = [(field, f"{path} matches but is {why}") for path, why in others if why != "a folder"]
            # the user meant them as inputs: a link or permission to fix, not a file to lose quietly
            if broken:
                (where, why), *more = broken
                raise ConfigError(mixture.file, where, why, more)
            folders = [path for path, _ in others]
            if folders:
                log.warning(
                    "%s: %s: %d folder(s) match %r and are not read: %s",
                    mixture.file,
                    field,
                    len(folders),
                    pattern,
                    ", ".join(folders[:5]) + (" ..." if len(folders) > 5 else ""),
                )
            if not matched:
                raise ConfigError(mixture.file, field, f"no file matches {pattern!r}")
            files.extend(m for m in matched if m not in files)
        out[s.name] = files
        for key in ("url_blocklist", "bad_words"):
            path = getattr(s.filters, key, None) if s.filters else None
            if path and not fs.exists(path):
                raise ConfigError(mixture.file, f"sources.{s.name}.filters.{key}", f"no such file {path!r}")
    return out


def _check_rehydration(mixture: MixtureConfig, src: SourceConfig) -> None:
    """The rehydration table exists (a misspelt name says which it may have meant) or its file reads."""
    from datapipe.languages import LanguageError, rehydration_table

    if src.rehydrate is None:
        return
    try:
        rehydration_table(src.rehydrate.weights)
    except LanguageError as e:
        import difflib

        from datapipe.languages.table import rehydration_tables

        near = difflib.get_close_matches(src.rehydrate.weights, rehydration_tables(), n=1, cutoff=0.6)
        hint = f"; did you mean {near[0]}?" if near else ""
        raise ConfigError(mixture.file, f"sources.{src.name}.rehydrate.weights", f"{e}{hint}") from None


def _check_language_words(mixture: MixtureConfig, src: SourceConfig) -> None:
    """Per-language MinHash (``words: language``) splits each kept language's words: every tokenizer it needs,
    its data packages too, is installed (a filter preset's languages are checked by ``check_language_preset``)."""
    from datapipe.languages import LanguageError, assignment, lid176_language

    mh = src.dedup.minhash if src.dedup is not None else None
    if mh is None or mh.words != "language" or src.langid is None:
        return
    for i, code in enumerate(src.langid.languages):
        try:
            assignment(lid176_language(code))
        except LanguageError as e:
            raise ConfigError(mixture.file, f"sources.{src.name}.langid.languages[{i}]", str(e)) from None


def resolve_languages(mixture: MixtureConfig, sources: tuple[SourceConfig, ...]) -> tuple[SourceConfig, ...]:
    """Every language a source names as a language-script (``de``, ``deu_Latn`` -> ``deu_Latn``), so that one
    language written two ways is one language: the same stage hashes, and ``by_language`` weights that find their
    components. A weight for a language the source's language ID does not keep is a :class:`ConfigError`."""
    from datapipe.languages import lid176_language

    out = []
    for src in sources:
        lid, by = src.langid, src.by_language
        if lid is not None:
            lid = dataclasses.replace(
                lid, languages=tuple(dict.fromkeys(lid176_language(x) for x in lid.languages))
            )
        if by is not None and by.explicit:
            keys = [(k, lid176_language(k), w) for k, w in by.explicit]
            kept = set(lid.languages) if lid is not None and lid.languages else None
            for given, lang, _ in keys:
                if kept is not None and lang not in kept:
                    raise ConfigError(
                        mixture.file,
                        f"sources.{src.name}.by_language.weights.{given}",
                        f"{lang}: the source's langid keeps only {', '.join(sorted(kept))}, so it has no such documents",
                    )
            by = dataclasses.replace(by, explicit=tuple(sorted((lang, w) for _, lang, w in keys)))
        out.append(dataclasses.replace(src, langid=lid, by_language=by))
    return tuple(out)


def crawl_plan(mixture: MixtureConfig, src: SourceConfig, *, store: bool) -> CrawlPlan:
    """A Common Crawl source's files: its listing (fetched once, stored with the build unless ``store`` is false)
    sampled; a listing that cannot be had or is not the dump's is a :class:`ConfigError` naming the field."""
    cc = src.commoncrawl
    assert cc is not None
    where = f"sources.{src.name}.commoncrawl"
    try:
        return plan_files(
            cc.crawl,
            cc.kind,
            cc.sample,
            cc.base_url,
            cc.fetch,
            store_dir(mixture.output, src.name) if store else None,
        )
    except DatapipeError as e:
        raise ConfigError(mixture.file, where, str(e)) from None


def resolve_eval_sets(mixture: MixtureConfig, sources: tuple[SourceConfig, ...]) -> tuple[SourceConfig, ...]:
    """Each decon evaluation set's patterns expanded to its files (a set that matches nothing is a config error)."""
    out = []
    for src in sources:
        if src.decon is None:
            out.append(src)
            continue
        sets = []
        for i, s in enumerate(src.decon.eval_sets):
            files: list[str] = []
            for j, url in enumerate(s.paths):
                matched = fs.glob(url)
                if not matched:
                    raise ConfigError(
                        mixture.file,
                        f"sources.{src.name}.decon.eval_sets[{i}].paths[{j}]",
                        f"no file matches {url!r}",
                    )
                files.extend(m for m in matched if m not in files)
            sets.append(dataclasses.replace(s, paths=tuple(files)))
        out.append(dataclasses.replace(src, decon=dataclasses.replace(src.decon, eval_sets=tuple(sets))))
    return tuple(out)


def plan_mixture(
    mixture: MixtureConfig,
    sources: tuple[SourceConfig, ...],
    files: dict[str, list[str]],
    tokenizer_sha256: str,
) -> list[SourcePlan]:
    """Every source's stages (the registry's, those its config asks for), each with its hash and folder; each
    source's languages as language-scripts (:func:`resolve_languages`)."""
    plans = []
    for src in resolve_languages(mixture, sources):
        inputs: list[object]
        if src.commoncrawl is not None:
            # named by the path in the dump (crawl-data/<crawl>/segments/...), whichever mirror serves it: a
            # published crawl file never changes under its name, so no size is asked (nothing is fetched to plan)
            base = src.commoncrawl.base_url
            shards = tuple(
                Shard(index=i, url=url, name=url.removeprefix(base)) for i, url in enumerate(files[src.name])
            )
            inputs = [{"shard": s.name} for s in shards]
        else:
            if src.format == "html":  # a page a file: files bundled into shards
                shards = make_bundles(files[src.name], mixture.data_root, FILES_PER_SHARD)
            else:
                shards = make_shards(files[src.name], mixture.data_root)
            # shard names are relative to the data root, so the same data mounted elsewhere (another clone, a
            # bucket copy) keeps its hashes; the size guards against a file replaced under the same name
            inputs = [{"shard": name, "size": fs.size(url)} for s in shards for url, name in s.files()]
        stages: list[StagePlan] = []
        for kind in STAGES:
            config = kind.hash_config(mixture, src, tokenizer_sha256)
            if config is None:
                continue
            if src.keep_removed and kind.name != "tokenize":  # more output: another version (only when asked)
                config = {**config, "keep_removed": True}
            stages.append(_make(src.name, kind.name, config, inputs, mixture.output, shards))
            inputs = [stages[-1].hash]  # each stage's input is the one before it
        plans.append(SourcePlan(src, tuple(stages)))
    return plans


def make_stage(mixture: MixtureConfig, plan: SourcePlan, stage: StagePlan) -> Stage:
    """The stage object (plain Python, picklable) that processes ``stage``'s shards."""
    i = plan.stages.index(stage)
    upstream = plan.stages[i - 1].out_dir if i else ""
    kind = BY_NAME[stage.stage]
    made = kind.make(mixture, plan.source, upstream, stage.out_dir)
    if plan.source.keep_removed and hasattr(made, "keep_removed"):
        made.keep_removed = True
    if isinstance(made, TwoPhaseStage) != (
        kind.phase is not None
    ):  # an engine would skip a phase or run none
        raise DatapipeError(f"stage {kind.name!r}: its registry row and its class disagree on a global phase")
    return made


def global_phase(plan: SourcePlan, stage: StagePlan) -> str | None:
    """The kind of global phase ``stage`` runs before its shards when it needs one (a name of
    ``registry.PHASES``), or None."""
    return BY_NAME[stage.stage].phase
