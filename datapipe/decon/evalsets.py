"""Evaluation items from files: JSONL records (chosen fields joined) or plain text (one item per non-empty line)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from datapipe.errors import DatapipeError
from datapipe.io import fs


@dataclass(frozen=True)
class EvalItem:
    id: str  # "<set>:<file name>:<line>" or "<set>:<record id>"
    text: str


def _field_text(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return "\n".join(_field_text(v) for v in value)
    if isinstance(value, dict):
        return "\n".join(_field_text(v) for v in value.values())
    return "" if value is None else str(value)


def read_items(
    set_name: str, url: str, fields: tuple[str, ...], id_field: str | None, per_field: bool = True
) -> Iterator[EvalItem]:
    """The items of one file. A JSONL line that is not an object, or lacks every field, is an error naming it.

    With ``per_field`` a record of several fields is also one item per field (``<id>#<field>``), so a copy of the
    question alone (a leaked prompt) is caught by its own share, not diluted by the answer's n-grams.
    """
    text = fs.read_bytes(url).decode("utf-8", errors="replace")
    name = url.rsplit("/", 1)[-1]
    jsonl = url.endswith((".jsonl", ".json"))
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if not jsonl:
            yield EvalItem(f"{set_name}:{name}:{lineno}", line)
            continue
        try:
            rec = json.loads(line)
        except ValueError as e:
            raise DatapipeError(f"{url}: line {lineno}: not JSON ({e})") from None
        if not isinstance(rec, dict):
            raise DatapipeError(f"{url}: line {lineno}: not a JSON object")
        present = [f for f in fields if f in rec]
        if not present:
            raise DatapipeError(f"{url}: line {lineno}: none of the fields {list(fields)} is present")
        rid = rec.get(id_field) if id_field else None
        item_id = f"{set_name}:{rid}" if rid is not None else f"{set_name}:{name}:{lineno}"
        yield EvalItem(item_id, "\n".join(_field_text(rec[f]) for f in present))
        if per_field and len(present) > 1:
            for f in present:
                yield EvalItem(f"{item_id}#{f}", _field_text(rec[f]))
