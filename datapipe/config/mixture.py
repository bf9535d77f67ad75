"""Load a mixture YAML into frozen dataclasses, after ``${VAR:-default}`` expansion and schema validation.

Nothing is read from the data here, and no stage module is imported: every stage's config is a dataclass of
``datapipe.config.stages``. Checks that need the data or a stage (a glob that matches no file, a filter preset's
thresholds, an evaluation set's files) belong to the plan (``datapipe.orchestrate.plan``), which runs them before any work.
Bundled mixtures are found in the folders the caller names (``search``), so this module knows no engine's layout.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from datapipe.config.env import expand_tree
from datapipe.config.schema import validate
from datapipe.config.stages import (
    DCLM_THRESHOLD,
    ByLanguageConfig,
    ClassifierRef,
    CommonCrawlConfig,
    DeconConfig,
    DedupConfig,
    EnsembleConfig,
    EvalSet,
    ExtractConfig,
    FilterConfig,
    LangidConfig,
    MinHashConfig,
    ParagraphConfig,
    PIIConfig,
    QualityConfig,
    RehydrateConfig,
    SubstringsConfig,
    TokenizerConfig,
)
from datapipe.config.yamlio import load_yaml
from datapipe.errors import ConfigError
from datapipe.io import fs

DEFAULT_TEXT_FIELD = {"jsonl": "text", "parquet": "content", "warc": "", "html": ""}


@dataclass(frozen=True)
class SourceConfig:
    name: str
    weight: float
    format: str
    paths: tuple[str, ...]  # resolved URLs/globs
    text_field: str
    id_field: str = "id"
    extract: ExtractConfig = field(default_factory=ExtractConfig)
    langid: LangidConfig | None = None
    filters: FilterConfig | None = None
    dedup: DedupConfig | None = None
    paragraphs: ParagraphConfig | None = None
    substrings: SubstringsConfig | None = None
    quality: QualityConfig | None = None
    decon: DeconConfig | None = None
    pii: PIIConfig | None = None
    description: str = ""
    real_location: str = ""
    keep_removed: bool = False  # every document stage also writes the documents it removed, per reason
    by_language: ByLanguageConfig | None = None  # one component per language
    rehydrate: RehydrateConfig | None = None
    # read from a dump by name: ``paths`` are planned from its listing
    commoncrawl: CommonCrawlConfig | None = None
    url_prefix: str = (
        ""  # format html: a page's URL is this + its path under the data root (or its .url sidecar)
    )

    def reader_config(self) -> dict[str, Any]:
        """What the extract stage's output depends on (part of its version hash)."""
        from datapipe.io.readers import input_format  # the readers (pyarrow) load only when a build plans

        out: dict[str, object] = {
            **({"commoncrawl": self.commoncrawl.to_dict()} if self.commoncrawl is not None else {}),
            "format": self.format,
            "text_field": self.text_field,
            "id_field": self.id_field,
        }
        if input_format(self.format).pages:
            out["extract"] = self.extract.to_dict()
        if self.url_prefix:
            out["url_prefix"] = self.url_prefix
        elif "max_record_bytes" in (ex := self.extract.to_dict()):
            out["max_record_bytes"] = ex["max_record_bytes"]
        if self.langid is not None:
            out["langid"] = self.langid.to_dict()
        return out


@dataclass(frozen=True)
class MixtureConfig:
    name: str
    file: str  # the YAML it came from
    data_root: str
    output: str
    seed: int
    tokenizer: TokenizerConfig
    sources: tuple[SourceConfig, ...]
    description: str = ""
    weights_unit: str = ""
    seq_len: int = 4096
    train_tokens: int | None = None  # planned training length: only for the summary's epochs and warnings
    schedule: tuple[dict[str, Any], ...] = ()  # ({"step": N, "weights": {...}}, ...)

    def source(self, name: str) -> SourceConfig:
        for s in self.sources:
            if s.name == name:
                return s
        raise KeyError(name)

    def select(self, only: list[str] | None) -> tuple[SourceConfig, ...]:
        """The sources named in ``only`` (all when None); an unknown name is an error."""
        if not only:
            return self.sources
        names = [s.name for s in self.sources]
        for n in only:
            if n not in names:
                raise ConfigError(self.file, "--only", f"unknown source {n!r} (sources: {', '.join(names)})")
        return tuple(s for s in self.sources if s.name in only)


