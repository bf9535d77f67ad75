"""Check a token cache against its own invariants and report the first thing that is wrong.

- ``offsets[0]`` (committed rows) equals the ledger's ``total_num_rows`` and the sum of ``shard_rows``;
- row ends ``offsets[1..rows]`` never decrease (the first row that breaks this is named);
- the end of the last row equals the ledger's token count (``field_counts`` and ``datapipe.total_num_tokens``);
- every row's tokens are below the tokenizer's vocabulary size;
- the ledger is finished and valid against ``schemas/ledger.schema.json``.
"""

from __future__ import annotations

import json

import numpy as np

from datapipe.config.schema import validate
from datapipe.errors import ConfigError
from datapipe.io import fs
from datapipe.store.cache import FIELD, LEDGER
from datapipe.store.jagged import JaggedReader


def verify_cache(path: str, chunk: int = 1 << 24) -> list[str]:
    """Problems found (an empty list means the cache is sound)."""
    ledger_url = fs.join(path, LEDGER)
    if not fs.exists(ledger_url):
        return [f"{path}: no {LEDGER}"]
    ledger = json.loads(fs.read_text(ledger_url))
    try:
        validate(ledger, "ledger", file=ledger_url)
    except ConfigError as e:
        return [str(e)]
    problems = []
    if not ledger["is_finished"]:
        problems.append(f"{ledger_url}: is_finished is false")
    r = JaggedReader(fs.join(path, FIELD))
    rows = r.num_rows
    if rows != ledger["total_num_rows"]:
        problems.append(f"{path}: offsets[0] says {rows} rows, the ledger {ledger['total_num_rows']}")
    if sum(ledger["shard_rows"].values()) != ledger["total_num_rows"]:
        problems.append(
            f"{ledger_url}: shard_rows add up to {sum(ledger['shard_rows'].values())}, not total_num_rows"
        )
    ends = r.ends()
    bad = np.flatnonzero(np.diff(np.concatenate([[0], ends])) < 0)
    if len(bad):
        i = int(bad[0])
        prev = int(ends[i - 1]) if i else 0
        problems.append(
            f"{path}: row {i} ends at {int(ends[i])}, before it starts at {prev} (offsets not monotone)"
        )
    tokens = int(ends[-1]) if rows else 0
    for name, expected in (
        ("field_counts.input_ids", ledger["field_counts"].get(FIELD)),
        ("datapipe.total_num_tokens", ledger["datapipe"]["total_num_tokens"]),
    ):
        if expected != tokens:
            problems.append(f"{path}: the last row ends at {tokens} tokens, {name} says {expected}")
    vocab = ledger["datapipe"]["tokenizer"]["vocab_size"]
    for start in range(0, tokens, chunk):
        block = r.data[start : min(tokens, start + chunk)].read().result()
        over = np.flatnonzero(block >= vocab)
        if len(over):
            pos = start + int(over[0])
            row = int(np.searchsorted(ends, pos, side="right"))
            problems.append(
                f"{path}: row {row} holds token id {int(block[over[0]])} >= vocabulary size {vocab}"
            )
            break
    return problems
