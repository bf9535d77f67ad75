"""Per-shard files the dedup stages write and read: shingle sets (for verification) and removal lists.

Ids: ``ids/part-NNNNN.json``, the ids of one input shard's documents in order, written when the shard is signed, so
that every file a user reads names a document by its input's id (as the part files and ``export-clusters`` do), not
by its position, without reading the shard's text again. (Folders written before kept them in the shingle files.)

Shingles: ``shingles/part-NNNNN.npz`` with ``hashes`` (all documents' sorted shingle hashes, concatenated) and
``offsets`` (document i's are ``hashes[offsets[i]:offsets[i+1]]``). The verification step reads them back by
document reference, keeping a few shards in memory, so pairs are verified without moving any text.

Edges (kept on request, for inspection): ``edges/part-SSSSS-BBBBB.json``, the verified edges ``[a, b, jaccard]``
whose smaller end is in block BBBBB of shard SSSSS (``datapipe.dedup.components.edge_block``). Components:
``components.json``, the size histogram and the largest components.

Removals: ``removals/part-NNNNN.json``: the decisions about one input shard, sorted by position, written once by the
global phase and read by that shard's filter pass: ``{"doc", "id", "reason", "kept", "kept_id"}`` for documents
(``kept``: the kept copy's ``[shard, position]``, a negative shard for an earlier build's, ``dedup.against``),
``{"doc", "id", "lines"}`` for paragraphs. The kept copy is always a document that survived: a copy that an earlier
build had itself removed is replaced by the one it was removed in favour of (:func:`survivors`).
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
from collections import OrderedDict
from typing import Any, NamedTuple

import numpy as np

from datapipe.dedup.components import chained_reason
from datapipe.errors import InputError
from datapipe.io import fs
from datapipe.io.shards import part_name


def shingles_url(stage_dir: str, shard_index: int) -> str:
    return fs.join(stage_dir, "shingles", part_name(shard_index) + ".npz")


def write_shingles(stage_dir: str, shard_index: int, sets: list[np.ndarray]) -> None:
    offsets = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sets], out=offsets[1:])
    hashes = np.concatenate(sets) if sets else np.zeros(0, dtype=np.uint64)
    buf = io.BytesIO()
    np.savez(buf, hashes=hashes.astype(np.uint64), offsets=offsets)
    fs.write_bytes_atomic(shingles_url(stage_dir, shard_index), buf.getvalue())


def ids_url(stage_dir: str, shard_index: int) -> str:
    return fs.join(stage_dir, "ids", part_name(shard_index) + ".json")


def write_ids(stage_dir: str, shard_index: int, ids: list[str]) -> None:
    fs.write_text_atomic(ids_url(stage_dir, shard_index), json.dumps(ids) + "\n")


def read_ids(stage_dir: str, shard_index: int) -> list[str] | None:
    """One shard's document ids in order (None where none were stored: a stage that signed nothing)."""
    url = ids_url(stage_dir, shard_index)
    if fs.exists(url):
        return list(json.loads(fs.read_text(url)))
    try:  # a folder written before the ids had a file of their own kept them beside the shingles
        with np.load(io.BytesIO(fs.read_bytes(shingles_url(stage_dir, shard_index)))) as z:
            return z["ids"].tolist() if "ids" in z.files else None
    except FileNotFoundError:
        return None


Ref = tuple[int, int]


def names(refs: set[Ref], stage_dir: str, earlier: tuple[tuple[str, int], ...] = ()) -> dict[Ref, str]:
    """Document ids by reference, reading one shard's ids at a time (a negative shard is an earlier build's,
    ``earlier[len(earlier) + shard]``); a document whose shard stored no ids is named by its reference."""
    wanted: dict[int, list[int]] = {}
    for shard, doc in refs:
        wanted.setdefault(shard, []).append(doc)
    found: dict[Ref, str] = {}
    for shard, docs in sorted(wanted.items()):
        ids = read_ids(*earlier[len(earlier) + shard]) if shard < 0 else read_ids(stage_dir, shard)
        for doc in docs:
            found[(shard, doc)] = (
                ids[doc] if ids is not None and doc < len(ids) else f"shard {shard} document {doc}"
            )
    return found