def find_mixture(name_or_path: str, search: Sequence[Path] = ()) -> Path:
    """A path that exists, or a bundled mixture by name (``dclm_phase3`` or ``dclm_phase3.yaml``) in one of the
    ``search`` folders."""
    p = Path(name_or_path)
    if p.is_file():
        return p
    for folder in search:
        for candidate in (folder / name_or_path, folder / f"{name_or_path}.yaml"):
            if candidate.is_file():
                return candidate
    bundled = ", ".join(sorted(q.name for folder in search for q in folder.glob("*.yaml"))) or "none"
    raise ConfigError(
        name_or_path, "", f"no such file, and no bundled mixture of that name (bundled: {bundled})"
    )


def _langid(doc: dict | None, yaml_dir: str) -> LangidConfig | None:
    if doc is None:
        return None
    model = doc.get("model")
    languages = doc.get("languages", ())
    return LangidConfig(
        languages=() if languages == "all" else tuple(languages),
        min_score=float(doc["min_score"]) if doc.get("min_score") is not None else None,
        model=fs.resolve(model, yaml_dir) if model else None,
    )


def _by_language(doc: dict | None) -> ByLanguageConfig | None:
    if doc is None:
        return None
    weights = doc.get("weights", "tokens")
    explicit = tuple(sorted((k, float(v)) for k, v in weights.items())) if isinstance(weights, dict) else ()
    return ByLanguageConfig(
        weights="explicit" if explicit else weights,
        explicit=explicit,
        alpha=float(doc.get("alpha", 0.3)),
        max_epochs=float(doc.get("max_epochs", 4.0)),
        by=doc.get("by", "tokens"),
    )


def _check_language_needs(src: SourceConfig, file: str) -> None:
    """Settings that would do nothing without another: a config error naming the field, not a silent no-op."""
    if src.by_language is not None and src.langid is None:
        raise ConfigError(
            file,
            f"sources.{src.name}.by_language",
            "needs langid: without it no document has a language and the source would be one 'unknown' component",
        )
    mh = src.dedup.minhash if src.dedup is not None else None
    if src.rehydrate is not None and (mh is None or mh.words != "language"):
        raise ConfigError(
            file,
            f"sources.{src.name}.rehydrate",
            "needs dedup.minhash.preset fineweb2 (or words: language): rehydration repeats a document by the "
            "size of the MinHash cluster it survived, and without those sizes it would repeat nothing",
        )


def _rehydrate(doc: dict | None, yaml_dir: str) -> RehydrateConfig | None:
    if doc is None:
        return None
    weights = doc["weights"]
    return RehydrateConfig(weights if weights.startswith("up_to_") else fs.resolve(weights, yaml_dir))


def _filters(doc: dict | None, yaml_dir: str) -> FilterConfig | None:
    if doc is None:
        return None
    paths = {k: fs.resolve(doc[k], yaml_dir) if doc.get(k) else None for k in ("url_blocklist", "bad_words")}
    return FilterConfig(
        preset=doc.get("preset", "none"),
        overrides=tuple(sorted(doc.get("overrides", {}).items())),
        fallback=doc.get("fallback"),
        ftfy=bool(doc.get("ftfy", False)),
        table_pipes=bool(doc.get("table_pipes", False)),
        **paths,
    )


def _dedup(doc: dict | None) -> dict[str, Any]:
    if doc is None:
        return {}
    out: dict[str, object] = {}
    mh = doc.get("minhash")
    minhash = None
    if mh is not None:
        mh = dict(mh)
        minhash = MinHashConfig.preset(mh.pop("preset", "fineweb"), **mh)
    if doc.get("exact", True) or minhash is not None:
        against = tuple(p if fs.has_protocol(p) else os.path.abspath(p) for p in doc.get("against", ()))
        out["dedup"] = DedupConfig(exact=doc.get("exact", True), minhash=minhash, against=against)
    if "paragraphs" in doc:
        out["paragraphs"] = ParagraphConfig(**doc["paragraphs"])
    if "substrings" in doc:
        sub = dict(doc["substrings"])
        against = tuple(p if fs.has_protocol(p) else os.path.abspath(p) for p in sub.pop("against", ()))
        out["substrings"] = SubstringsConfig(**sub, against=against)
    return out


