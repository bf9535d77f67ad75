"""The mixture manifest (``mixture.json``): components with their caches and weights, tokenizer and seed.

It is the only thing a trainer needs: cache paths are relative to the manifest's folder, so an output folder can be
moved or copied to a bucket whole.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
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
    name: str
    weight: float
    cache: str  # relative to the manifest folder (or a URL)
    rows: int
    tokens: int
    ledger_sha256: str


def write_manifest(
    output: str,
    name: str,
    seed: int,
    seq_len: int,
    tokenizer: TokenizerIdentity,
    components: list[Component],
    extra: dict,
) -> str:
    total = sum(c.weight for c in components)
    doc = {
        "format_version": 1,
        "name": name,
        "seed": seed,
        "seq_len": seq_len,
        "tokenizer": tokenizer.to_dict(),
        "components": [
            {
                "name": c.name,
                "weight": c.weight,
                "normalized_weight": c.weight / total,
                "cache": c.cache,
                "rows": c.rows,
                "tokens": c.tokens,
                "ledger_sha256": c.ledger_sha256,
            }
            for c in components
        ],
        **extra,
    }
    url = fs.join(output, MANIFEST)
    validate(doc, "manifest", file=url)
    fs.write_text_atomic(url, json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return url


def read_manifest(path: str) -> dict[str, Any]:
    url = path if path.endswith(".json") else fs.join(path, MANIFEST)
    if not fs.exists(url):
        raise DatapipeError(f"{url}: no mixture manifest there")
    doc = json.loads(fs.read_text(url))
    validate(doc, "manifest", file=url)
    return doc


def open_component(manifest_url: str, doc: dict[str, Any], name: str) -> TokenCache:
    """Open one component's cache, refusing it if its tokenizer differs from the manifest's."""
    comp = next((c for c in doc["components"] if c["name"] == name), None)
    if comp is None:
        raise DatapipeError(f"{manifest_url}: no component {name!r}")
    base = os.path.dirname(manifest_url) if manifest_url.endswith(".json") else manifest_url
    cache_url = comp["cache"] if fs.has_protocol(comp["cache"]) else fs.join(base, comp["cache"])
    ledger_url = fs.join(cache_url, LEDGER)
    if fs.exists(ledger_url):
        actual = hashlib.sha256(fs.read_bytes(ledger_url)).hexdigest()
        if actual != comp["ledger_sha256"]:
            raise DatapipeError(
                f"{ledger_url}: sha256 {actual[:12]}... differs from the manifest's ledger_sha256 "
                f"{comp['ledger_sha256'][:12]}... for {name!r}: the cache changed after {manifest_url} was written"
            )
    return TokenCache.open(cache_url, expect_tokenizer=TokenizerIdentity.from_dict(doc["tokenizer"]))