class ShingleStore:
    """Shingle sets by document reference, read a document at a time.

    ``np.savez`` stores its members uncompressed, so a shard's ``hashes`` array lies at a fixed offset in its file:
    the store reads each shard's offsets once (8 bytes a document) and then only the bytes of the documents asked
    for. Verification after a disk shuffle asks for documents of any shard in any order; loading whole shards
    (the previous design, 8 kept) re-read a shard's file for nearly every pair once the corpus had more shards
    than that. The last ``open_files`` shards keep their file open, and the documents read last stay in memory up
    to ``cache_bytes`` of hashes: a document is in many candidate pairs (the e2e build verifies 8,602 pairs among
    1,492 documents), and reading each pair's two sets from its file took 0.06-0.10 s of the phase's one task
    there, against 0.01 s with every set read once (2026-12-05)."""

    def __init__(
        self,
        stage_dir: str,
        open_files: int = 64,
        earlier: tuple[tuple[str, int], ...] = (),
        cache_bytes: int = 32 << 20,
    ) -> None:
        self.stage_dir = stage_dir
        self.open_files = open_files
        self.earlier = earlier  # shard k - K is shard earlier[k][1] of the stage folder earlier[k][0]
        self.cache_bytes = cache_bytes
        self._offsets: dict[int, tuple[np.ndarray, int]] = {}  # shard -> (offsets, byte offset of hashes)
        self._files: OrderedDict[int, Any] = OrderedDict()
        self._sets: OrderedDict[tuple[int, int], np.ndarray] = OrderedDict()  # least recently used first
        self._held = 0  # bytes of hashes in _sets

    def _file(self, shard: int) -> Any:
        f = self._files.get(shard)
        if f is None:
            if shard < 0:
                stage_dir, index = self.earlier[len(self.earlier) + shard]
                url = shingles_url(stage_dir, index)
            else:
                url = shingles_url(self.stage_dir, shard)
            f = fs.open_binary(url)
            self._files[shard] = f
            if len(self._files) > self.open_files:
                self._files.popitem(last=False)[1].close()
        else:
            self._files.move_to_end(shard)
        return f

    def _index(self, shard: int) -> tuple[np.ndarray, int]:
        got = self._offsets.get(shard)
        if got is None:
            f = self._file(shard)
            with zipfile.ZipFile(f) as z:
                with z.open("offsets.npy") as member:
                    offsets = np.lib.format.read_array(member)
                got = (offsets, _stored_array_start(f, z.getinfo("hashes.npy")))
            self._offsets[shard] = got
        return got

    def get(self, ref: tuple[int, int]) -> np.ndarray:
        got = self._sets.get(ref)
        if got is not None:
            self._sets.move_to_end(ref)
            return got
        offsets, start = self._index(ref[0])
        lo, hi = int(offsets[ref[1]]), int(offsets[ref[1] + 1])
        f = self._file(ref[0])
        f.seek(start + 8 * lo)
        got = np.frombuffer(f.read(8 * (hi - lo)), dtype="<u8")
        if got.nbytes <= self.cache_bytes:
            self._sets[ref] = got
            self._held += got.nbytes
            while self._held > self.cache_bytes:
                self._held -= self._sets.popitem(last=False)[1].nbytes
        return got

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files.clear()


def _stored_array_start(f: Any, info: zipfile.ZipInfo) -> int:
    """Where the data of an uncompressed ``.npy`` member begins in the zip file ``f``: past the member's local
    header (whose name and extra fields may differ in length from the central directory's) and the npy header."""
    if info.compress_type != zipfile.ZIP_STORED:
        raise ValueError(f"{info.filename}: a compressed member cannot be read in place")
    f.seek(info.header_offset)
    local = f.read(30)
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    f.seek(info.header_offset + 30 + name_len + extra_len)
    version = np.lib.format.read_magic(f)
    read_header = (
        np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    )
    _, fortran, dtype = read_header(f)
    if fortran or dtype != np.dtype("<u8"):
        raise ValueError(f"{info.filename}: expected a C-ordered uint64 array, found {dtype}")
    return int(f.tell())


def removals_url(stage_dir: str, shard_index: int) -> str:
    return fs.join(stage_dir, "removals", part_name(shard_index) + ".json")


class DocRemoval(NamedTuple):
    """A removed document: its position and id, the reason, and the kept copy's reference and id."""

    doc: int
    reason: str
    kept: Ref
    id: str
    kept_id: str


def survivors(refs: set[Ref], earlier: tuple[tuple[str, int], ...]) -> dict[Ref, DocRemoval]:
    """Where an earlier build (``dedup.against``) had itself removed a kept copy, that removal, its kept copy
    renumbered as this build's: ``ref -> removal`` for those refs only. The later build compares with every earlier document (so a copy
    of a removed one is still found, as one build of both would find it), but a document it removes must name one
    that is in the data. A survivor outside the listed earlier builds keeps its id and the reference it had."""
    position = {where: k - len(earlier) for k, where in enumerate(earlier)}
    lists: dict[int, dict[int, DocRemoval]] = {}
    out: dict[Ref, DocRemoval] = {}
    for ref in sorted(r for r in refs if r[0] < 0):
        shard, doc = ref
        if shard not in lists:
            stage_dir, index = earlier[len(earlier) + shard]
            lists[shard] = {r.doc: r for r in read_removals(stage_dir, index)}
        removed = lists[shard].get(doc)
        if removed is None:
            continue
        stage_dir = earlier[len(earlier) + shard][0]
        mapped = position.get((stage_dir, removed.kept[0])) if removed.kept[0] >= 0 else None
        out[ref] = removed._replace(kept=(mapped, removed.kept[1]) if mapped is not None else ref)
    return out


