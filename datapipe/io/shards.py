"""Input shards: the unit of work, of output files and of stable document ids.

A shard is one input file. Shards are numbered in sorted URL order; a document's id is ``<shard name>:<index>``,
so it is the same however many workers ran and whichever bundle a runner put the shard in.
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

    def doc_id(self, i: int) -> str:
        return f"{self.name}:{i}"


def make_shards(urls: list[str], data_root: str) -> tuple[Shard, ...]:
    root = fs.local_path(data_root).rstrip("/") + "/"
    out = []
    for i, url in enumerate(urls):
        u = fs.local_path(url) if fs.is_local(url) else url
        name = u[len(root) :] if u.startswith(root) else os.path.basename(u) if fs.is_local(url) else url
        out.append(Shard(index=i, url=url, name=name))
    return tuple(out)
