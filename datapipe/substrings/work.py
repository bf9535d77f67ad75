"""The work folder of exact-substring dedup: the text in document order, where every chunk lies, and the small
file helpers every unit uses (atomic commits, bounded reads, sorted record streams).

```
WORK/parts/part-NNNNN.bin        the UTF-8 of one part's documents, one after another (write_part)
WORK/parts/part-NNNNN.docs       where each document of the part starts, and the part's end (int64)
WORK/layout.json, docs.i64       the frozen layout (freeze): sizes, chunking, the earlier builds; every
                                 document's global start (int64, documents + 1)
WORK/chunks/chunk-NNNNN/         one chunk's sorted windows (steps.sort_chunk)
WORK/pairs/A--B/                 the windows two chunks share (steps.match_pair)
WORK/runs-KEEP/chunk-NNNNN.bin   the chunk's removed windows, in runs (steps.finish_chunk)
```

Every unit writes its files under a temporary name and renames them into place as its last act, so a unit is
done exactly when its final name exists: a killed run leaves at most a temporary folder, which the next attempt
removes, and resumes with identical bytes. Nothing is read through ``mmap``: a mapped file's pages count in the
process's resident memory, where bounded ``readinto``/``fromfile`` pieces leave them in the page cache only.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from datapipe.errors import DatapipeError

LAYOUT_VERSION = 1
PAD = 16  # zero bytes after a chunk's text: the 8-byte window comparisons read past a window's end
RUN = np.dtype([("start", "<i8"), ("count", "<i8"), ("copy", "<i8")])  # removed windows start..start+count-1
MATCH = np.dtype([("g", "<i4"), ("pos", "<i8")])  # a group of one chunk and where another chunk has its bytes
MULTI = np.dtype([("g", "<i4"), ("second", "<i4")])  # a group of two or more: its second earliest member


class SubstringsError(DatapipeError):
    """The work folder or an earlier build cannot be used as asked (names the folder and what is wrong)."""


def part_name(part: int) -> str:
    return f"part-{part:05d}"


def chunk_name(index: int) -> str:
    return f"chunk-{index:05d}"


def commit_dir(tmp: Path, final: Path) -> None:
    """Rename a finished temporary folder into place (atomic on one file system)."""
    os.replace(tmp, final)


def fresh_tmp(final: Path) -> Path:
    """A clean temporary folder beside ``final`` (what a killed attempt left there is removed)."""
    tmp = final.with_name(final.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    return tmp


def write_part(work: str | Path, part: int, texts: Iterable[str]) -> tuple[int, int]:
    """Write one part's documents (their UTF-8, in order) into the work folder; returns (documents, bytes).

    Parts are the engine's input shards: each is written by its own unit, and the build's document order is
    (part, position in the part). Lone surrogates pass through (``surrogatepass``) so any ``str`` round-trips.
    """
    folder = Path(work) / "parts"
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"{part_name(part)}.bin"
    tmp_bin = final.with_suffix(".bin.tmp")
    tmp_docs = final.with_suffix(".docs.tmp")
    starts = [0]
    with open(tmp_bin, "wb") as f:
        for text in texts:
            data = text.encode("utf-8", "surrogatepass")
            f.write(data)
            starts.append(starts[-1] + len(data))
    np.asarray(starts, dtype="<i8").tofile(tmp_docs)
    os.replace(tmp_docs, final.with_suffix(".docs"))
    os.replace(tmp_bin, final)  # last: the part is done when its .bin exists
    return len(starts) - 1, starts[-1]


@dataclass(frozen=True)
class Prior:
    """An earlier build's work folder whose text precedes this build's: windows present there are removed here,
    and nothing there changes. ``offset`` is its first byte's global position (negative: before this build's
    text) and ``first_doc`` its first document's global index (negative too)."""

    path: str
    total_bytes: int
    docs: int
    offset: int
    first_doc: int


@dataclass(frozen=True)
class ChunkRef:
    """One chunk: the window starts ``[base, base + owned)`` (global positions) and its text, the ``length``
    bytes from ``base`` (``owned + min_bytes - 1`` unless the text ends first), in folder ``work``'s parts
    (``local`` is ``base`` within that folder's text)."""

    name: str
    work: str
    index: int
    base: int
    local: int
    owned: int
    length: int


