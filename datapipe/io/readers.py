"""Read one input shard into Dolma-style records, counting what is not a document or cannot be used.

Readers count what they meet in a :class:`datapipe.io.tally.ReadTally`: every record is one of ``records``; a
record they cannot make a document of is also ``unusable[kind]``; a WARC record that is no document at all
(request, warcinfo, metadata, revisit) is ``not_records[kind]``. The extract stage turns these into its removals and
skips. File-level problems (wrong column, unreadable file)
raise :class:`InputError` naming the file; :func:`check_shard` finds the cheap ones (a file that is not Parquet or
not a WARC, or not compressed as named, a missing text column) before any work starts.

Damage inside a file costs what it destroys, not the file: a compressed JSONL file cut short keeps its lines before
the cut (``not_records["read/corrupt_region"]``, the line cut in two ``unusable["read/truncated_record"]``), and an
unreadable Parquet row group removes its rows as ``read/corrupt_row_group``. A zero-byte file of any format is an
empty shard (``not_records["read/empty_file"]``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import orjson

from datapipe.errors import InputError
from datapipe.io import fs
from datapipe.io.html_files import check_html, read_html_files
from datapipe.io.jsonl import DamagedStream, check_magic, iter_lines
from datapipe.io.shards import Shard
from datapipe.io.tally import ReadTally
from datapipe.io.warc import UNLIMITED, check_start, read_warc

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

log = logging.getLogger(__name__)

_SCALARS = (str, int, float, bool)


def _arrow() -> tuple[Any, Any]:
    """pyarrow and its Parquet module, imported when a Parquet file is read rather than by every importer of the
    readers (the launcher checks each input with them): 66 ms here (2026-12-05) for a build that reads none. A
    build's workers import it before their first task anyway (:mod:`datapipe.orchestrate.warm`): they write Parquet."""
    import pyarrow
    import pyarrow.parquet

    return pyarrow, pyarrow.parquet


def _parquet_errors() -> tuple[type[BaseException], ...]:
    """What pyarrow raises on a damaged Parquet file (ArrowIOError is an OSError; invalid UTF-8 in a string column
    surfaces when the values are converted)."""
    return (_arrow()[0].ArrowException, OSError, UnicodeDecodeError)


def _loads_replacing(line: bytes) -> object:
    """The record on a line that orjson rejected, if the only fault was bytes that are not UTF-8, else None.

    Such bytes (a stray Latin-1 byte, a multi-byte character cut in two) are replaced by U+FFFD, as HTML decoding
    does, so that one bad byte does not lose a whole document.
    """
    try:
        line.decode("utf-8")
        return None  # valid UTF-8: the JSON itself is broken
    except UnicodeDecodeError:
        pass
    try:
        return orjson.loads(line.decode("utf-8", errors="replace"))
    except orjson.JSONDecodeError:
        return None


@dataclass(frozen=True)
class ReadRequest:
    """What one shard is read with: the source, its fields, the caps and, for a folder of HTML pages, the URL
    prefix. One value, so that a format's reader takes what it needs by name."""

    source: str
    text_field: str
    id_field: str
    tally: ReadTally
    max_record_bytes: int | None
    max_html_bytes: int | None
    url_prefix: str


def read_jsonl(shard: Shard, r: ReadRequest) -> Iterator[dict]:
    tally = r.tally
    try:
        yield from _jsonl_records(shard, r.source, r.text_field, r.id_field, tally, r.max_record_bytes)
    except DamagedStream as e:
        if e.partial.strip():  # the line the damage cut in two was a document
            tally.records += 1
            tally.bytes += len(e.partial)
            tally.unusable_record("read/truncated_record")
        tally.not_a_record("read/corrupt_region")
        log.warning("%s; the rest of the file could not be read", e)


