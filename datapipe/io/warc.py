"""WARC and WET reading with FastWARC that survives damaged files.

FastWARC stops at the first bad record header or corrupt gzip member, and returns a record cut short by a truncated
member without complaint. This reader therefore:

- compares the payload bytes read with the record's length and counts a short record as
  ``unusable["read/truncated_record"]`` instead of passing half a page on;
- after an error (or an early stop), searches forward for the next record start (a gzip or LZ4 member, or a
  ``WARC/1.x`` line in an uncompressed file), counts the unreadable stretch as ``not_records["warc/corrupt_region"]``
  and goes on from there, so one bad spot costs the records in it, not the rest of the file.

Yielded records are HTTP ``response`` records with a 2xx status and an HTML content type (as ``html`` bytes plus
the declared charset) and WET ``conversion`` records (as ``text``); only these are documents (``docs_in``). Every
other record is counted under ``not_records``: ``warc/<type>`` for other record types, ``warc/not_html`` and
``warc/http_not_ok`` for responses that hold no page. A response cut short counts as a document removed as
``read/truncated_record``.

Crawlers store the body as the server sent it, so a page may still carry its HTTP ``Content-Encoding`` (gzip,
deflate, br, zstd): it is decoded here, since its compressed bytes would otherwise be "extracted" as text. A
compressed body that cannot be decoded (corrupt, cut short by the server) removes the document as
``read/bad_content_encoding``.
"""

from __future__ import annotations

import itertools
import logging
import zlib
from collections.abc import Callable, Iterator
from typing import IO

import zstandard
from fastwarc.warc import ArchiveIterator, WarcRecordType

from datapipe.errors import InputError
from datapipe.io import fs
from datapipe.io.http import TooLarge, Truncated, dechunk, undo_coding
from datapipe.io.shards import Shard
from datapipe.io.tally import ReadTally

log = logging.getLogger(__name__)

HTML_TYPES = ("text/html", "application/xhtml+xml")
GZIP_MAGIC = b"\x1f\x8b\x08"
LZ4_MAGIC = b"\x04\x22\x4d\x18"
SCAN_CHUNK = 1 << 20
HTTP_HEAD = 32 << 10  # what is read of a record too large to read whole: enough for its HTTP header
UNLIMITED = 1 << 62


def _kind(head: bytes) -> str:
    if head.startswith(GZIP_MAGIC[:2]):
        return "gzip"
    if head.startswith(LZ4_MAGIC):
        return "lz4"
    return "plain"


def check_start(url: str, head: bytes) -> None:
    """Raise :class:`InputError` unless ``head``, a file's first bytes, starts like a WARC file: a ``WARC/1.x``
    line, plain or in a gzip member (LZ4 frames are not looked into). Damage further on is the reader's to count."""
    data, kind = head, _kind(head)
    if kind == "lz4":
        return
    if kind == "gzip":
        try:
            data = zlib.decompressobj(wbits=31).decompress(head, 64)
        except zlib.error:
            data = b""
    if not data.lstrip(b"\r\n").startswith(b"WARC/"):
        raise InputError(url, f"not a WARC file: it does not start with a WARC record ({data[:20]!r})")


def _next_start(f: IO[bytes], pos: int, kind: str) -> int | None:
    """Offset of the next plausible record start at or after ``pos``, or None at the end of the file.

    In a plain file a ``WARC/1.`` line is taken wherever it starts, not only after a newline: garbage between two
    records need not end in one, and the record after it would be missed. A false start (those bytes inside a
    block) costs nothing: the reader fails there and searches on from the byte after it. Reads ``SCAN_CHUNK``
    at a time, never the whole file."""
    pattern = {"gzip": GZIP_MAGIC, "lz4": LZ4_MAGIC, "plain": b"WARC/1."}[kind]
    f.seek(pos)
    carry = b""
    base = pos
    while True:
        chunk = f.read(SCAN_CHUNK)
        if not chunk:
            return None
        buf = carry + chunk
        i = buf.find(pattern)
        if i >= 0:
            return base - len(carry) + i
        carry = buf[-(len(pattern) - 1) :]
        base += len(chunk)


