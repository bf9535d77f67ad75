"""JSON Lines, plain or compressed (.gz, .zst), read and written through fsspec.

Part files written by stages are zstd-compressed JSONL written in one atomic put, so a reader never sees half a
part. Reading is streaming, one line at a time.

Compressed files are decoded here, step by step, rather than through ``GzipFile`` or python-zstandard's stream reader:
on a truncated or corrupt file those return nothing, lose what they had buffered, or stop early without an error.
Decoding step by step yields every line before the damage and then raises :class:`DamagedStream`, so a reader can
keep those lines and count what was lost.
"""

from __future__ import annotations

import codecs
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson
import zstandard

from datapipe.errors import InputError
from datapipe.io import fs

READ_CHUNK = 1 << 14  # compressed bytes read at once: bounds the memory of a step and what damage costs
ZSTD_STEP = 1 << 10  # compressed zstd bytes decoded per step: at most ~32 MiB out
MAGIC = {"gzip": b"\x1f\x8b", "zstd": b"\x28\xb5\x2f\xfd"}


def compression_of(url: str) -> str | None:
    if url.endswith(".zst") or url.endswith(".zstd"):
        return "zstd"
    if url.endswith(".gz"):
        return "gzip"
    return None


def _skippable(data: bytes) -> bool:
    """A zstd skippable frame starts here (magic 0x184D2A50-5F: metadata some writers put before or between
    frames)."""
    return len(data) >= 4 and 0x50 <= data[0] <= 0x5F and data[1:4] == b"\x2a\x4d\x18"


def check_magic(url: str, head: bytes) -> None:
    """Raise :class:`InputError` when a file named as compressed does not start like it (``head``: its first bytes)."""
    compression = compression_of(url)
    if compression == "zstd" and _skippable(head):
        return
    if compression is not None and head and not head.startswith(MAGIC[compression]):
        raise InputError(url, f"not {compression} data, as its name says (it starts with {head[:8]!r})")


class DamagedStream(InputError):
    """A compressed file that ends early or holds corrupt data after its first lines.

    Raised after every complete line before the damage was yielded; ``partial`` holds the start of the line the
    damage cut short (empty when the damage fell between lines).
    """

    def __init__(self, file: str, message: str, partial: bytes) -> None:
        super().__init__(file, message)
        self.partial = partial


class _Damage(Exception):
    """Internal: the decompressed stream cannot go on (why, in words)."""


def _decoder(compression: str):
    if compression == "gzip":
        return zlib.decompressobj(wbits=31)  # 31: a gzip header and trailer around deflate data
    return zstandard.ZstdDecompressor().decompressobj()


def _decompressed(url: str, f, compression: str | None) -> Iterator[bytes]:
    """The file's bytes, decompressed member after member (gzip) or frame after frame (zstd).

    A file that does not start like its compression is an :class:`InputError` (nothing in it can be read); damage
    after the start raises :class:`_Damage` once everything before it has been yielded.
    """
    if compression is None:
        while chunk := f.read(1 << 20):
            yield chunk
        return
    magic = MAGIC[compression]
    data = f.read(READ_CHUNK)
    if not data:
        return  # an empty file holds no lines
    check_magic(url, data)
    offset = 0  # compressed bytes consumed before `data`
    # zstd is fed in small steps: a step's output is then bounded (a zstd block of 128 KiB can come from 4 bytes;
    # deflate's ratio is at most ~1000)
    step = ZSTD_STEP if compression == "zstd" else READ_CHUNK
    while data:
        if compression == "zstd" and _skippable(data):  # skip it: its size is in its header
            while len(data) < 8 and (more := f.read(READ_CHUNK)):
                data += more
            skip = 8 + int.from_bytes(data[4:8], "little")
            need = skip - len(data)  # what is left of it past what was read (read and dropped, never held)
            while need > 0:
                more = f.read(min(need, 1 << 20))
                if not more:
                    raise _Damage(f"a zstd skippable frame at byte {offset} runs past the end of the file")
                need -= len(more)
            offset += skip
            data = data[skip:] if need < 0 else f.read(READ_CHUNK)
            continue
        decoder = _decoder(compression)
        rest = b""
        while not decoder.eof:
            for i in range(0, len(data), step):
                try:
                    out = decoder.decompress(data[i : i + step])
                except (zlib.error, zstandard.ZstdError) as e:
                    raise _Damage(f"corrupt {compression} data after byte {offset + i}: {e}") from None
                if out:
                    yield out
                if decoder.eof:
                    rest = decoder.unused_data + data[i + step :]
                    break
            if decoder.eof:
                break
            offset += len(data)
            data = f.read(READ_CHUNK)
            if not data:
                raise _Damage(f"the {compression} data ends early, at byte {offset} (a truncated file?)")
        # a member or frame ended: another may follow, after the zero padding some writers add
        offset += len(data) - len(rest)
        data = rest.lstrip(b"\0")
        while len(data) < len(magic) and (more := f.read(READ_CHUNK)):
            data = (data + more).lstrip(b"\0")
        if data and not data.startswith(magic) and not (compression == "zstd" and _skippable(data)):
            raise _Damage(f"unreadable data after the {compression} data that ends at byte {offset}")


