"""A per-source token cache: ``input_ids`` jagged array plus ``shard_ledger.json``.

Layout (Levanter-compatible)::

    <cache>/input_ids/offsets    int64, offsets[0] = rows, offsets[i+1] = end of row i
    <cache>/input_ids/data       uint32 token ids
    <cache>/shard_ledger.json    total_num_rows, shard_rows, is_finished, ... and datapipe's tokenizer identity

The ledger is written after the arrays; a cache whose ledger is missing or not finished is refused, and so is one
whose tokenizer differs from the one the caller expects.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from datapipe.config.schema import validate
from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.store.identity import TokenizerIdentity
from datapipe.store.jagged import JaggedReader

FIELD = "input_ids"
LEDGER = "shard_ledger.json"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Ledger:
    """``shard_ledger.json``, typed: Levanter's fields (``total_num_rows``, ``shard_rows``, ``is_finished``,
    ``finished_shards``, ``field_counts``, the tokenizer under ``metadata``) and datapipe's (``datapipe``: format
    version, tokens per shard, the tokenizer identity). Written by :func:`write_ledger` and read by
    :meth:`TokenCache.open` only; ``datapipe verify`` looks at the file's own numbers to catch a damaged one."""

    shard_rows: Mapping[str, int]
    shard_tokens: Mapping[str, int]
    tokenizer: TokenizerIdentity
    finished_shards: tuple[str, ...]  # in shard order (the JSON's objects are written with their keys sorted)
    is_finished: bool = True
    format_version: int = FORMAT_VERSION

    @property
    def total_num_rows(self) -> int:
        return sum(self.shard_rows.values())

    @property
    def total_num_tokens(self) -> int:
        return sum(self.shard_tokens.values())

    def to_dict(self) -> dict[str, object]:
        identity = self.tokenizer.to_dict()
        return {
            "total_num_rows": self.total_num_rows,
            "shard_rows": dict(self.shard_rows),
            "is_finished": self.is_finished,
            "finished_shards": list(self.finished_shards),
            "field_counts": {FIELD: self.total_num_tokens},
            "metadata": {"preprocessor_metadata": {"tokenizer": identity}},
            "datapipe": {
                "format_version": self.format_version,
                "total_num_tokens": self.total_num_tokens,
                "shard_tokens": dict(self.shard_tokens),
                "tokenizer": identity,
            },
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Ledger:
        """A ledger from its JSON, already checked against ``schemas/ledger.schema.json``."""
        ours = doc["datapipe"]
        return cls(
            shard_rows=dict(doc["shard_rows"]),
            shard_tokens=dict(ours["shard_tokens"]),
            tokenizer=TokenizerIdentity.from_dict(ours["tokenizer"]),
            finished_shards=tuple(doc["finished_shards"]),
            is_finished=bool(doc["is_finished"]),
            format_version=int(ours["format_version"]),
        )


def make_ledger(
    shard_rows: dict[str, int], shard_tokens: dict[str, int], tokenizer: TokenizerIdentity
) -> Ledger:
    return Ledger(shard_rows, shard_tokens, tokenizer, tuple(shard_rows))


def write_ledger(cache_dir: str, ledger: Ledger) -> None:
    doc = ledger.to_dict()
    validate(doc, "ledger", file=fs.join(cache_dir, LEDGER))
    fs.write_text_atomic(fs.join(cache_dir, LEDGER), json.dumps(doc, indent=2, sort_keys=True) + "\n")


@dataclass
class TokenCache:
    path: str
    ledger: Ledger
    input_ids: JaggedReader

    @property
    def tokenizer(self) -> TokenizerIdentity:
        return self.ledger.tokenizer

    @property
    def num_rows(self) -> int:
        return self.input_ids.num_rows

    @property
    def num_tokens(self) -> int:
        return self.input_ids.num_elements

    def row(self, i: int) -> np.ndarray:
        return self.input_ids.row(i)

    @classmethod
    def open(cls, path: str, expect_tokenizer: TokenizerIdentity | None = None) -> TokenCache:
        ledger_url = fs.join(path, LEDGER)
        if not fs.exists(ledger_url):
            raise DatapipeError(f"{path}: not a finished token cache (no {LEDGER})")
        doc = json.loads(fs.read_text(ledger_url))
        validate(doc, "ledger", file=ledger_url)
        ledger = Ledger.from_dict(doc)
        if not ledger.is_finished:
            raise DatapipeError(f"{ledger_url}: cache is not finished")
        reader = JaggedReader(fs.join(path, FIELD))
        if reader.num_rows != doc["total_num_rows"]:
            raise DatapipeError(
                f"{path}: offsets say {reader.num_rows} rows but the ledger says {doc['total_num_rows']}"
            )
        cache = cls(path, ledger, reader)
        if expect_tokenizer is not None and cache.tokenizer.sha256 != expect_tokenizer.sha256:
            raise DatapipeError(
                f"{path}: built with tokenizer {cache.tokenizer.name} (sha256 {cache.tokenizer.sha256[:12]}), "
                f"expected {expect_tokenizer.name} (sha256 {expect_tokenizer.sha256[:12]})"
            )
        return cache