def _member_end(f: IO[bytes], pos: int) -> int | None:
    """Offset just past the gzip member at ``pos``, or None when no whole member starts there (a record inside a
    member of several records, a member cut short or corrupt).

    FastWARC ends a pass without an error when the bytes after the last member are too few to be one (a stray
    byte, a member cut inside its header): this is what finds them, so that they are counted, not passed over.
    The member is inflated a piece at a time and its output dropped: memory stays bounded however large it is."""
    f.seek(pos)
    d = zlib.decompressobj(wbits=31)
    try:
        while data := f.read(1 << 16):
            while data:
                d.decompress(data, 1 << 16)
                if d.eof:  # what was fed last ends with the bytes after the member
                    return f.tell() - len(d.unused_data)
                data = d.unconsumed_tail
    except zlib.error:
        pass
    return None


def _inflated(f: IO[bytes], pos: int, kind: str) -> Iterator[bytes]:
    """The bytes of the file from ``pos`` on (of the gzip member there), in pieces of at most 64 KiB."""
    f.seek(pos)
    if kind == "plain":
        while piece := f.read(1 << 16):
            yield piece
        return
    d = zlib.decompressobj(wbits=31)
    while not d.eof and (data := f.read(1 << 16)):
        while data and not d.eof:
            yield d.decompress(data, 1 << 16)
            data = d.unconsumed_tail


def _ends_cleanly(f: IO[bytes], pos: int, kind: str, length: int) -> bool:
    """Whether the record at ``pos``, whose ``Content-Length`` is ``length``, ends there: its block is followed by
    the CRLF CRLF that closes a record. False when the length is too small (the rest of the block follows it, and
    the reader had to search for the next record). Used only when a pass over the file stopped after that record."""
    if kind == "lz4":
        return True
    got = b""
    pieces = _inflated(f, pos, kind)
    for piece in pieces:
        got += piece
        if b"\r\n\r\n" in got or len(got) > HTTP_HEAD:
            break
    end = got.find(b"\r\n\r\n")  # the end of the WARC header block
    if end < 0:
        return True  # no header block to measure against: nothing to say
    closing = end + 4 + length  # offset of the record's closing CRLF CRLF
    buf, base = got, 0  # buf holds the bytes from offset base on
    while base + len(buf) < closing + 4:
        if base + len(buf) <= closing:  # all of it lies before the closing bytes: not kept
            base, buf = base + len(buf), b""
        piece = next(pieces, b"")
        if not piece:
            return True  # the file ends inside the record: counted as cut short when it was read
        buf += piece
    return buf[closing - base : closing - base + 4] == b"\r\n\r\n"


def _decode_content(body: bytes, content_encoding: str | None, limit: int) -> bytes | None:
    """The body without its HTTP content codings (undone last first), or None when its compressed data is corrupt;
    :class:`TooLarge` past ``limit``.

    A body that does not decode but starts with markup was stored decoded under the original header (some crawlers
    do that): it is used as it is."""
    for coding in reversed([c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]):
        try:
            body = undo_coding(body, coding, limit)
        except (zlib.error, zstandard.ZstdError, OSError):
            if body.lstrip()[:1] != b"<":
                return None
    if len(body) > limit:
        raise TooLarge(f"over {limit} bytes")
    return body


def _framed(body: bytes, headers, limit: int) -> tuple[bytes, bool]:
    """The body within its HTTP framing: chunks joined (``Transfer-Encoding: chunked``), else checked against
    ``Content-Length``; and whether the body is longer than its ``Content-Length``. Raises :class:`Truncated` for
    a body shorter than its framing says.

    A longer body is kept whole, and noted: crawlers that store the body decoded keep the header of the encoded
    one (the page is all there), while cutting at the header would drop the end of every such page."""
    if "chunked" in (headers.get("Transfer-Encoding") or "").lower():
        return dechunk(body, limit), False
    declared = (headers.get("Content-Length") or "").strip()
    if declared.isdigit() and len(body) < int(declared):
        raise Truncated(f"{len(body)} of {declared} bytes")
    return body, declared.isdigit() and len(body) > int(declared)