def _as_utf8(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The stream without a UTF-8 byte order mark, and a UTF-16 one (its BOM says which) as UTF-8: a file saved
    by a Windows editor is JSON Lines all the same."""
    head = b""
    for chunk in chunks:
        head += chunk
        if len(head) >= 3:
            break
    if head.startswith(codecs.BOM_UTF8):
        yield head[3:]
        yield from chunks
    elif head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        decoder = codecs.getincrementaldecoder("utf-16")("replace")
        yield decoder.decode(head).encode("utf-8")
        for chunk in chunks:
            yield decoder.decode(chunk).encode("utf-8")
        yield decoder.decode(b"", final=True).encode("utf-8")
    else:
        yield head
        yield from chunks


def iter_lines(
    url: str, max_line: int | None = None, opened: Callable[[Any], None] | None = None
) -> Iterator[tuple[int, bytes | None]]:
    """Yield ``(line_number, raw_line)`` (1-based, without the newline); blank lines are skipped. A line longer
    than ``max_line`` bytes is yielded as ``(line_number, None)`` and never held whole: once it passes the cap,
    its bytes are dropped as they are decoded, up to its newline.

    Raises :class:`DamagedStream` (after the last good line) when a compressed file is truncated or corrupt.
    ``opened`` is called with the file once open (a reader that reports how far it has read keeps it).
    """
    compression = compression_of(url)
    cap = max_line if max_line is not None else 1 << 62
    with fs.open_binary(url) as f:
        if opened is not None:
            opened(f)
        n = 0
        pending: list[bytes] = []  # the start of a line that continues in the next chunk
        held = 0  # bytes in pending
        over = False  # the current line passed the cap: its bytes are being dropped
        try:
            for chunk in _as_utf8(_decompressed(url, f, compression)):
                parts = chunk.split(b"\n")
                if len(parts) == 1:
                    if not over:
                        pending.append(chunk)
                        held += len(chunk)
                        if held > cap:
                            over, pending, held = True, [], 0
                    continue
                first = parts[0]
                if over or held + len(first) > cap:
                    n += 1
                    yield n, None
                    parts = parts[1:]
                else:
                    pending.append(first)
                    parts[0] = b"".join(pending)
                over, pending, held = False, [], 0
                last = parts.pop()
                for line in parts:
                    n += 1
                    if len(line) > cap:
                        yield n, None
                        continue
                    line = line.rstrip(b"\r")
                    if line.strip():
                        yield n, line
                if last:
                    if len(last) > cap:
                        over = True
                    else:
                        pending, held = [last], len(last)
        except _Damage as e:
            raise DamagedStream(url, str(e), b"".join(pending)) from None
        if over:
            yield n + 1, None
            return
        line = b"".join(pending).rstrip(b"\r")
        if line.strip():  # the last line, without a newline
            yield n + 1, line


def read_records(url: str) -> Iterator[dict[str, Any]]:
    """Parsed records of a JSONL file that datapipe itself wrote (no per-line error handling needed)."""
    for _, line in iter_lines(url):
        assert line is not None  # no cap: every line is whole
        yield orjson.loads(line)


def encode_records(records: Iterable[dict[str, object]]) -> bytes:
    """One JSON line per record. orjson writes each line's newline itself (``OPT_APPEND_NEWLINE``): the same bytes
    as ``dumps(r) + b"\\n"`` without copying every document's JSON once more, which was 0.10 of the 0.15-0.20 s
    the e2e build's 32 parts took to encode (2026-12-07, three runs over the same records)."""
    return b"".join([orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in records])


def write_records_atomic(url: str, records: Iterable[dict[str, object]], *, level: int = 3) -> int:
    """Write records as zstd JSONL in one atomic write; returns the compressed size.

    The zstd frame carries its content size and checksum, so a truncated part fails loudly when read.
    """
    payload = encode_records(records)
    compressed = zstandard.ZstdCompressor(level=level, write_checksum=True).compress(payload)
    fs.write_bytes_atomic(url, compressed)
    return len(compressed)
