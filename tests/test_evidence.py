"""Removals carry their evidence beside each stage's parts (issue 24, item 1): what the rule measured, on a real
build (the small mixture: WARC pages through language ID and RefinedWeb's rules, JSONL through dedup)."""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq

from datapipe.decisions import read_removed


def _stages(out):
    """Stages that remove documents (the token cache keeps every document it is given)."""
    return sorted(
        p for p in out.glob("*/*") if (p / "stage.json").exists() and not p.name.startswith("tokenize-")
    )


def test_every_removed_document_is_listed_with_its_reason_and_evidence(built_small):
    out, _ = built_small
    seen_reasons: set[str] = set()
    for stage in _stages(out):
        doc = json.loads((stage / "stage.json").read_text())
        parts = sorted(stage.glob("part-*.stats.json"))
        assert len(list(stage.glob("part-*.removed.parquet"))) == len(parts), stage
        rows = read_removed(str(stage)).to_pylist()
        removed = doc["counts"]["removed"]
        # records the reader could not make a document of (read/...) have no document to list
        per_doc = {k: v for k, v in removed.items() if not k.startswith("read/")}
        listed: dict[str, int] = {}
        for row in rows:
            listed[row["reason"]] = listed.get(row["reason"], 0) + 1
        assert listed == per_doc, stage
        for row in rows:
            seen_reasons.add(row["reason"])
            if row["reason"].startswith(("filter/", "langid/")):
                assert row["evidence"] and row["measure"], row
            if row["reason"] == "langid/language":
                assert re.fullmatch(r"language=\S+ not in en \(score \d\.\d\d\)", row["evidence"]), row
            if row["reason"] == "langid/score":
                assert row["value"] < row["threshold"] == 0.65, row
            if row["reason"].startswith("filter/gopher_short_doc"):
                assert row["value"] < row["threshold"] and row["evidence"].startswith("words="), row
        for reason, samples in doc.get("samples", {}).items():
            if reason.startswith(("filter/", "langid/")):
                assert all(s.get("evidence") for s in samples), (stage, reason)
        for part in stage.glob("part-*.removed.parquet"):  # in input order, each document once
            refs = pq.read_table(part).column("ref").to_pylist()
            assert refs == sorted(set(refs)), part
    assert any(r.startswith("filter/") for r in seen_reasons) and any(
        r.startswith("langid/") for r in seen_reasons
    )