@dataclass(frozen=True)
class Layout:
    """The frozen geometry of a build: written once (``freeze``) after every part, read by every unit."""

    min_bytes: int
    chunk_bytes: int
    total_bytes: int
    part_bytes: tuple[int, ...]
    part_docs: tuple[int, ...]
    priors: tuple[Prior, ...]

    @property
    def docs(self) -> int:
        return sum(self.part_docs)

    @property
    def chunks(self) -> int:
        return -(-self.total_bytes // self.chunk_bytes) if self.total_bytes else 0

    def part_start(self, part: int) -> int:
        return sum(self.part_bytes[:part])

    def own_chunks(self, work: str | Path) -> list[ChunkRef]:
        return _chunk_refs(str(work), self.total_bytes, self.chunk_bytes, self.min_bytes, 0, "")

    def all_chunks(self, work: str | Path) -> list[ChunkRef]:
        """The earlier builds' chunks (in their order, before this build's), then this build's."""
        out: list[ChunkRef] = []
        for i, prior in enumerate(self.priors):
            theirs = read_layout(prior.path)
            out += _chunk_refs(
                prior.path, theirs.total_bytes, theirs.chunk_bytes, self.min_bytes, prior.offset, f"p{i}-"
            )
        return out + self.own_chunks(work)


def _chunk_refs(work: str, total: int, chunk_bytes: int, k: int, offset: int, prefix: str) -> list[ChunkRef]:
    refs = []
    for c in range(-(-total // chunk_bytes) if total else 0):
        local = c * chunk_bytes
        owned = min(chunk_bytes, total - local)
        length = min(owned + k - 1, total - local)
        refs.append(ChunkRef(prefix + chunk_name(c), work, c, offset + local, local, owned, length))
    return refs


def freeze(
    work: str | Path, parts: int, min_bytes: int, chunk_bytes: int, priors: Iterable[str | Path] = ()
) -> Layout:
    """Fix the layout once every part is written: sizes, chunking and the earlier builds (in order; each must
    have been built with the same ``min_bytes`` and have its chunks sorted). Idempotent: a finished layout is
    read back, and one that disagrees with the arguments is an error rather than silently reused."""
    work = Path(work)
    if (work / "layout.json").exists():
        layout = read_layout(work)
        if (layout.min_bytes, layout.chunk_bytes, len(layout.part_bytes)) != (min_bytes, chunk_bytes, parts):
            raise SubstringsError(
                f"{work}: the layout was frozen with other settings; use a fresh work folder"
            )
        return layout
    if min_bytes < 8 or chunk_bytes < min_bytes or chunk_bytes + min_bytes >= 2**31 - PAD:
        raise SubstringsError(f"{work}: min_bytes {min_bytes} and chunk_bytes {chunk_bytes} are out of range")
    sizes, counts, starts = [], [], [np.zeros(1, "<i8")]
    for p in range(parts):
        base = work / "parts" / part_name(p)
        if not base.with_suffix(".bin").exists():
            raise SubstringsError(f"{work}: {part_name(p)} was not written")
        offsets = np.fromfile(base.with_suffix(".docs"), dtype="<i8")
        sizes.append(int(offsets[-1]))
        counts.append(len(offsets) - 1)
        starts.append(offsets[1:] + sum(sizes[:-1]))
    total = sum(sizes)
    prior_refs: list[Prior] = []
    earlier = [Path(p) for p in priors]
    before_bytes = before_docs = 0
    infos = []
    for path in earlier:
        theirs = read_layout(path)
        if theirs.min_bytes != min_bytes:
            raise SubstringsError(f"{path}: built with min_bytes {theirs.min_bytes}, not {min_bytes}")
        for ref in theirs.own_chunks(path):
            if not (path / "chunks" / ref.name / "meta.json").exists():
                raise SubstringsError(f"{path}: {ref.name} is not sorted: that build did not finish")
        infos.append((path, theirs.total_bytes, theirs.docs))
        before_bytes += theirs.total_bytes
        before_docs += theirs.docs
    offset, first_doc = -before_bytes, -before_docs
    for path, nbytes, ndocs in infos:
        prior_refs.append(Prior(str(path), nbytes, ndocs, offset, first_doc))
        offset += nbytes
        first_doc += ndocs
    layout = Layout(min_bytes, chunk_bytes, total, tuple(sizes), tuple(counts), tuple(prior_refs))
    tmp = work / "docs.i64.tmp"
    np.concatenate(starts).astype("<i8").tofile(tmp)
    os.replace(tmp, work / "docs.i64")
    record = {
        "version": LAYOUT_VERSION,
        "min_bytes": min_bytes,
        "chunk_bytes": chunk_bytes,
        "total_bytes": total,
        "part_bytes": sizes,
        "part_docs": counts,
        "priors": [vars(p) for p in prior_refs],
    }
    tmp = work / "layout.json.tmp"
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp, work / "layout.json")
    return layout


def read_layout(work: str | Path) -> Layout:
    path = Path(work) / "layout.json"
    if not path.exists():
        raise SubstringsError(f"{work}: no layout.json (not a substrings work folder, or not frozen yet)")
    r = json.loads(path.read_text())
    if r.get("version") != LAYOUT_VERSION:
        raise SubstringsError(f"{path}: layout version {r.get('version')}, this code reads {LAYOUT_VERSION}")
    return Layout(
        r["min_bytes"],
        r["chunk_bytes"],
        r["total_bytes"],
        tuple(r["part_bytes"]),
        tuple(r["part_docs"]),
        tuple(Prior(**p) for p in r["priors"]),
    )


def read_text(work: str | Path, start: int, stop: int, out: np.ndarray) -> None:
    """Read the bytes ``[start, stop)`` of a work folder's text (positions within that folder) into ``out``,
    across part files, without mapping them."""
    layout = read_layout(work)
    filled = 0
    part_start = 0
    view = memoryview(out.data)
    for p, size in enumerate(layout.part_bytes):
        part_end = part_start + size
        lo, hi = max(start, part_start), min(stop, part_end)
        if lo < hi:
            with open(Path(work) / "parts" / f"{part_name(p)}.bin", "rb") as f:
                f.seek(lo - part_start)
                want = hi - lo
                got = f.readinto(view[filled : filled + want])
                if got != want:
                    raise SubstringsError(f"{work}: {part_name(p)} is shorter than its layout says")
                filled += want
        part_start = part_end
        if part_start >= stop:
            break


def chunk_text(ref: ChunkRef) -> tuple[np.ndarray, np.ndarray]:
    """A chunk's text, zero-padded (``PAD`` bytes and to a multiple of 8), as bytes and as 8-byte words."""
    size = (ref.length + PAD + 7) // 8 * 8
    buf = np.zeros(size, dtype=np.uint8)
    read_text(ref.work, ref.local, ref.local + ref.length, buf)
    return buf, buf.view(np.uint64)


def doc_starts(work: str | Path) -> np.ndarray:
    """Every document's global start and the text's end (int64)."""
    return np.fromfile(Path(work) / "docs.i64", dtype="<i8")


def read_rows(path: Path, dtype: np.dtype | type, start: int, count: int) -> np.ndarray:
    """Rows ``[start, start + count)`` of a raw record file, read (not mapped)."""
    dt = np.dtype(dtype)
    return np.fromfile(path, dtype=dt, count=count, offset=start * dt.itemsize)


def rows_in(path: Path, dtype: np.dtype | type) -> int:
    return path.stat().st_size // np.dtype(dtype).itemsize if path.exists() else 0


class SortedRows:
    """A record file sorted by one field, read forwards in bounded blocks: ``between(lo, hi)`` gives the records
    with ``lo <= key < hi`` for ranges that only move forwards (overlapping at their ends is fine)."""

    def __init__(self, path: Path, dtype: np.dtype, key: str, block: int = 1 << 18) -> None:
        self.path, self.dtype, self.key, self.block = path, dtype, key, block
        self.total = rows_in(path, dtype)
        self.next = 0
        self.buf = np.empty(0, dtype=dtype)

    def between(self, lo: int, hi: int) -> np.ndarray:
        self.buf = self.buf[np.searchsorted(self.buf[self.key], lo, "left") :]
        while self.next < self.total and (len(self.buf) == 0 or self.buf[self.key][-1] < hi):
            more = read_rows(self.path, self.dtype, self.next, min(self.block, self.total - self.next))
            self.next += len(more)
            more = more[np.searchsorted(more[self.key], lo, "left") :]
            self.buf = np.concatenate([self.buf, more]) if len(self.buf) else more
        keys = self.buf[self.key]
        return self.buf[: np.searchsorted(keys, hi, "left")]
