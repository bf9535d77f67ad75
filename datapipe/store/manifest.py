"""The mixture manifest (``mixture.json``): components with their caches and weights, tokenizer and seed.

It is the only thing a trainer needs: cache paths are relative to the manifest's folder, so an output folder can be
moved or copied to a bucket whole.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from datapipe.config.schema import validate
from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.store.cache import LEDGER, TokenCache
from datapipe.store.identity import TokenizerIdentity

MANIFEST = "mixture.json"
TOKENIZER_FILE = "tokenizer.json"  # beside the manifest: the tokenizer whose sha256 it records


@dataclass(frozen=True)
class Component:
    """One weighted token cache of a mixture."""

    name: str
    weight: float
    cache: str  # relative to the manifest folder (or a URL)
    rows: int
    tokens: int
    ledger_sha256: str


@dataclass(frozen=True)
class ScheduleEntry:
    """From ``step`` on, the components' weights are ``weights`` (a mixture's ``schedule:``)."""

    step: int
    weights: Mapping[str, float]


@dataclass(frozen=True)
class Manifest:
    """``mixture.json``, typed: read and written here only (:meth:`from_dict`, :meth:`to_dict`), checked against
    ``schemas/manifest.schema.json`` both ways. ``url`` is where it was read from (not part of the file): a
    component's cache is relative to its folder."""

    name: str
    seed: int
    seq_len: int
    tokenizer: TokenizerIdentity
    components: tuple[Component, ...]
    tokenizer_file: str | None = None  # the tokenizer's JSON beside the manifest
    weights_unit: str | None = None
    source_mixture_file: str | None = None
    schedule: tuple[ScheduleEntry, ...] = ()
    # per source split by language: how its weight was shared (its own JSON: schemas/manifest.schema.json)
    by_language: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    rehydrated_repeats: Mapping[str, int] = field(default_factory=dict)
    train_tokens: int | None = None
    url: str = ""
    format_version: int = 1

    @property
    def total_weight(self) -> float:
        return sum(c.weight for c in self.components)

    def share(self, comp: Component) -> float:
        """The component's normalized weight (``normalized_weight`` in the file)."""
        return comp.weight / self.total_weight

    def component(self, name: str) -> Component:
        for c in self.components:
            if c.name == name:
                return c
        raise DatapipeError(f"{self.url}: no component {name!r}")

    @property
    def folder(self) -> str:
        return os.path.dirname(self.url) if self.url.endswith(".json") else self.url

    def listing(self) -> list[dict[str, object]]:
        """The components as the file lists them (with their normalized weights)."""
        return [
            {
                "name": c.name,
                "weight": c.weight,
                "normalized_weight": self.share(c),
                "cache": c.cache,
                "rows": c.rows,
                "tokens": c.tokens,
                "ledger_sha256": c.ledger_sha256,
            }
            for c in self.components
        ]

    def to_dict(self) -> dict[str, object]:
        doc: dict[str, object] = {
            "format_version": self.format_version,
            "name": self.name,
            "seed": self.seed,
            "seq_len": self.seq_len,
            "tokenizer": self.tokenizer.to_dict(),
            "components": self.listing(),
        }
        optional: dict[str, object] = {
            "tokenizer_file": self.tokenizer_file,
            "weights_unit": self.weights_unit,
            "source_mixture_file": self.source_mixture_file,
            "train_tokens": self.train_tokens,
            "schedule": [{"step": e.step, "weights": dict(e.weights)} for e in self.schedule] or None,
            "by_language": dict(self.by_language) or None,
            "rehydrated_repeats": dict(self.rehydrated_repeats) or None,
        }
        return doc | {k: v for k, v in optional.items() if v is not None}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], url: str = MANIFEST) -> Manifest:
        """A manifest from its JSON (already checked against the schema by :func:`load_manifest`)."""
        return cls(
            name=doc["name"],
            seed=int(doc["seed"]),
            seq_len=int(doc["seq_len"]),
            tokenizer=TokenizerIdentity.from_dict(doc["tokenizer"]),
            components=tuple(
                Component(c["name"], c["weight"], c["cache"], c["rows"], c["tokens"], c["ledger_sha256"])
                for c in doc["components"]
            ),
            tokenizer_file=doc.get("tokenizer_file"),
            weights_unit=doc.get("weights_unit"),
            source_mixture_file=doc.get("source_mixture_file"),
            schedule=tuple(
                ScheduleEntry(int(e["step"]), dict(e["weights"])) for e in doc.get("schedule", ())
            ),
            by_language=doc.get("by_language", {}),
            rehydrated_repeats=doc.get("rehydrated_repeats", {}),
            train_tokens=doc.get("train_tokens"),
            url=url,
            format_version=int(doc["format_version"]),
        )


def write_manifest(output: str, manifest: Manifest) -> str:
    """Write ``output/mixture.json`` (validated first, atomically) and return its URL."""
    doc = manifest.to_dict()
    url = fs.join(output, MANIFEST)
    validate(doc, "manifest", file=url)
    fs.write_text_atomic(url, json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return url


def manifest_url(path: str) -> str:
    """A ``mixture.json`` or the folder that holds one."""
    return path if path.endswith(".json") else fs.join(path, MANIFEST)


def load_manifest(path: str) -> Manifest:
    """The manifest at ``path`` (a ``mixture.json`` or its folder), checked against its schema."""
    url = manifest_url(path)
    if not fs.exists(url):
        raise DatapipeError(f"{url}: no mixture manifest there")
    doc = json.loads(fs.read_text(url))
    validate(doc, "manifest", file=url)
    return Manifest.from_dict(doc, url)


def read_manifest(path: str) -> dict[str, Any]:
    """The manifest as its JSON object (a tool that edits the file, as some tests do); everything else reads
    :func:`load_manifest`."""
    return load_manifest(path).to_dict()


def open_component(manifest: Manifest, name: str) -> TokenCache:
    """Open one component's cache, refusing it if its ledger changed since the manifest was written or its
    tokenizer differs from the manifest's."""
    comp = manifest.component(name)
    cache_url = comp.cache if fs.has_protocol(comp.cache) else fs.join(manifest.folder, comp.cache)
    ledger_url = fs.join(cache_url, LEDGER)
    if fs.exists(ledger_url):
        actual = hashlib.sha256(fs.read_bytes(ledger_url)).hexdigest()
        if actual != comp.ledger_sha256:
            raise DatapipeError(
                f"{ledger_url}: sha256 {actual[:12]}... differs from the manifest's ledger_sha256 "
                f"{comp.ledger_sha256[:12]}... for {name!r}: the cache changed after {manifest.url} was written"
            )
    return TokenCache.open(cache_url, expect_tokenizer=manifest.tokenizer)
