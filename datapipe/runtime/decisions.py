"""The removed documents of a shard, with why: ``part-NNNNN.removed.parquet`` beside the stage's parts.

One row per document the stage removed: ``index`` (its position in the stage's input shard), ``id`` (its own id
in the input), ``ref`` (where it was read, ``<input file>:<n>``), ``url``,
``reason`` (as counted in ``stage.json``), ``evidence`` (``words=37 < 50``), ``measure``, ``value`` and ``threshold``
(numbers, when the rule measured one: what a browser filters ranges on), ``related`` (the document the decision
refers to: a duplicate's kept copy, which names its cluster) and ``chars`` (the text's length). Kept
documents carry their measured values in their own metadata (language and score, quality scores), so this file
holds only what would otherwise be lost. Parquet, because it is columnar and small (a few dozen bytes a row,
compressed) and DuckDB, pyarrow and pandas read a stage's files with one glob. Written atomically before the
shard's commit marker, like the part it sits beside; a shard with no removal gets an empty file, so that every
committed shard has one.
"""

from __future__ import annotations

from typing import Any

from datapipe.io import fs
from datapipe.io.shards import Shard
from datapipe.runtime.evidence import Removal, evidence_of

SUFFIX = ".removed.parquet"


def removed_schema() -> Any:
    """The columns of a removal list (also the browser index's, which adds its own)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("index", pa.int64()),
            ("id", pa.string()),
            ("ref", pa.string()),
            ("url", pa.string()),
            ("reason", pa.string()),
            ("evidence", pa.string()),
            ("measure", pa.string()),
            ("value", pa.float64()),
            ("threshold", pa.float64()),
            ("related", pa.string()),
            ("chars", pa.int64()),
            ("language", pa.string()),  # the language ID found, when it ran: its removals can be found by it
            # the document's text where no later reader could see it otherwise (language ID's removals: the
            # extract stage's input is HTML, its text exists only once extracted); null elsewhere
            ("text", pa.string()),
        ]
    )


def removed_url(out_dir: str, shard: Shard) -> str:
    return fs.join(out_dir, f"{shard.part}{SUFFIX}")


KEPT_DIR = "removed"  # keep_removed: <stage>/removed/<reason>/part-NNNNN.jsonl.zst


class RemovedLog:
    """The rows of one shard's removed documents, in input order; with ``keep_documents`` (a source's
    ``keep_removed: true``) also the documents themselves, per reason, as datatrove's exclusion writers keep them."""

    def __init__(self, keep_documents: bool = False) -> None:
        self.rows: list[dict[str, object]] = []
        self.keep_documents = keep_documents
        self.documents: dict[str, list[dict[str, object]]] = {}

    def add(self, index: int, doc: dict[str, Any], reason: str, *, with_text: bool = False) -> None:
        """Record a removed document; ``with_text`` keeps its text in the row (see :func:`removed_schema`)."""
        if self.keep_documents:
            own: dict[str, object] = doc["metadata"] if isinstance(doc.get("metadata"), dict) else {}
            explained = reason.explained() if isinstance(reason, Removal) else str(reason)
            kept = {**doc, "metadata": {**own, "removed": explained}}
            self.documents.setdefault(str(reason), []).append(kept)
        meta = doc.get("metadata")
        self.rows.append(
            {
                "index": index,
                "id": str(doc.get("id", "")),
                "ref": str(doc.get("ref", doc.get("id", ""))),
                "url": str(meta.get("url", "")) if isinstance(meta, dict) else "",
                "reason": str(reason),
                **evidence_of(reason),
                "chars": len(str(doc.get("text") or "")),
                "language": (str(meta.get("language")) if meta.get("language") else None)
                if isinstance(meta, dict)
                else None,
                "text": str(doc.get("text") or "") if with_text else None,
            }
        )

    def write(self, url: str) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from datapipe.io.arrow import table_from_rows

        table = table_from_rows(self.rows, removed_schema())
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="zstd")
        fs.write_bytes_atomic(url, sink.getvalue().to_pybytes())

    def write_documents(self, out_dir: str, shard: Shard) -> None:
        """With ``keep_documents``: ``removed/<reason>/part-NNNNN.jsonl.zst`` per reason met in the shard, each
        document as it was when removed, its ``metadata.removed`` saying why (``filter/gopher_short_doc: words=37 <
        50``). Written before the shard's commit marker, like its part."""
        from datapipe.io.jsonl import write_records_atomic

        for reason, docs in sorted(self.documents.items()):
            write_records_atomic(fs.join(out_dir, KEPT_DIR, *reason.split("/"), shard.records), docs)


def read_removed(out_dir: str) -> Any:
    """Every removed-document row of a stage, as one pyarrow table (shard order)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    urls = sorted(fs.glob(fs.join(out_dir, f"part-*{SUFFIX}")))
    # One thread, from an Arrow buffer: after a threaded read_table the interpreter's exit aborted one run in three
    # ("terminate called without an active exception", pyarrow 25, apache/arrow#34314); 0 in 150 runs so. The
    # side files are small: threads buy nothing here.
    tables = [pq.read_table(pa.BufferReader(fs.read_bytes(u)), use_threads=False) for u in urls]
    return pa.concat_tables(tables) if tables else removed_schema().empty_table()