def _meta(record) -> dict:
    h = record.headers
    return {
        "url": h.get("WARC-Target-URI", ""),
        "warc_record_id": h.get("WARC-Record-ID", ""),
        "warc_date": h.get("WARC-Date", ""),
    }


def _read_payload(record, tally: ReadTally, counted: bool = True) -> bytes:
    """The record's payload. A read error counts the record as a document removed as truncated (counting it in
    first unless the caller already has), then re-raises so that the reader resynchronizes."""
    try:
        return record.reader.read()
    except OSError:
        if not counted:
            tally.records += 1
        tally.unusable_record("read/truncated_record")
        raise


def _cut_short(shard: Shard, record, got: int, expected: int) -> None:
    """Damage is named on the console as well as counted: a record the file ends inside (a truncated member)."""
    log.warning(
        "%s: the record at offset %d ends after %d of its %d bytes (a truncated file?); removed",
        shard.url,
        record.stream_pos,
        got,
        expected,
    )


def _not_a_page(record) -> str | None:
    """Why a response with a parsed HTTP header holds no page (``warc/http_not_ok``, ``warc/not_html``), or None."""
    status = record.http_headers.status_code if record.http_headers is not None else None
    if status is not None and not 200 <= status < 300:
        return "warc/http_not_ok"  # redirects, errors: no page to read
    if not (record.http_content_type or "").lower().startswith(HTML_TYPES):
        return "warc/not_html"  # images, scripts, style sheets
    return None


def read_warc(
    shard: Shard,
    source: str,
    tally: ReadTally,
    max_html_bytes: int = UNLIMITED,
    max_text_bytes: int = UNLIMITED,
) -> Iterator[dict]:
    """Documents of a WARC or WET file: HTML responses (``max_html_bytes``: the most HTML a page may have once its
    framing and codings are undone) and WET conversions (``max_text_bytes``). A record over its cap is removed as
    ``read/too_large`` and never held whole: its HTTP header is read to know whether it is a page, the rest is
    skipped as it streams by.

    Three steps: the record step (:func:`_records`: the file's records, read through damage, and
    :func:`_is_document`: what is no document counted), the body step (:func:`_document`: size caps, the payload,
    the document with its charset) and, for a response, the HTTP step it calls (:func:`_http_page`: status and
    content type; :func:`_http_payload`: framing and content codings)."""
    ids = itertools.count()  # documents read whole (HTML responses, conversions), for stable ids

    def handle(record) -> dict | None:
        if not _is_document(record, tally):
            return None
        return _document(record, shard, source, tally, ids, max_html_bytes, max_text_bytes)

    yield from _records(shard, tally, handle)


# -- the record step: the file's records, read through damage, and the records that are no document -----------


