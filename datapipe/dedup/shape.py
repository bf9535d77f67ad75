"""Which steps a document-level dedup's global phase runs: decided here once, from the config, and read by both
global paths (the spilled tables of :mod:`datapipe.dedup.spill`, which the local and datatrove engines run, and
Beam's ``GroupByKey`` graph in ``pipelines/beam/dedup.py``).

Why a value and not each path reading the config: the two paths must agree step for step (their outputs are
compared byte for byte in the tests), and before this each asked ``config.exact`` / ``config.minhash`` /
``minhash.verify`` / ``minhash.keep_edges`` for itself (eight places). A new step (or a new condition on one) is a
field here, and both paths fail to type-check until they read it.

The steps, in order::

    sign ─┬─ exact:      group by normalized-text hash -> exact removals
          └─ minhash:    LSH bands -> candidate pairs -> [verify: exact Jaccard] -> edges -> components -> removals
                         [keep_edges: edge files for the browser and export-clusters]
    write: the removal lists, one decision per document (the first reason in REASON_ORDER)
"""

from __future__ import annotations

from dataclasses import dataclass

from datapipe.config.stages import DedupConfig


@dataclass(frozen=True)
class DedupShape:
    exact: bool  # exact duplicates by normalized text
    minhash: bool  # near duplicates: bands, pairs, edges and connected components
    verify: bool  # candidate pairs checked by exact Jaccard (off: every candidate pair is an edge)
    keep_edges: bool  # edge files written beside the removal lists
    max_bucket_pairs: int  # pairs taken from one LSH bucket at most
    threshold: float  # the Jaccard a verified pair must reach

    @property
    def removal_kinds(self) -> tuple[str, ...]:
        """The removal lists the write step merges, in the order it reads them."""
        return (("exact",) if self.exact else ()) + (("minhash",) if self.minhash else ())

    @property
    def unverified(self) -> bool:
        """Near duplicates are found but no pair is checked: a shared LSH bucket is the whole rule."""
        return self.minhash and not self.verify


def dedup_shape(config: DedupConfig) -> DedupShape:
    mh = config.minhash
    return DedupShape(
        exact=config.exact,
        minhash=mh is not None,
        verify=mh is not None and mh.verify,
        keep_edges=mh is not None and mh.keep_edges,
        max_bucket_pairs=mh.max_bucket_pairs if mh is not None else 0,
        threshold=mh.threshold if mh is not None else 1.0,
    )
