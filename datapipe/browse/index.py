"""The browser's index of a build: one Parquet file per stage folder, one row per document that entered the stage.

A stage folder holds its kept documents (``part-NNNNN.jsonl.zst``, text and metadata) and its removed ones
(``part-NNNNN.removed.parquet``: reason and evidence, no text). Neither answers "the removed documents of reason R
whose text contains W" without reading every part, so ``datapipe browse`` first writes, per stage folder, a
columnar index that does: ``source``, ``step`` (the stage's place in its source's chain), ``stage``, ``shard``,
``index`` (position in the stage's input shard), ``id``, ``ref``, ``url``, ``outcome`` (``kept`` / ``removed``),
``reason``, ``evidence``, ``measure``, ``value``, ``threshold``, ``related``, ``language``, ``language_score``,
``page_type`` (datapipe's learned extractor's), ``quality`` (the selected classifier's score, else the first),
``chars`` and ``text``.

Some columns are filled from what the stage recorded elsewhere than in a removal's row: a MinHash duplicate's
``threshold`` is the one its dedup stage ran with (``stage.json``'s ``minhash.threshold``; the row holds the
measured Jaccard only), and the ``quality`` of a document the quality stage removed is the score it was removed
for (the row's ``value``: such a document is in no kept part, whose metadata holds the scores of the kept ones).

A removed document's text is the text it entered the stage with: the previous stage's kept part of the same shard
at the row's ``index`` (read one shard at a time, so memory is one shard's text, not the build's). The first stage
reads raw input, which is not text yet: its removed rows have none, unless the source keeps its removed documents
(``keep_removed: true``), whose text is then taken from them.

Rows are ordered kept first, then removed grouped by reason, so that a view of one outcome or reason reads few row
groups (their min/max statistics skip the rest). The index sits in ``<index dir>/<source>/<stage folder>.parquet``, written atomically; a stage folder's name ends
in its content hash, so an index that exists is current and is reused, when the browser that wrote it wrote
the same columns (``INDEX_VERSION`` in the file's metadata; an older one is rewritten). The tokenize stage (a token cache, no
documents) has none: the browser decodes cache rows instead.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from datapipe.io import fs
from datapipe.io.jsonl import read_records
from datapipe.io.shards import part_name, records_name
from datapipe.report.collect import StageView
from datapipe.runtime.decisions import KEPT_DIR, removed_schema
from datapipe.runtime.decisions import SUFFIX as REMOVED_SUFFIX

ROW_GROUP = 20_000  # rows per Parquet row group: a filtered scan skips groups by their min/max
# what an index file's columns hold; a file of another version (or none: before versions) is rewritten
INDEX_VERSION = "5"  # 5: removals carry the language (and language ID's their text)
VERSION_KEY = b"datapipe.browse.index"
MINHASH = "dedup/minhash"  # the dedup stage's reason for a MinHash duplicate (the browser imports no stage)
ENSEMBLE = "ensemble"  # the name a quality stage selects its ensemble's combined bucket by


def schema() -> Any:
    """Where the document is, its outcome, the removal list's columns (empty for a kept one), then what a kept
    document carries in its metadata, and its text."""
    import pyarrow as pa

    removed = removed_schema()
    own = {"index", "language", "text"}  # the removal list's, placed where the index keeps them for every row
    return pa.schema(
        [("source", pa.string()), ("step", pa.int32()), ("stage", pa.string()), ("shard", pa.int32())]
        + [removed.field("index"), ("outcome", pa.string())]
        + [removed.field(n) for n in removed.names if n not in own]
        + [("language", pa.string()), ("language_score", pa.float64()), ("page_type", pa.string())]
        + [("quality", pa.float64())]
        + [("text", pa.string())],
        metadata={VERSION_KEY: INDEX_VERSION.encode()},
    )


def is_current(path: str) -> bool:
    """Whether an index file exists and was written by this version of the browser."""
    import pyarrow.parquet as pq

    if not os.path.exists(path):
        return False
    try:
        meta = pq.read_schema(path).metadata or {}
    except (OSError, ValueError):  # not Parquet (a write cut short before the atomic rename cannot leave one)
        return False
    return meta.get(VERSION_KEY) == INDEX_VERSION.encode()


@dataclass(frozen=True)
class StageIndex:
    """Where one stage folder's index is, and what it indexes."""

    source: str
    step: int
    stage: str
    dirname: str
    path: str  # the index file