def write_removals(
    stage_dir: str,
    decisions: dict[int, list[tuple[int, str, Ref]]],
    earlier: tuple[tuple[str, int], ...] = (),
) -> None:
    """Each shard's ``(position, reason, kept copy)`` decisions (``shard -> decisions``), named by ids, each kept
    copy a survivor. The ids of every shard named are read once for all the shards given: a task writes the lists
    of many shards, whose kept copies lie in any shard."""
    gone = survivors({(int(k[0]), int(k[1])) for items in decisions.values() for _, _, k in items}, earlier)
    decided: dict[int, list[tuple[int, str, tuple[Ref, str | None]]]] = {}
    for shard, items in decisions.items():
        rows = decided[shard] = []
        for d, r, k in items:
            ref = (int(k[0]), int(k[1]))  # an engine may hand lists
            if ref in gone:  # an earlier build removed this kept copy: name the one it kept
                rows.append((d, chained_reason(r, gone[ref].reason), (gone[ref].kept, gone[ref].kept_id)))
            else:
                rows.append((d, r, (ref, None)))
    refs = {ref for shard, rows in decided.items() for d, _, (k, _) in rows for ref in ((shard, d), k)}
    named = names(refs, stage_dir, earlier)
    for shard, rows in decided.items():
        out = [
            {"doc": d, "id": named[(shard, d)], "reason": r, "kept": list(k), "kept_id": i or named[k]}
            for d, r, (k, i) in sorted(rows, key=lambda x: x[0])
        ]
        fs.write_text_atomic(removals_url(stage_dir, shard), json.dumps(out) + "\n")


def write_line_removals(stage_dir: str, decisions: dict[int, list[tuple[int, int]]]) -> None:
    """Each shard's ``(position, line)`` removals (``shard -> removals``): one row per document with its id and its
    lines, sorted."""
    lines: dict[int, dict[int, list[int]]] = {}
    for shard, items in decisions.items():
        by_doc = lines[shard] = {}
        for doc, line in sorted(items):
            by_doc.setdefault(doc, []).append(line)
    named = names({(shard, d) for shard, by_doc in lines.items() for d in by_doc}, stage_dir)
    for shard, by_doc in lines.items():
        rows = [{"doc": d, "id": named[(shard, d)], "lines": ls} for d, ls in by_doc.items()]
        fs.write_text_atomic(removals_url(stage_dir, shard), json.dumps(rows) + "\n")


def read_removals(stage_dir: str, shard_index: int) -> list[DocRemoval]:
    """One shard's document removals (a folder written before ids were stored: ids are the references)."""
    url = removals_url(stage_dir, shard_index)
    if not fs.exists(url):
        return []
    out = []
    for row in json.loads(fs.read_text(url)):
        if isinstance(row, dict):
            out.append(DocRemoval(row["doc"], row["reason"], tuple(row["kept"]), row["id"], row["kept_id"]))
        else:
            doc, reason, kept = row
            out.append(
                DocRemoval(
                    doc,
                    reason,
                    tuple(kept),
                    f"shard {shard_index} document {doc}",
                    f"shard {kept[0]} document {kept[1]}",
                )
            )
    return out


def read_line_removals(stage_dir: str, shard_index: int) -> dict[int, set[int]]:
    """One shard's removed lines by document position (older folders: ``[doc, line]`` pairs)."""
    url = removals_url(stage_dir, shard_index)
    out: dict[int, set[int]] = {}
    for row in json.loads(fs.read_text(url)) if fs.exists(url) else []:
        if isinstance(row, dict):
            out.setdefault(row["doc"], set()).update(row["lines"])
        else:
            out.setdefault(row[0], set()).add(row[1])
    return out


def removal_shards(stage_dir: str) -> list[int]:
    """The input shards that have a removal list."""
    names = fs.glob(fs.join(stage_dir, "removals", "part-*.json"))
    return sorted(int(name.rsplit("part-", 1)[1].split(".")[0]) for name in names)