def _decon(doc: dict | None, root: str) -> DeconConfig | None:
    """Evaluation-set patterns resolved under the data root; the plan globs them (``build.plan.resolve_eval_sets``)."""
    if doc is None:
        return None
    sets = tuple(
        EvalSet(
            s["name"],
            tuple(fs.resolve(pattern, root) for pattern in s["paths"]),
            tuple(s.get("fields", ("question", "choices", "answer"))),
            s.get("id_field", "id"),
            s.get("per_field", True),
        )
        for s in doc["eval_sets"]
    )
    return DeconConfig(eval_sets=sets, **{k: v for k, v in doc.items() if k != "eval_sets"})


def _pii(doc: dict | None) -> PIIConfig | None:
    return None if doc is None else PIIConfig(**doc)


def _quality(doc: dict | None, yaml_dir: str, file: str, source: str) -> QualityConfig | None:
    if doc is None:
        return None
    refs = []
    for c in doc["classifiers"]:
        model = c["model"]
        if not model.startswith("recipe:") and not fs.has_protocol(model):
            model = fs.resolve(model, yaml_dir)
        refs.append(
            ClassifierRef(
                c["name"],
                model,
                c.get("positive_label", "__label__hq"),
                c.get("lowercase", False),
                sha256=c.get("sha256"),
            )
        )
    names = [r.name for r in refs]
    ensemble = _ensemble(doc.get("ensemble"), names, file, f"sources.{source}.quality.ensemble")
    sel = doc.get("select")
    if sel is None:
        return QualityConfig(tuple(refs), ensemble=ensemble)
    where = f"sources.{source}.quality.select"
    if sel["classifier"] == "ensemble":
        if ensemble is None or "min_bucket" not in sel or set(sel) - {"classifier", "min_bucket", "repeat"}:
            raise ConfigError(
                file,
                where,
                "select an ensemble with {classifier: ensemble, min_bucket: B} and an ensemble: block",
            )
        top = ensemble.buckets - 1
        if not 0 <= sel["min_bucket"] <= top:
            raise ConfigError(file, f"{where}.min_bucket", f"a bucket from 0 to {top}")
        repeat = []
        for bucket, copies in (sel.get("repeat") or {}).items():
            if not sel["min_bucket"] <= float(bucket) <= top or int(copies) < 1:
                raise ConfigError(
                    file,
                    f"{where}.repeat",
                    f"bucket {bucket}: a bucket from min_bucket to {top}, 1 copy or more",
                )
            repeat.append((float(bucket), int(copies)))
        return QualityConfig(
            tuple(refs),
            "ensemble",
            ensemble=ensemble,
            min_bucket=float(sel["min_bucket"]),
            repeat=tuple(sorted(repeat)),
        )
    if sel["classifier"] not in names:
        raise ConfigError(
            file, f"{where}.classifier", f"no classifier named {sel['classifier']!r} in this source"
        )
    chosen = [k for k in ("threshold", "keep_fraction", "preset") if k in sel]
    if len(chosen) != 1 or "min_bucket" in sel:
        raise ConfigError(file, where, "give exactly one of threshold, keep_fraction, preset")
    threshold = DCLM_THRESHOLD if sel.get("preset") == "dclm" else sel.get("threshold")
    return QualityConfig(tuple(refs), sel["classifier"], threshold, sel.get("keep_fraction"), ensemble)


def _ensemble(doc: dict | None, names: list[str], file: str, where: str) -> EnsembleConfig | None:
    if doc is None:
        return None
    weights = doc.get("weights", {})
    unknown = sorted(set(weights) - set(names))
    if unknown:
        raise ConfigError(file, f"{where}.weights", f"no classifier named {unknown[0]!r} in this source")
    return EnsembleConfig(
        buckets=int(doc.get("buckets", 10)),
        combine=doc.get("combine", "mean"),
        weights=tuple((n, float(weights.get(n, 1.0))) for n in names),
    )