def _records(shard: Shard, tally: ReadTally, handle: Callable[[object], dict | None]) -> Iterator[dict]:
    """What ``handle`` makes of each record of the file (a document, or None when it counted the record as
    something else), read through damage: after a read error (or a pass that stopped early) it searches on for the
    next record start and counts the stretch it skipped as ``warc/corrupt_region``. A document is yielded once the
    next record reads: a record the pass stops after may be longer than its ``Content-Length`` says, and is then
    removed as ``read/truncated_record``."""
    with fs.open_binary(shard.url) as f:
        tally.position = f.tell
        kind = _kind(f.read(4))
        start: int | None = 0
        pending = False  # a pass ended in an error and no later record has been read yet
        while start is not None:
            f.seek(start)
            last, got, failed = start, 0, False
            # the last document read is yielded once the next record reads: if the pass stops after it instead,
            # its Content-Length may have been too small (what follows is the rest of its block)
            held: dict | None = None
            held_length = 0  # its record's Content-Length
            try:
                for record in ArchiveIterator(f, parse_http=False):
                    if got == 0 and start > 0:
                        # records after a restart prove that the stretch before `start` was not readable
                        tally.not_a_record("warc/corrupt_region")
                        log.warning("%s: skipped an unreadable stretch before offset %d", shard.url, start)
                        pending = False
                    last = record.stream_pos
                    got += 1
                    if held is not None:
                        yield held
                    # the WARC Content-Length, taken first: handle() parses the HTTP header, after which
                    # content_length is the HTTP payload's, and a complete record would look longer than it says
                    held_length = record.content_length
                    held = handle(record)
            except OSError as e:  # corrupt compressed data or an unreadable header
                failed = True
                if got or start == 0:
                    log.warning("%s: read error after offset %d: %s", shard.url, last, e)
            if failed and (got or start == 0):
                pending = True
            # a pass that read records and ended without an error may still have stopped before the end of the
            # file: bytes after the last gzip member that FastWARC passes over are an unreadable stretch too
            tail = _member_end(f, last) if kind == "gzip" and got and not failed else None
            if tail is not None and f.seek(0, 2) > tail:
                pending = True
            start = _next_start(f, last + 1 if tail is None else tail, kind)
            if (
                held is not None
                and (failed or start is not None)
                and not _ends_cleanly(f, last, kind, held_length)
            ):
                log.warning(
                    "%s: the record at offset %d is longer than its Content-Length says; removed",
                    shard.url,
                    last,
                )
                tally.unusable_record("read/truncated_record")
            elif held is not None:
                yield held
        if pending:
            tally.not_a_record("warc/corrupt_region")
            log.warning("%s: the rest of the file could not be read", shard.url)


def _is_document(record, tally: ReadTally) -> bool:
    """Whether a record is a document (an HTTP response or a WET conversion) with a whole WARC header; the others
    are counted here: a header cut off (``read/truncated_record`` for a document, ``warc/truncated_header``
    otherwise) and every other record type (``warc/<type>``)."""
    rtype = record.record_type
    is_doc = rtype in (WarcRecordType.response, WarcRecordType.conversion)
    if record.headers.get("Content-Length") is None:  # the header block itself was cut off
        if is_doc:
            tally.records += 1
            tally.unusable_record("read/truncated_record")
        else:
            tally.not_a_record("warc/truncated_header")
        return False
    if not is_doc:
        tally.not_a_record(f"warc/{str(rtype).split('.')[-1]}")
        return False
    return True


# -- the body step: size caps, the payload read whole, the document -----------------------------------------------


def _document(
    record,
    shard: Shard,
    source: str,
    tally: ReadTally,
    ids: Iterator[int],
    max_html_bytes: int,
    max_text_bytes: int,
) -> dict | None:
    """A document record (:func:`_is_document`) as a document, or None when it is counted as removed or as no page:
    one over its cap is skipped unread (:func:`_too_large`), a WET conversion is its text, an HTTP response its
    page. ``ids`` numbers the documents read whole."""
    conversion = record.record_type == WarcRecordType.conversion
    if record.content_length > (max_text_bytes if conversion else max_html_bytes + HTTP_HEAD):
        _too_large(record, tally)
        return None
    if conversion:
        return _conversion(record, shard, source, tally, next(ids))
    return _response(record, shard, source, tally, ids, max_html_bytes)


def _too_large(record, tally: ReadTally) -> None:
    """Count a record over its cap without reading it: skip its block, then see from the HTTP header that was read
    first whether it is a page (a document removed as ``read/too_large``) or not (a non-record, as when read
    whole)."""
    tally.bytes += record.content_length
    if record.record_type == WarcRecordType.conversion:
        record.consume()
        tally.records += 1
        tally.unusable_record("read/too_large")
        return
    head = record.reader.read(HTTP_HEAD)
    record.consume()
    if not _http_page(record, head, tally):
        return
    tally.records += 1
    tally.unusable_record("read/too_large")