def write_edges(stage_dir: str, shard: int, block: int, edges: list) -> None:
    """One block's edges ``(a, b, jaccard)``, sorted."""
    items = sorted([list(a), list(b), j] for a, b, j in edges)
    fs.write_text_atomic(
        fs.join(stage_dir, "edges", f"{part_name(shard)}-{block:05d}.json"), json.dumps(items) + "\n"
    )


def write_components(stage_dir: str, doc: dict) -> None:
    """``components.json``: what :meth:`datapipe.dedup.components.ComponentTally.to_dict` returns."""
    fs.write_text_atomic(fs.join(stage_dir, "components.json"), json.dumps(doc) + "\n")


def read_edges(stage_dir: str) -> list[tuple]:
    """All verified edges ``(a, b, jaccard)`` a dedup stage wrote (for inspection and tests; small by design)."""
    out: list[tuple] = []
    for url in fs.glob(fs.join(stage_dir, "edges", "part-*.json")):
        out.extend((tuple(a), tuple(b), j) for a, b, j in json.loads(fs.read_text(url)))
    return out


# ------------------------------------------------------------------------------- the index later builds read

INDEX = (
    "index"  # index/keys-SSSSS and index/bands-SSSSS: a shard's exact and band keys (datapipe.dedup.spill)
)


def index_url(stage_dir: str, kind: str, shard_index: int) -> str:
    return fs.join(stage_dir, INDEX, f"{kind}-{shard_index:05d}")


def write_index(stage_dir: str, shard_index: int, keys: np.ndarray, bands: np.ndarray) -> None:
    """A shard's key records, kept with the stage so that a later build can deduplicate against them without
    reading the text again (``dedup.against``); one partition each."""
    from datapipe.io.partitioned import write_partitioned

    for kind, records in (("keys", keys), ("bands", bands)):
        write_partitioned(
            index_url(stage_dir, kind, shard_index), records, np.zeros(len(records), np.int64), 1
        )


def index_stages(path: str) -> list[str]:
    """The finished dedup stage folders with an index at ``path``: the folder itself, its ``dedup-*`` folders (a
    source folder) or its ``*/dedup-*`` folders (a build output), sorted."""
    for pattern in ("_SUCCESS", "dedup-*/_SUCCESS", "*/dedup-*/_SUCCESS"):
        stages = [url.rsplit("/", 1)[0] for url in fs.glob(fs.join(path, pattern))]
        found = sorted(s for s in stages if fs.glob(fs.join(s, INDEX, "keys-*")))
        if found:
            return found
    return []


def earlier_shards(paths: tuple[str, ...]) -> tuple[tuple[str, int], ...]:
    """``(stage folder, shard index)`` of every indexed shard of the earlier builds ``paths``, in order: the
    k-th of K is referred to as shard ``k - K`` (negative, so before every shard of this build)."""
    out: list[tuple[str, int]] = []
    for path in paths:
        stages = index_stages(path)
        if not stages:
            raise InputError(
                path,
                "no finished dedup stage with a stored index here (a build writes one into "
                "<output>/<source>/dedup-*/index/)",
                field="dedup.against",
            )
        for stage in stages:
            shards = sorted(int(u.rsplit("-", 1)[1]) for u in fs.glob(fs.join(stage, INDEX, "keys-*")))
            out.extend((stage, s) for s in shards)
    return tuple(out)


# a shard's keys in the file shuffle (datapipe.dedup.spill) and in the stored index of a build
KEY = np.dtype([("hi", "<u8"), ("lo", "<u8"), ("shard", "<i8"), ("doc", "<i8")])
BAND = np.dtype([("band", "<u8"), ("key", "<u8"), ("shard", "<i8"), ("doc", "<i8"), ("content", "<i8")])


def key_records(exact: list, bands: list, shard_index: int) -> tuple[np.ndarray, np.ndarray]:
    """A shard's keys as :meth:`DedupStage.sign_shard` returns them -> (KEY records, BAND records)."""
    keys = np.zeros(len(exact), dtype=KEY)
    if exact:
        hashes = np.array([h for h, _ in exact], dtype=object)
        keys["hi"] = (hashes >> 64).astype(np.uint64)
        keys["lo"] = (hashes & ((1 << 64) - 1)).astype(np.uint64)
        keys["shard"] = shard_index
        keys["doc"] = [r[1] for _, r in exact]
    banded = np.zeros(len(bands), dtype=BAND)
    if bands:
        banded["band"] = [b for (b, _), _ in bands]
        banded["key"] = np.array([k for (_, k), _ in bands], dtype=np.uint64)
        banded["shard"] = shard_index
        banded["doc"] = [r[1] for _, (r, _) in bands]
        banded["content"] = [c for _, (_, c) in bands]
    return keys, banded