def indexed_stages(chains: dict[str, list[StageView]]) -> list[tuple[int, StageView]]:
    """(step, stage) of every stage with documents (not the token cache), in chain order per source."""
    return [
        (step, rec) for chain in chains.values() for step, rec in enumerate(chain) if rec.stage != "tokenize"
    ]


def index_path(index_dir: str, rec: StageView) -> str:
    """The index file of a stage folder (``index_dir`` is a local folder: DuckDB reads it, many times a second)."""
    return os.path.join(index_dir, rec.source, f"{rec.dirname}.parquet")


def _parts(stage_url: str) -> list[int]:
    """Shard numbers of a stage folder, from its part files (kept or removed: a shard may have only one kind)."""
    shards = set()
    for u in fs.glob(fs.join(stage_url, "part-*")):
        name = u.rstrip("/").split("/")[-1]
        if name.endswith(".jsonl.zst") or name.endswith(REMOVED_SUFFIX):
            shards.add(int(name[len("part-") :].split(".", 1)[0]))
    return sorted(shards)


def _part(stage_url: str, shard: int) -> str:
    return fs.join(stage_url, records_name(shard))


def _kept(stage_url: str, shard: int) -> list[dict[str, Any]]:
    url = _part(stage_url, shard)
    return list(read_records(url)) if fs.exists(url) else []


