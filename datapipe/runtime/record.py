"""``stage.json``, typed: what a finished stage says about itself, written last but one (before ``_SUCCESS``).

Why a record and not a dict: the report, the browser, lineage, ``datapipe verify`` and both engines read these files;
one dataclass names the fields they may rely on, ``schemas/stage.schema.json`` states them for other tools, and a
file that lacks one is one line naming it instead of a ``KeyError`` three modules away. The stage's own fields
(``parts``, ``cache``, ``quality``, ``dedup``, ...; :meth:`datapipe.runtime.stage.Stage.finalize`) stay open, in
``extra``. The JSON is the same bytes as before the record existed: keys sorted, two-space indent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from datapipe.errors import DatapipeError

# the fields the plan gives every stage (datapipe.orchestrate.plan): absent only from a stage run outside a build
PLAN_FIELDS = ("hash", "config", "inputs")
REQUIRED = ("datapipe_version", "source", "stage", "counts", "shards")


@dataclass(frozen=True)
class StageRecord:
    datapipe_version: str
    source: str
    stage: str
    counts: dict[str, object]  # the merged statistics (datapipe.runtime.stats.StageStats.to_dict)
    shards: list[dict[str, object]]  # per shard, in shard order: index, name and its counts
    hash: str | None = None  # the stage's hash: its config and inputs (the folder's name ends with it)
    config: dict[str, object] | None = None
    inputs: list[object] | None = None
    extra: dict[str, object] = field(default_factory=dict)  # the stage's own fields (finalize)

    def to_dict(self) -> dict[str, object]:
        named = {k: getattr(self, k) for k in REQUIRED} | {
            k: getattr(self, k) for k in PLAN_FIELDS if getattr(self, k) is not None
        }
        clash = sorted(set(named) & set(self.extra))
        if clash:
            raise ValueError(f"stage.json: the stage's own fields {clash} would overwrite the record's")
        return {**named, **self.extra}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, doc: dict[str, Any], where: str = "stage.json") -> StageRecord:
        if not isinstance(doc, dict):
            raise DatapipeError(f"{where}: not a JSON object")
        missing = [k for k in REQUIRED if k not in doc]
        if missing:
            raise DatapipeError(
                f"{where}: no {', '.join(missing)} (a stage.json of another version, or damaged)"
            )
        known = set(REQUIRED) | set(PLAN_FIELDS)
        return cls(
            datapipe_version=doc["datapipe_version"],
            source=doc["source"],
            stage=doc["stage"],
            counts=doc["counts"],
            shards=doc["shards"],
            hash=doc.get("hash"),
            config=doc.get("config"),
            inputs=doc.get("inputs"),
            extra={k: v for k, v in doc.items() if k not in known},
        )

    @classmethod
    def from_json(cls, text: str, where: str = "stage.json") -> StageRecord:
        try:
            doc = json.loads(text)
        except ValueError as e:
            raise DatapipeError(f"{where}: not JSON ({e})") from None
        return cls.from_dict(doc, where)