def load_mixture(
    name_or_path: str,
    *,
    data_root: str | None = None,
    output: str | None = None,
    env: dict[str, str] | None = None,
    search: Sequence[Path] = (),
) -> MixtureConfig:
    """Parse, expand, validate and resolve a mixture YAML (a path, or a name found in ``search``). Raises
    :class:`ConfigError` naming file and field."""
    path = find_mixture(name_or_path, search)
    file = str(path)
    try:
        raw = load_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(file, where, f"not valid YAML: {getattr(e, 'problem', e)}") from None
    if not isinstance(raw, dict):
        raise ConfigError(file, "", f"expected a mapping at the top level, got {type(raw).__name__}")
    doc = expand_tree(raw, file=file, env=env)
    validate(doc, "mixture", file=file)

    yaml_dir = str(path.resolve().parent)
    if data_root is not None:
        root = fs.resolve(data_root, os.getcwd())
    else:
        root = fs.resolve(doc.get("data_root", "."), yaml_dir)
    out = fs.resolve(
        output if output is not None else doc.get("output", os.path.join("out", doc["name"])), os.getcwd()
    )

    tok = doc["tokenizer"]
    tok_path = tok["path"]
    if not (tok_path.startswith(("builtin:", "hf:")) or fs.has_protocol(tok_path)):
        tok_path = fs.resolve(tok_path, yaml_dir)
    tokenizer = TokenizerConfig(
        path=tok_path,
        add_bos=tok.get("add_bos", False),
        add_eos=tok.get("add_eos", True),
        bos_token=tok.get("bos_token"),
        eos_token=tok.get("eos_token"),
        sha256=tok.get("sha256"),
    )

    sources = []
    for name, s in doc["sources"].items():
        cc = s.get("commoncrawl")
        given = [k for k in ("format", "paths") if k in s]
        if (cc is not None) == bool(given) or (cc is None and len(given) < 2):
            said = (
                f" (it gives {' and '.join(given + (['commoncrawl'] if cc is not None else []))})"
                if given
                else ""
            )
            raise ConfigError(
                file, f"sources.{name}", f"give format and paths, or commoncrawl, one of the two{said}"
            )
        # a dump's files are WARC files of either kind (WET files hold conversion records): one reader
        fmt = "warc" if cc is not None else s["format"]
        ex = s.get("extract", {})
        sources.append(
            SourceConfig(
                name=name,
                weight=float(s["weight"]),
                format=fmt,
                paths=tuple(fs.resolve(p, root) for p in s.get("paths", ())),
                text_field=s.get("text_field", DEFAULT_TEXT_FIELD[fmt]),
                id_field=s.get("id_field", "id"),
                extract=ExtractConfig.from_dict(ex, file, f"sources.{name}.extract"),
                langid=_langid(s.get("langid"), yaml_dir),
                filters=_filters(s.get("filters"), yaml_dir),
                **_dedup(s.get("dedup")),
                quality=_quality(s.get("quality"), yaml_dir, file, name),
                decon=_decon(s.get("decon"), root),
                pii=_pii(s.get("pii")),
                description=s.get("description", ""),
                real_location=s.get("real_location", ""),
                url_prefix=s.get("url_prefix", ""),
                keep_removed=bool(s.get("keep_removed", False)),
                by_language=_by_language(s.get("by_language")),
                rehydrate=_rehydrate(s.get("rehydrate"), yaml_dir),
                commoncrawl=(
                    CommonCrawlConfig.from_dict(cc, file, f"sources.{name}.commoncrawl")
                    if cc is not None
                    else None
                ),
            )
        )
    for src in sources:
        _check_language_needs(src, file)
        if src.url_prefix and src.format != "html":
            raise ConfigError(
                file, f"sources.{src.name}.url_prefix", "only a folder of HTML pages (format: html) has one"
            )
    names = {s.name for s in sources}
    for i, entry in enumerate(doc.get("schedule", ())):
        for name in entry["weights"]:
            if name not in names:
                raise ConfigError(file, f"schedule[{i}].weights.{name}", f"no source named {name!r}")
    return MixtureConfig(
        name=doc["name"],
        file=file,
        data_root=root,
        output=out,
        seed=doc.get("seed", 0),
        tokenizer=tokenizer,
        sources=tuple(sources),
        description=doc.get("description", ""),
        weights_unit=doc.get("weights_unit", ""),
        seq_len=doc.get("seq_len", 4096),
        train_tokens=doc.get("train_tokens"),
        schedule=tuple(doc.get("schedule", ())),
    )
