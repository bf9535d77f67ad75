"""Read one input shard into Dolma-style records, counting what is not a document or cannot be used.

Readers count their own decisions in the shard's :class:`StageStats`: every record they yield is one
``docs_in``; a record they drop is ``docs_in`` plus ``removed[reason]``; a WARC record that is no document at all
(request, warcinfo, metadata, revisit) is ``skipped[reason]``. File-level problems (wrong column, unreadable file)
raise :class:`InputError` naming the file.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import fsspec
import orjson
import pyarrow.parquet as pq

from datapipe.errors import InputError
from datapipe.io.jsonl import iter_lines
from datapipe.io.shards import Shard
from datapipe.io.warc import read_warc
from datapipe.stats import StageStats

log = logging.getLogger(__name__)

_SCALARS = (str, int, float, bool)


def read_jsonl(
    shard: Shard, source: str, text_field: str, id_field: str, stats: StageStats
) -> Iterator[dict]:
    for line_no, line in iter_lines(shard.url):
        stats.docs_in += 1
        stats.bytes_in += len(line) + 1
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            log.warning("%s: line %d: not valid JSON (%s); removed", shard.url, line_no, e)
            stats.remove("read/invalid_json")
            continue
        if not isinstance(rec, dict):
            stats.remove("read/not_an_object")
            continue
        text = rec.get(text_field)
        if text is None:
            log.warning("%s: line %d: no field %r; removed", shard.url, line_no, text_field)
            stats.remove("read/missing_text")
            continue
        if not isinstance(text, str):
            stats.remove("read/text_not_string")
            continue
        meta: dict[str, Any] = dict(rec["metadata"]) if isinstance(rec.get("metadata"), dict) else {}
        for k, v in rec.items():
            if k not in (text_field, id_field, "metadata", "source") and isinstance(v, _SCALARS):
                meta.setdefault(k, v)
        if id_field in rec:
            meta["source_id"] = rec[id_field]
        yield {"id": shard.doc_id(line_no - 1), "text": text, "source": source, "metadata": meta}


def read_parquet(
    shard: Shard, source: str, text_field: str, id_field: str, stats: StageStats
) -> Iterator[dict]:
    with fsspec.open(shard.url, "rb") as f:
        pf = pq.ParquetFile(f)
        names = pf.schema_arrow.names
        if text_field not in names:
            raise InputError(
                shard.url, f"no column {text_field!r} (columns: {', '.join(names)})", field=text_field
            )
        row = 0
        for batch in pf.iter_batches(batch_size=1024):
            cols = batch.to_pydict()
            texts = cols.pop(text_field)
            for j, text in enumerate(texts):
                stats.docs_in += 1
                i = row + j
                if text is None:
                    stats.remove("read/missing_text")
                    continue
                stats.bytes_in += len(text)
                meta = {k: v[j] for k, v in cols.items() if k != id_field and isinstance(v[j], _SCALARS)}
                if id_field in cols:
                    meta["source_id"] = cols[id_field][j]
                yield {"id": shard.doc_id(i), "text": text, "source": source, "metadata": meta}
            row += batch.num_rows


def read_shard(
    shard: Shard, source: str, fmt: str, text_field: str, id_field: str, stats: StageStats
) -> Iterator[dict]:
    if fmt == "jsonl":
        return read_jsonl(shard, source, text_field, id_field, stats)
    if fmt == "parquet":
        return read_parquet(shard, source, text_field, id_field, stats)
    if fmt == "warc":
        return read_warc(shard, source, stats)
    raise ValueError(f"unknown format {fmt!r}")
