"""Input shards: the unit of work, of output files and of stable document ids.

A shard is one input file, or (a folder of HTML pages, one document a file) a bundle of files, its ``members``. Shards are numbered in sorted URL order. A document keeps its own id from the input as
``id`` (the JSONL or Parquet id field, the WARC-Record-ID), as the Dolma format does, and where it was read as
``ref``: ``<shard name>:<index>``, the same however many workers ran and whichever bundle a runner put the shard
in; a document without an id of its own has its ``ref`` as ``id``. Decisions that need a stable, unique key (the
quality cut-off's tie-break) use ``ref``: input ids repeat (a crawl holds a page twice) or are missing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from datapipe.io import fs


@dataclass(frozen=True, order=True)
class Shard:
    index: int
    url: str
    name: str  # path relative to the data root when under it, else the URL
    # a bundle's files, each (url, name) as above, in order; empty for a shard of one file (``url``)
    members: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def files(self) -> tuple[tuple[str, str], ...]:
        """(url, name) of each file the shard reads: its members, or itself."""
        return self.members or ((self.url, self.name),)

    @property
    def part(self) -> str:
        """File stem of this shard's outputs in every stage folder."""
        return part_name(self.index)

    @property
    def records(self) -> str:
        """The file name of this shard's documents in a stage folder."""
        return records_name(self.index)

    def doc_ref(self, i: int) -> str:
        """Where the shard's ``i``-th document was read: ``<shard name>:<index>``."""
        return f"{self.name}:{i}"

    def names(self, i: int, own_id: object = None) -> dict[str, str]:
        """``id`` (the document's own id in the input, else its ``ref``) and ``ref`` of the ``i``-th document."""
        ref = self.doc_ref(i)
        own = "" if own_id is None else str(own_id).strip()
        return {"id": own or ref, "ref": ref}


def part_name(index: int) -> str:
    """The file stem of shard ``index``'s outputs in a stage folder (``part-00003``): spelled here only."""
    return f"part-{index:05d}"


def records_name(index: int) -> str:
    """The file of shard ``index``'s documents in a stage folder (``part-00003.jsonl.zst``): spelled here only."""
    return f"{part_name(index)}.jsonl.zst"


def _name(url: str, root: str) -> str:
    u = fs.local_path(url) if fs.is_local(url) else url
    return u[len(root) :] if u.startswith(root) else os.path.basename(u) if fs.is_local(url) else url


def make_shards(urls: list[str], data_root: str) -> tuple[Shard, ...]:
    root = fs.local_path(data_root).rstrip("/") + "/"
    return tuple(Shard(index=i, url=url, name=_name(url, root)) for i, url in enumerate(urls))


def make_bundles(urls: list[str], data_root: str, per_shard: int) -> tuple[Shard, ...]:
    """Shards of up to ``per_shard`` files each, in order (a folder of small files, one document each: a shard a
    file would cost a stage's per-shard files and bookkeeping per page). A bundle is named by its first file."""
    root = fs.local_path(data_root).rstrip("/") + "/"
    named = [(url, _name(url, root)) for url in urls]
    return tuple(
        Shard(index=i, url=chunk[0][0], name=chunk[0][1], members=tuple(chunk))
        for i, chunk in enumerate(named[k : k + per_shard] for k in range(0, len(named), per_shard))
    )
