"""Input shards: the unit of work, of output files and of stable document ids.

A shard is one input file. Shards are numbered in sorted URL order. A document keeps its own id from the input as
``id`` (the JSONL or Parquet id field, the WARC-Record-ID), as the Dolma format does, and where it was read as
``ref``: ``<shard name>:<index>``, the same however many workers ran and whichever bundle a runner put the shard
in; a document without an id of its own has its ``ref`` as ``id``. Decisions that need a stable, unique key (the
quality cut-off's tie-break) use ``ref``: input ids repeat (a crawl holds a page twice) or are missing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from datapipe.io import fs


@dataclass(frozen=True, order=True)
class Shard:
    index: int
    url: str
    name: str  # path relative to the data root when under it, else the URL

    @property
    def part(self) -> str:
        """File stem of this shard's outputs in every stage folder."""
        return f"part-{self.index:05d}"

    def doc_ref(self, i: int) -> str:
        """Where the shard's ``i``-th document was read: ``<shard name>:<index>``."""
        return f"{self.name}:{i}"

    def names(self, i: int, own_id: object = None) -> dict[str, str]:
        """``id`` (the document's own id in the input, else its ``ref``) and ``ref`` of the ``i``-th document."""
        ref = self.doc_ref(i)
        own = "" if own_id is None else str(own_id).strip()
        return {"id": own or ref, "ref": ref}


def make_shards(urls: list[str], data_root: str) -> tuple[Shard, ...]:
    root = fs.local_path(data_root).rstrip("/") + "/"
    out = []
    for i, url in enumerate(urls):
        u = fs.local_path(url) if fs.is_local(url) else url
        name = u[len(root) :] if u.startswith(root) else os.path.basename(u) if fs.is_local(url) else url
        out.append(Shard(index=i, url=url, name=name))
    return tuple(out)