def _conversion(record, shard: Shard, source: str, tally: ReadTally, i: int) -> dict | None:
    """A WET conversion record as the ``i``-th document (its text decoded as UTF-8, invalid bytes replaced), or
    None when it is cut short (removed as ``read/truncated_record``)."""
    expected = record.content_length
    tally.records += 1
    body = _read_payload(record, tally)
    tally.bytes += len(body)
    if len(body) < expected:
        _cut_short(shard, record, len(body), expected)
        tally.unusable_record("read/truncated_record")
        return None
    meta = _meta(record)
    meta["content_type"] = record.headers.get("Content-Type", "text/plain")
    return {
        **shard.names(i, meta["warc_record_id"]),
        "text": body.decode("utf-8", errors="replace"),
        "source": source,
        "metadata": meta,
    }


def _response(
    record, shard: Shard, source: str, tally: ReadTally, ids: Iterator[int], max_html_bytes: int
) -> dict | None:
    """An HTTP response record as a document (its HTML bytes and declared charset), numbered from ``ids`` once it
    is known to be a page; None when it is cut short, no page (:func:`_http_page`) or its body unusable."""
    # the WARC Content-Length, taken before the HTTP header is parsed: after it, content_length is the payload's
    expected = record.content_length
    # read the whole block first: a record cut short must count as truncated, whatever part was lost
    block = _read_payload(record, tally, counted=False)
    tally.bytes += len(block)
    if len(block) < expected:
        _cut_short(shard, record, len(block), expected)
        tally.records += 1
        tally.unusable_record("read/truncated_record")
        return None
    if not _http_page(record, block, tally):
        return None
    i = next(ids)
    tally.records += 1
    if record.headers.get("WARC-Truncated"):  # the crawler stopped reading the body (a size or time cap)
        tally.unusable_record("read/truncated_record")
        return None
    payload = _http_payload(record, tally, max_html_bytes)
    if payload is None:
        return None
    meta = _meta(record)
    meta["content_type"] = (record.http_content_type or "").lower()
    return {
        **shard.names(i, meta["warc_record_id"]),
        "html": payload,
        "charset": record.http_charset,
        "source": source,
        "metadata": meta,
    }


# -- the HTTP step: status, content type, framing and content codings -----------------------------------------------


def _http_page(record, content: bytes, tally: ReadTally) -> bool:
    """Whether a response whose block (or its first :data:`HTTP_HEAD` bytes) is ``content`` holds a page: its HTTP
    header parses (else ``warc/bad_http_header``), its status is 2xx and its content type HTML (else
    ``warc/http_not_ok``, ``warc/not_html``: :func:`_not_a_page`). What is no page is counted as a non-record."""
    record.set_bytes_content(content)
    try:
        record.parse_http()
    except Exception:  # a response whose HTTP header block is broken
        tally.not_a_record("warc/bad_http_header")
        return False
    why = _not_a_page(record)
    if why is not None:
        tally.not_a_record(why)
        return False
    return True


def _http_payload(record, tally: ReadTally, max_html_bytes: int) -> bytes | None:
    """A page's HTML bytes: its HTTP body within its framing (:func:`_framed`), its content codings undone
    (:func:`_decode_content`); None when the body is cut short (``read/truncated_record``), over
    ``max_html_bytes`` (``read/too_large``) or its compressed data is corrupt (``read/bad_content_encoding``). A
    body longer than its ``Content-Length`` is kept, and noted."""
    headers = record.http_headers
    try:
        body, longer = _framed(record.reader.read(), headers, max_html_bytes)
        payload = _decode_content(body, headers.get("Content-Encoding"), max_html_bytes)
    except Truncated:
        tally.unusable_record("read/truncated_record")
        return None
    except TooLarge:
        tally.unusable_record("read/too_large")
        return None
    if payload is None:
        tally.unusable_record("read/bad_content_encoding")
        return None
    if longer:
        tally.notes["read/body_longer_than_content_length"] += 1
    return payload
