"""Duplicate clusters of a dedup stage, named by the documents' own ids: ``inspect --cluster`` and
``export-clusters`` (and, with ``--edges``, the verified MinHash edges a stage kept with ``keep_edges``).

A cluster is a kept copy and the documents removed in its favour. Both are read from the stage's removal lists
(``part-NNNNN.removed.parquet``): each removed row names its kept copy (``related``) and how close it is
(``jaccard_with_kept_copy`` for MinHash; the same normalized text for exact dedup). Nothing is recomputed, so an
export is as fast as reading the lists.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.runtime.decisions import read_removed
from datapipe.runtime.stage import STAGE_JSON, read_stage_json


def clusters(stage_dir: str) -> dict[str, list[dict[str, object]]]:
    """Kept copy id -> its removed copies (``id``, ``ref``, ``url``, ``reason``, ``jaccard``), sorted by id."""
    if not fs.exists(fs.join(stage_dir, STAGE_JSON)):
        raise DatapipeError(f"{stage_dir}: not a stage folder (no {STAGE_JSON})")
    if read_stage_json(stage_dir).get("stage") != "dedup":
        raise DatapipeError(f"{stage_dir}: not a dedup stage folder (clusters are what dedup removes)")
    out: dict[str, list[dict[str, object]]] = {}
    for row in read_removed(stage_dir).to_pylist():
        if not row["related"]:
            continue
        jaccard = row["value"] if row["measure"] == "jaccard_with_kept_copy" else 1.0
        out.setdefault(row["related"], []).append(
            {
                "id": row["id"],
                "ref": row["ref"],
                "url": row["url"],
                "reason": row["reason"],
                "jaccard": jaccard,
            }
        )
    return dict(sorted(out.items()))


def export_lines(stage_dir: str) -> Iterator[str]:
    """One JSON line per cluster: ``{"kept": id, "size": n, "removed": [...]}``."""
    for kept, removed in clusters(stage_dir).items():
        yield json.dumps({"kept": kept, "size": len(removed) + 1, "removed": removed}, sort_keys=True)


def export_edges(stage_dir: str) -> Iterator[str]:
    """One JSON line per verified edge ``{"a": id, "b": id, "jaccard": j}``, by the documents' own ids (the ids
    stored when each shard was signed; an earlier build's, ``dedup.against``, from that build's)."""
    from datapipe.dedup.store import earlier_shards, names, read_edges

    doc = read_stage_json(stage_dir)
    if doc.get("stage") != "dedup":
        raise DatapipeError(f"{stage_dir}: not a dedup stage folder")
    if not (doc.get("config", {}).get("minhash") or {}).get("keep_edges"):
        raise DatapipeError(
            f"{stage_dir}: kept no edges (dedup: {{minhash: {{keep_edges: true}}}} keeps them)"
        )
    edges = sorted(read_edges(stage_dir))
    against = tuple(doc.get("config", {}).get("against") or ())
    refs = {ref for a, b, _ in edges for ref in (a, b)}
    named = names(refs, stage_dir, earlier_shards(against) if any(s < 0 for s, _ in refs) else ())
    for a, b, j in edges:
        yield json.dumps({"a": named[a], "b": named[b], "jaccard": round(float(j), 6)}, sort_keys=True)


def cluster_of(stage_dir: str, doc_id: str) -> tuple[str, list[dict[str, object]]]:
    """The cluster a document is in, as the kept copy or as a removed one."""
    found = clusters(stage_dir)
    if doc_id in found:
        return doc_id, found[doc_id]
    for kept, removed in found.items():
        if any(r["id"] == doc_id for r in removed):
            return kept, removed
    raise DatapipeError(f"{stage_dir}: {doc_id!r} is in no duplicate cluster here ({len(found)} clusters)")


def kept_text(stage_dir: str, doc_id: str) -> str | None:
    """The kept copy's text, from the stage's own parts."""
    from datapipe.io.jsonl import read_records

    for part in read_stage_json(stage_dir).get("parts", []):
        for rec in read_records(fs.join(stage_dir, part)):
            if rec["id"] == doc_id:
                return str(rec["text"])
    return None
