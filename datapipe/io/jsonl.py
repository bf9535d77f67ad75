"""JSON Lines, plain or compressed (.gz, .zst), read and written through fsspec.

Part files written by stages are zstd-compressed JSONL written in one atomic put, so a reader never sees half a
part. Reading is streaming, one line at a time.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import Any

import fsspec
import orjson
import zstandard

from datapipe.io import fs


def compression_of(url: str) -> str | None:
    if url.endswith(".zst") or url.endswith(".zstd"):
        return "zstd"
    if url.endswith(".gz"):
        return "gzip"
    return None


def iter_lines(url: str) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, raw_line)`` (1-based, without the newline); blank lines are skipped."""
    with fsspec.open(url, "rb", compression=compression_of(url)) as f:
        for n, line in enumerate(io.BufferedReader(f, buffer_size=1 << 20), start=1):
            line = line.rstrip(b"\r\n")
            if line.strip():
                yield n, line


def read_records(url: str) -> Iterator[dict[str, Any]]:
    """Parsed records of a JSONL file that datapipe itself wrote (no per-line error handling needed)."""
    for _, line in iter_lines(url):
        yield orjson.loads(line)


def encode_records(records: Iterable[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def write_records_atomic(url: str, records: Iterable[dict[str, Any]], *, level: int = 3) -> int:
    """Write records as zstd JSONL in one atomic write; returns the compressed size.

    The zstd frame carries its content size and checksum, so a truncated part fails loudly when read.
    """
    payload = encode_records(records)
    compressed = zstandard.ZstdCompressor(level=level, write_checksum=True).compress(payload)
    fs.write_bytes_atomic(url, compressed)
    return len(compressed)