def _removed(stage_url: str, shard: int) -> list[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    url = fs.join(stage_url, part_name(shard) + REMOVED_SUFFIX)
    if not fs.exists(url):
        return []
    return pq.read_table(pa.BufferReader(fs.read_bytes(url)), use_threads=False).to_pylist()


def _kept_removed(stage_url: str, shard: int) -> dict[str, dict[str, Any]]:
    """ref -> document, from the removed documents a ``keep_removed`` stage wrote: the only text a first stage's
    removals have (its input is raw)."""
    urls = fs.glob(fs.join(stage_url, KEPT_DIR, "**", records_name(shard)))
    return {str(d.get("ref", d.get("id", ""))): d for u in sorted(urls) for d in read_records(u)}


def _quality(meta: dict[str, object], select: str | None) -> float | None:
    """The quality column: the selected classifier's score (an ensemble's combined bucket), else the first's."""
    if select == ENSEMBLE:
        buckets = meta.get("quality_buckets")
        if isinstance(buckets, dict) and isinstance(buckets.get(ENSEMBLE), int | float):
            return float(buckets[ENSEMBLE])
    scores = meta.get("quality")
    if not isinstance(scores, dict) or not scores:
        return None
    value = scores.get(select) if select else None
    return float(value if value is not None else next(iter(scores.values())))


def _quality_evidence(meta: dict[str, object]) -> str | None:
    """A kept document's ensemble evidence: each classifier's score and bucket, and the combined bucket."""
    scores, buckets = meta.get("quality"), meta.get("quality_buckets")
    if not isinstance(scores, dict) or not isinstance(buckets, dict):
        return None
    parts = [
        f"{n} {scores[n]:.4f} (bucket {int(b)})" for n, b in buckets.items() if n != ENSEMBLE and n in scores
    ]
    copies = meta.get("quality_repeats")
    tail = f"; {copies} copies in the cache" if isinstance(copies, int) and copies > 1 else ""
    return ", ".join(parts) + f"; ensemble bucket {buckets.get(ENSEMBLE)}" + tail


def _substrings_evidence(meta: dict[str, object]) -> str | None:
    """A kept document the substrings stage cut: the bytes removed, and each span with where its copy is kept."""
    cut = meta.get("substrings")
    if not isinstance(cut, dict):
        return None
    spans = []
    for span in cut.get("first_spans", []):
        copies = "; ".join(f"copy of document {c[2]} at byte {c[3]}" for c in span["copies"][:2])
        spans.append(f"bytes {span['start']}-{span['end']} ({copies})")
    more = cut["spans"] - len(spans)
    return (
        f"{cut['spans']} repeated span(s) cut, {cut['bytes_removed']:,} of {cut['bytes_before']:,} bytes: "
        + ", ".join(spans)
        + (f" and {more} more" if more > 0 else "")
    )


# what a kept document's row shows as evidence, by stage (a removed one's comes from its removal list)
_KEPT_EVIDENCE = {"quality": _quality_evidence, "substrings": _substrings_evidence}


def _select(chain: list[StageView]) -> str | None:
    """The classifier the chain's quality stage selects by: the score the quality column shows at that stage and
    at every later one (decon, PII), whose own configs do not name it."""
    for rec in chain:
        if rec.stage == "quality":
            select = rec.doc.get("config", {}).get("select")
            return select.get("classifier") if isinstance(select, dict) else None
    return None


def _minhash_threshold(rec: StageView) -> float | None:
    """The Jaccard threshold a dedup stage ran MinHash with (its ``stage.json``), else None: also when it verified
    no pair (FineWeb-2's preset), where a removal's Jaccard under the configured figure is not a missed keep."""
    minhash = rec.doc.get("config", {}).get("minhash") if rec.stage == "dedup" else None
    if isinstance(minhash, dict) and minhash.get("verify") is False:
        return None
    value = minhash.get("threshold") if isinstance(minhash, dict) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _removed_quality(row: dict[str, Any], select: str | None) -> float | None:
    """The score a quality removal measured (``quality/<classifier>``), when it is the column's classifier."""
    measure = row.get("measure") or ""
    if not measure.startswith("quality/") or row.get("value") is None:
        return None
    return float(row["value"]) if select is None or measure == f"quality/{select}" else None


def _removed_page_type(row: dict[str, object]) -> str | None:
    """The type of a page the extract stage removed for it: its evidence reads ``page_type=product (...)``."""
    if row.get("measure") != "page_type":
        return None
    shown = str(row.get("evidence") or "").partition("=")[2]
    return shown.split(" ", 1)[0] or None


def shard_rows(
    rec: StageView, step: int, shard: int, previous: StageView | None, select: str | None
) -> Iterator[dict[str, object]]:
    """The index rows of one shard of one stage, in input order: kept documents interleaved with removed ones at
    their input positions (a kept document's position is the next one no removed row holds)."""
    kept = _kept(rec.url, shard)
    removed = sorted(_removed(rec.url, shard), key=lambda r: r["index"])
    entered = _kept(previous.url, shard) if previous is not None else []
    base = {"source": rec.source, "step": step, "stage": rec.stage, "shard": shard}
    taken = {r["index"] for r in removed}
    positions = (i for i in itertools.count() if i not in taken)
    rows: list[tuple[int, dict[str, object]]] = []
    for doc, pos in zip(kept, positions, strict=False):
        meta: dict[str, object] = doc["metadata"] if isinstance(doc.get("metadata"), dict) else {}
        text = str(doc.get("text") or "")
        rows.append(
            (
                pos,
                {
                    **base,
                    "index": pos,
                    "id": str(doc.get("id", "")),
                    "ref": str(doc.get("ref", doc.get("id", ""))),
                    "url": str(meta.get("url", "")),
                    "outcome": "kept",
                    "evidence": _KEPT_EVIDENCE[rec.stage](meta) if rec.stage in _KEPT_EVIDENCE else None,
                    "language": meta.get("language"),
                    "language_score": meta.get("language_score"),
                    "page_type": meta.get("page_type"),
                    "quality": _quality(meta, select),
                    "chars": len(text),
                    "text": text,
                },
            )
        )
    kept_removed = _kept_removed(rec.url, shard) if previous is None else {}
    threshold = _minhash_threshold(rec)
    for r in removed:
        before = entered[r["index"]] if r["index"] < len(entered) else kept_removed.get(r["ref"])
        meta = before["metadata"] if before is not None and isinstance(before.get("metadata"), dict) else {}
        same = before is not None and str(before.get("ref", before.get("id", ""))) == r["ref"]
        quality = _quality(meta, select) if same else None
        rows.append(
            (
                r["index"],
                {
                    **base,
                    **r,
                    "outcome": "removed",
                    "threshold": (
                        threshold if r["threshold"] is None and r["reason"] == MINHASH else r["threshold"]
                    ),
                    # the removal list's own column (language ID's removals), where the document is not at hand
                    "language": meta.get("language") if same else r.get("language"),
                    "language_score": meta.get("language_score") if same else None,
                    "page_type": meta.get("page_type") if same else _removed_page_type(r),
                    "quality": quality if quality is not None else _removed_quality(r, select),
                    "text": str(before.get("text") or "")
                    if same and before is not None
                    else r.get("text"),  # language ID's removals keep their text in the removal list
                },
            )
        )
    rows.sort(key=lambda pair: pair[0])
    yield from (row for _, row in rows)


class _RowWriter:
    """Writes index rows to one Parquet file in row groups of ``ROW_GROUP``."""

    def __init__(self, path: str) -> None:
        import pyarrow.parquet as pq

        self.path = path
        self.writer = pq.ParquetWriter(path, schema(), compression="zstd")
        self.batch: list[dict[str, object]] = []
        self.rows = 0

    def add(self, row: dict[str, object]) -> None:
        self.batch.append(row)
        if len(self.batch) >= ROW_GROUP:
            self.flush()

    def flush(self) -> None:
        from datapipe.io.arrow import table_from_rows

        if self.batch:
            self.writer.write_table(table_from_rows(self.batch, schema()))
            self.rows += len(self.batch)
            self.batch = []

    def close(self) -> None:
        self.flush()
        self.writer.close()


def _write_stage(path: str, rec: StageView, step: int, previous: StageView | None, select: str | None) -> int:
    """Write one stage folder's index: its kept rows first, then its removed rows grouped by reason (each group in
    shard and input order). A filtered view then reads few row groups: a view of one outcome or one reason skips
    the others' groups by their min/max statistics, and its first page comes from the first groups it reads.
    Removed rows wait in one spill file per reason beside the index (a stage has a few dozen reasons at most), so
    memory stays one shard and one row group per reason."""
    import shutil

    import pyarrow.parquet as pq

    spill_dir = f"{path}.spill"
    shutil.rmtree(spill_dir, ignore_errors=True)
    os.makedirs(spill_dir)
    spills: dict[str, _RowWriter] = {}
    out = _RowWriter(f"{path}.tmp")
    try:
        for shard in _parts(rec.url):
            for row in shard_rows(rec, step, shard, previous, select):
                if row["outcome"] == "kept":
                    out.add(row)
                    continue
                reason = str(row.get("reason") or "")
                if reason not in spills:
                    spills[reason] = _RowWriter(os.path.join(spill_dir, f"{len(spills):05d}.parquet"))
                spills[reason].add(row)
        out.flush()
        for reason in sorted(spills):
            spills[reason].close()
            spill = pq.ParquetFile(spills[reason].path)
            for group in range(spill.num_row_groups):
                out.writer.write_table(spill.read_row_group(group, use_threads=False))
                out.rows += spill.metadata.row_group(group).num_rows
        if (
            not out.rows
        ):  # an empty stage still gets a file (with the schema) so that it is known to be indexed
            out.writer.write_table(schema().empty_table())
        out.close()
        os.replace(f"{path}.tmp", path)
    finally:
        for writer in (out, *spills.values()):
            writer.writer.close()
        shutil.rmtree(spill_dir, ignore_errors=True)
    return out.rows


def build_index(
    chains: dict[str, list[StageView]], index_dir: str, say: Callable[[str], None] = lambda _: None
) -> list[StageIndex]:
    """Write the index of every stage folder that has none yet (or one an older browser wrote); return them all,
    in chain order."""
    out: list[StageIndex] = []
    for chain in chains.values():
        select = _select(chain)
        documents = [(step, rec) for step, rec in enumerate(chain) if rec.stage != "tokenize"]
        for pos, (step, rec) in enumerate(documents):
            path = index_path(index_dir, rec)
            out.append(StageIndex(rec.source, step, rec.stage, rec.dirname, path))
            if is_current(path):
                continue
            previous = documents[pos - 1][1] if pos else None
            os.makedirs(os.path.dirname(path), exist_ok=True)
            rows = _write_stage(path, rec, step, previous, select)
            say(f"indexed {rec.source}/{rec.dirname}: {rows:,} documents")
    return out