def _jsonl_records(
    shard: Shard, source: str, text_field: str, id_field: str, tally: ReadTally, max_bytes: int | None
) -> Iterator[dict]:
    for line_no, line in iter_lines(
        shard.url, max_bytes, opened=lambda f: setattr(tally, "position", f.tell)
    ):
        tally.records += 1
        if line is None:
            log.warning("%s: line %d: longer than %d bytes; removed unread", shard.url, line_no, max_bytes)
            tally.unusable_record("read/too_large")
            continue
        tally.bytes += len(line) + 1
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            rec = _loads_replacing(line)
            if rec is None:
                log.warning("%s: line %d: not valid JSON (%s); removed", shard.url, line_no, e)
                tally.unusable_record("read/invalid_json")
                continue
            tally.notes["read/invalid_utf8_replaced"] += 1
        if not isinstance(rec, dict):
            tally.unusable_record("read/not_an_object")
            continue
        text = rec.get(text_field)
        if text is None:
            log.warning("%s: line %d: no field %r; removed", shard.url, line_no, text_field)
            tally.unusable_record("read/missing_text")
            continue
        if not isinstance(text, str):
            tally.unusable_record("read/text_not_string")
            continue
        meta: dict[str, object] = dict(rec["metadata"]) if isinstance(rec.get("metadata"), dict) else {}
        for k, v in rec.items():
            if k not in (text_field, id_field, "metadata", "source") and isinstance(v, _SCALARS):
                meta.setdefault(k, v)
        own = _id_value(rec.get(id_field))
        yield {**shard.names(line_no - 1, own), "text": text, "source": source, "metadata": meta}


def _id_value(v: object) -> str | None:
    """An id as text: bytes as hex, anything else (numbers, dates, decimals) as written; None for none. A Parquet
    id column may be of any type."""
    if v is None or isinstance(v, bool):
        return None
    return v.hex() if isinstance(v, bytes) else str(v)


def _is_text(t: pa.DataType) -> bool:
    pa = _arrow()[0]
    if pa.types.is_dictionary(t):
        t = t.value_type
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def open_parquet(url: str, f: object, text_field: str) -> pq.ParquetFile:
    """Open a Parquet file and check its text column; a file that is not Parquet, or lacks a string column named
    ``text_field``, is an :class:`InputError` naming the file (and the field)."""
    try:
        pf = _arrow()[1].ParquetFile(f)
        schema = pf.schema_arrow
    except _parquet_errors() as e:
        raise InputError(url, f"not a readable Parquet file ({e})") from None
    names = schema.names
    if text_field not in names:
        raise InputError(url, f"no column {text_field!r} (columns: {', '.join(names)})", field=text_field)
    t = schema.field(names.index(text_field)).type
    if not _is_text(t):
        raise InputError(url, f"column {text_field!r} holds {t}, not strings", field=text_field)
    return pf


def read_parquet(shard: Shard, r: ReadRequest) -> Iterator[dict]:
    source, text_field, id_field, tally = r.source, r.text_field, r.id_field, r.tally
    cap = r.max_record_bytes if r.max_record_bytes is not None else 1 << 62
    errors = _parquet_errors()
    with fs.open_binary(shard.url) as f:
        tally.position = f.tell
        pf = open_parquet(shard.url, f, text_field)
        row = 0
        for rg in range(pf.num_row_groups):
            done = 0
            try:
                for batch in pf.iter_batches(batch_size=1024, row_groups=[rg]):
                    cols = batch.to_pydict()
                    texts = cols.pop(text_field)
                    for j, text in enumerate(texts):
                        tally.records += 1
                        i = row + done + j
                        if text is None:
                            tally.unusable_record("read/missing_text")
                            continue
                        tally.bytes += len(text)
                        # UTF-8 takes 1-4 bytes a character: encode only when the length cannot tell
                        n = len(text)
                        if n > cap or (4 * n > cap and len(text.encode("utf-8", "surrogatepass")) > cap):
                            tally.unusable_record("read/too_large")
                            continue
                        meta = {
                            k: v[j] for k, v in cols.items() if k != id_field and isinstance(v[j], _SCALARS)
                        }
                        own = _id_value(cols[id_field][j]) if id_field in cols else None
                        yield {**shard.names(i, own), "text": text, "source": source, "metadata": meta}
                    done += batch.num_rows
            except errors as e:
                log.warning("%s: row group %d cannot be read (%s); its rows are removed", shard.url, rg, e)
            # rows the footer promises but the row group did not give (it failed part-way) are documents lost
            lost = max(0, pf.metadata.row_group(rg).num_rows - done)
            tally.records += lost
            if lost:
                tally.unusable_record("read/corrupt_row_group", lost)
            row += done + lost


SAMPLE_RECORDS = 100  # records a JSONL file's first look reads


def check_text_field(url: str, text_field: str) -> None:
    """Raise :class:`InputError` when most of a JSONL file's first records lack ``text_field``: the source names
    the wrong field, and reading on would make a component of nothing (each record removed as missing its text).
    The message shows the keys the records do have. A few records without it are the reader's to count."""
    n = missing = 0
    keys: dict[str, int] = {}
    try:
        for _, line in iter_lines(url, max_line=1 << 20):
            if line is None:
                continue
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(rec, dict):
                continue
            n += 1
            if text_field not in rec:
                missing += 1
                for k in rec:
                    keys[k] = keys.get(k, 0) + 1
            if n >= SAMPLE_RECORDS:
                break
    except DamagedStream:
        pass  # damage is counted where it is read
    if n and 2 * missing > n:
        common = sorted(keys, key=lambda k: -keys[k])[:12]
        raise InputError(
            url,
            f"{missing} of the first {n} records have no such field; their keys: {', '.join(common)}"
            " (set the source's text_field)",
            field=text_field,
        )


