"""``datapipe inspect`` on a stage folder (documents kept, or removed by a rule) and ``--json`` for any target.

Kept documents are read from the stage's own part files. Removed documents are listed beside them, with the
evidence of their removal (``part-NNNNN.removed.parquet``, :mod:`datapipe.runtime.decisions`): ``--removed-by`` shows every
one of a reason (up to ``--rows``) with what the rule measured, and the text of those the stage sampled into
``stage.json`` (the first few per reason and shard; removed texts are not kept otherwise).
"""

from __future__ import annotations

import json
from typing import Any

from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.runtime.decisions import SUFFIX, read_removed
from datapipe.runtime.stage import STAGE_JSON
from datapipe.store.cache import LEDGER, TokenCache
from datapipe.store.manifest import MANIFEST, load_manifest, open_component


def _shorten(text: str, n: int) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= n else text[:n] + f"... (+{len(text) - n} chars)"


def stage_documents(
    path: str, rows: int, removed_by: str | None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    doc = json.loads(fs.read_text(fs.join(path, STAGE_JSON)))
    if removed_by is not None:
        samples = doc["counts"].get("samples", {})
        if removed_by not in doc["counts"]["removed"]:
            reasons = ", ".join(sorted(doc["counts"]["removed"])) or "none"
            raise DatapipeError(
                f"{path}: no document was removed by {removed_by!r} here (reasons: {reasons})"
            )
        sampled = {str(d["id"]): d for d in samples.get(removed_by, [])}
        if not fs.glob(fs.join(path, f"part-*{SUFFIX}")):  # a build from before the removal lists
            return doc, list(sampled.values())[:rows]
        table = read_removed(path)
        listed = [r for r in table.to_pylist() if r["reason"] == removed_by][:rows]
        return doc, [
            {
                "id": r["id"],
                "url": r["url"],
                "chars": r["chars"],
                "evidence": r["evidence"],
                "text": sampled.get(r["id"], {}).get("text", ""),
            }
            for r in listed
        ]
    from datapipe.io.jsonl import read_records

    out: list[dict[str, object]] = []
    for part in doc.get("parts", []):
        for rec in read_records(fs.join(path, part)):
            raw_meta = rec.get("metadata")
            meta: dict[str, object] = raw_meta if isinstance(raw_meta, dict) else {}
            out.append(
                {"id": rec["id"], "url": meta.get("url", ""), "chars": len(rec["text"]), "text": rec["text"]}
            )
            if len(out) >= rows:
                return doc, out
    return doc, out


def inspect_stage(path: str, rows: int, chars: int, removed_by: str | None, as_json: bool) -> int:
    doc, docs = stage_documents(path, rows, removed_by)
    c = doc["counts"]
    if as_json:
        print(
            json.dumps(
                {"stage": doc["stage"], "source": doc["source"], "counts": c, "documents": docs}, indent=2
            )
        )
        return 0
    print(f"{doc['source']}/{doc['stage']} ({path})")
    print(f"in {c['docs_in']:,}  kept {c['docs_kept']:,}  removed {sum(c['removed'].values()):,}")
    for reason, n in sorted(c["removed"].items()):
        print(f"  removed {reason:<32} {n:>8,}")
    for reason, n in sorted(c["skipped"].items()):
        print(f"  skipped {reason:<32} {n:>8,}")
    what = f"removed by {removed_by}" if removed_by else "kept"
    print(f"{len(docs)} document(s) {what}:")
    for d in docs:
        why = f" [{d['evidence']}]" if d.get("evidence") else ""
        text = _shorten(d["text"], chars) if d.get("text") else "(text not sampled)"
        print(f"  {d['id']} {d.get('url', '')} ({d['chars']:,} chars){why}: {text}")
    return 0


def inspect_json(path: str, rows: int) -> dict[str, object]:
    """A cache's rows (token ids) or a manifest with its components' shares."""
    if fs.exists(fs.join(path, LEDGER)):
        cache = TokenCache.open(path)
        return {
            "cache": path,
            "rows": cache.num_rows,
            "tokens": cache.num_tokens,
            "tokenizer": cache.tokenizer.to_dict(),
            "first_rows": [cache.row(i).tolist() for i in range(min(rows, cache.num_rows))],
        }
    if path.endswith(".json") or fs.exists(fs.join(path, MANIFEST)):
        m = load_manifest(path)
        comps = [
            {**row, "verified_rows": open_component(m, c.name).num_rows}
            for c, row in zip(m.components, m.listing(), strict=True)
        ]
        return {"mixture": m.name, "seed": m.seed, "seq_len": m.seq_len, "components": comps}
    raise DatapipeError(
        f"{path}: neither a stage folder, a token cache ({LEDGER}) nor a mixture output ({MANIFEST})"
    )
