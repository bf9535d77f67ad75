"""Load a mixture YAML into frozen dataclasses, after ``${VAR:-default}`` expansion and schema validation.

Nothing is read from the data here except, in :func:`check_inputs`, the listing of each source's globs: a glob that
matches no file is a configuration error (it names ``sources.<name>.paths[i]``), raised before any work starts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from datapipe.config.env import expand_tree
from datapipe.config.schema import validate
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
    method: str = "resiliparse"
    main_content: bool = True
    preserve_formatting: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "main_content": self.main_content,
            "preserve_formatting": self.preserve_formatting,
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
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
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
                extract=ExtractConfig(
                    method=ex.get("method", "resiliparse"),
                    main_content=ex.get("main_content", True),
                    preserve_formatting=ex.get("preserve_formatting", True),
                ),
                description=s.get("description", ""),
                real_location=s.get("real_location", ""),
            )
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
    return out