def _check_parquet(url: str, f: IO[bytes], text_field: str) -> None:
    open_parquet(url, f, text_field)


def _check_jsonl(url: str, f: IO[bytes], text_field: str) -> None:
    check_magic(url, f.read(8))
    check_text_field(url, text_field)


def _check_warc(url: str, f: IO[bytes], text_field: str) -> None:
    check_start(url, f.read(1 << 16))


def _parquet_rows(f: IO[bytes]) -> int:
    return int(_arrow()[1].ParquetFile(f).metadata.num_rows)


Reader = Callable[[Shard, ReadRequest], Iterator[dict]]


@dataclass(frozen=True)
class InputFormat:
    """One input format a source can name (``format:`` in a mixture). Every place that depends on the format reads
    it from this row: the build's first look at each input (:func:`check_shard`), the readers (:func:`read_shard`),
    what the extract stage's version hash covers and whether it runs the HTML extractor, and the dry run's
    estimate. A new format is a new row (and its name in ``schemas/mixture.schema.json``, which a test compares)."""

    name: str
    pages: bool  # records are web pages for the extractor (WARC responses), not text
    check: Callable[[str, IO[bytes], str], None]  # (url, the open file, text_field): raise InputError
    read: Reader
    rows: Callable[[IO[bytes]], int] | None = None  # the record count the file states (Parquet's footer)


FORMATS: dict[str, InputFormat] = {
    f.name: f
    for f in (
        InputFormat(
            "jsonl",
            False,
            _check_jsonl,
            read_jsonl,
        ),
        InputFormat(
            "parquet",
            False,
            _check_parquet,
            read_parquet,
            rows=_parquet_rows,
        ),
        InputFormat(
            "warc",
            True,
            _check_warc,
            lambda shard, r: read_warc(
                shard, r.source, r.tally, r.max_html_bytes or UNLIMITED, r.max_record_bytes or UNLIMITED
            ),
        ),
        InputFormat(
            "html",
            True,
            check_html,
            lambda shard, r: read_html_files(
                shard, r.source, r.tally, r.max_html_bytes or UNLIMITED, r.url_prefix
            ),
        ),
    )
}


def input_format(name: str) -> InputFormat:
    """The row of a format; the mixture schema has already refused any other name, so a miss is a bug."""
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r} (formats: {', '.join(FORMATS)})") from None


def check_shard(url: str, fmt: str, text_field: str) -> None:
    """Raise :class:`InputError` when a file cannot be read as ``fmt`` at all, from a cheap look at its start (or,
    for Parquet, its footer). Run on every input before any stage starts, such a file stops the build with one line
    naming it, instead of failing a worker part-way through a pipeline. Damage further into a file is left to the
    readers, which count what it costs."""
    row = input_format(fmt)
    if fs.size(url) == 0:
        return  # an empty shard
    with fs.open_binary(url) as f:
        row.check(url, f, text_field)


def read_shard(
    shard: Shard,
    source: str,
    fmt: str,
    text_field: str,
    id_field: str,
    tally: ReadTally,
    *,
    max_record_bytes: int | None = None,
    max_html_bytes: int | None = None,
    url_prefix: str = "",
) -> Iterator[dict]:
    """The shard's documents. A record over its cap is removed as ``read/too_large`` without being held whole
    (where the format allows: a JSONL line or a WARC record is dropped as it streams by; pyarrow hands a Parquet
    value over whole): ``max_html_bytes`` for a WARC response's page once decoded, ``max_record_bytes`` for every
    other record (a JSONL line, a Parquet text value, a WET conversion). None: no cap. ``url_prefix``: a folder of
    HTML pages' URLs (:mod:`datapipe.io.html_files`)."""
    row = input_format(fmt)
    if (
        not shard.members and fs.size(shard.url) == 0
    ):  # no records, whatever the format (pyarrow would call it not Parquet)
        log.warning("%s: empty file", shard.url)
        tally.not_a_record("read/empty_file")
        return iter(())
    return row.read(
        shard, ReadRequest(source, text_field, id_field, tally, max_record_bytes, max_html_bytes, url_prefix)
    )
