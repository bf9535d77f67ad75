"""Partitioned record files: the disk-backed shuffle of the global phases.

A writer (one task: a shard's keys, a bucket's pairs) sorts its fixed-width records by a partition number and writes
them as one file; a reader (task ``p`` of the next phase) reads partition ``p`` of every such file and nothing
else. This is the shuffle of MapReduce on files, as datatrove's MinHash buckets do it, so no process ever holds
more than one partition of one phase, whatever the corpus size: memory is set by the partition count, which the
caller sizes from the input.

Layout (little-endian)::

    magic  b"DPPART1\\n"                       8 bytes
    parts  uint64                               8 bytes
    counts uint64[parts]                        records in each partition
    records                                     partition 0's, then 1's, ...; each ``dtype.itemsize`` bytes

The record dtype is the caller's (a numpy structured dtype, fixed per file kind) and is not stored: a file is only
read by the phase that knows what wrote it. Files are written atomically (``fs.write_bytes_atomic``), so a reader
sees a whole file or none, and a killed task's rerun rewrites the same bytes.
"""

from __future__ import annotations

from typing import IO

import numpy as np

from datapipe.io import fs

MAGIC = b"DPPART1\n"
_HEAD = len(MAGIC) + 8


def write_partitioned(url: str, records: np.ndarray, partition: np.ndarray, parts: int) -> list[int]:
    """Write ``records`` grouped by ``partition`` (one number in ``[0, parts)`` per record; records keep their
    order within a partition). Returns the count per partition."""
    if len(records) != len(partition):
        raise ValueError(f"{url}: {len(records)} records but {len(partition)} partition numbers")
    partition = np.asarray(partition, dtype=np.int64)
    if len(partition) and (partition.min() < 0 or partition.max() >= parts):
        raise ValueError(f"{url}: a partition number outside [0, {parts})")
    order = np.argsort(partition, kind="stable")
    counts = np.bincount(partition, minlength=parts).astype("<u8")
    body = np.ascontiguousarray(records[order]).tobytes()
    fs.write_bytes_atomic(url, MAGIC + np.uint64(parts).astype("<u8").tobytes() + counts.tobytes() + body)
    return [int(c) for c in counts]


def _open(url: str) -> IO[bytes]:
    """A local file with the plain ``open`` (fsspec's wrapper costs ~3x per open, and a reader opens one file per
    writer), anything else through fsspec."""
    return fs.open_binary(url)


def _partition_bytes(url: str, itemsize: int, p: int) -> bytes:
    with _open(url) as f:
        head = f.read(_HEAD)
        if head[: len(MAGIC)] != MAGIC:
            raise ValueError(f"{url}: not a partitioned record file")
        parts = int(np.frombuffer(head[len(MAGIC) :], dtype="<u8")[0])
        if not 0 <= p < parts:
            raise ValueError(f"{url}: partition {p} of a file with {parts}")
        counts = np.frombuffer(f.read(8 * parts), dtype="<u8").astype(np.int64)
        start = int(counts[:p].sum())
        f.seek(_HEAD + 8 * parts + start * itemsize)
        return f.read(int(counts[p]) * itemsize)


def read_partition(url: str, dtype: np.dtype, p: int) -> np.ndarray:
    """Partition ``p`` of one file (an empty array when it has none)."""
    return np.frombuffer(_partition_bytes(url, dtype.itemsize, p), dtype=dtype).copy()


def read_all(url: str, dtype: np.dtype) -> np.ndarray:
    """Every record of one file, partition by partition."""
    data = fs.read_bytes(url)
    if data[: len(MAGIC)] != MAGIC:
        raise ValueError(f"{url}: not a partitioned record file")
    parts = int(np.frombuffer(data[len(MAGIC) : _HEAD], dtype="<u8")[0])
    return np.frombuffer(data[_HEAD + 8 * parts :], dtype=dtype).copy()


def gather(urls: list[str], dtype: np.dtype, p: int) -> np.ndarray:
    """Partition ``p`` of every file, concatenated in the order given (joined as bytes: numpy's concatenation of
    structured arrays promotes their fields anew for every piece, which dominated with a thousand writers)."""
    data = b"".join(_partition_bytes(url, dtype.itemsize, p) for url in urls)
    return np.frombuffer(data, dtype=dtype).copy()
