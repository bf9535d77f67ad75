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


def make_ledger(
    shard_rows: dict[str, int], shard_tokens: dict[str, int], tokenizer: TokenizerIdentity
) -> dict[str, Any]:
    rows = sum(shard_rows.values())
    tokens = sum(shard_tokens.values())
    return {
        "total_num_rows": rows,
        "shard_rows": shard_rows,
        "is_finished": True,
        "finished_shards": list(shard_rows),
        "field_counts": {FIELD: tokens},
        "metadata": {"preprocessor_metadata": {"tokenizer": tokenizer.to_dict()}},
        "datapipe": {
            "format_version": FORMAT_VERSION,
            "total_num_tokens": tokens,
            "shard_tokens": shard_tokens,
            "tokenizer": tokenizer.to_dict(),
        },
    }


def write_ledger(cache_dir: str, ledger: dict[str, Any]) -> None:
    validate(ledger, "ledger", file=fs.join(cache_dir, LEDGER))
    fs.write_text_atomic(fs.join(cache_dir, LEDGER), json.dumps(ledger, indent=2, sort_keys=True) + "\n")


@dataclass
class TokenCache:
    path: str
    ledger: dict[str, Any]
    input_ids: JaggedReader

    @property
    def tokenizer(self) -> TokenizerIdentity:
        return TokenizerIdentity.from_dict(self.ledger["datapipe"]["tokenizer"])

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
        ledger = json.loads(fs.read_text(ledger_url))
        validate(ledger, "ledger", file=ledger_url)
        if not ledger["is_finished"]:
            raise DatapipeError(f"{ledger_url}: cache is not finished")
        reader = JaggedReader(fs.join(path, FIELD))
        if reader.num_rows != ledger["total_num_rows"]:
            raise DatapipeError(
                f"{path}: offsets say {reader.num_rows} rows but the ledger says {ledger['total_num_rows']}"
            )
        cache = cls(path, ledger, reader)
        if expect_tokenizer is not None and cache.tokenizer.sha256 != expect_tokenizer.sha256:
            raise DatapipeError(
                f"{path}: built with tokenizer {cache.tokenizer.name} (sha256 {cache.tokenizer.sha256[:12]}), "
                f"expected {expect_tokenizer.name} (sha256 {expect_tokenizer.sha256[:12]})"
            )
        return cache
