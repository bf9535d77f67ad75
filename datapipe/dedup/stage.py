"""The ``dedup`` (document level) and ``paragraphs`` (line level) stages.

Each has two phases. The global phase (run by an engine; its decisions are :mod:`datapipe.dedup.components`)
reads every shard once to emit small keys (hashes of normalized text, LSH band keys, hashes of lines), groups them by
key, and ends with one sorted removal list per input shard. The shard phase then streams each shard once with its own list, like any other
stage. Document text never crosses workers.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xxhash

from datapipe.config.stages import DedupConfig, ParagraphConfig
from datapipe.dedup.components import MINHASH
from datapipe.dedup.minhash import MinHasher, Shingler, jaccard
from datapipe.dedup.shape import DedupShape, dedup_shape
from datapipe.dedup.store import (
    DocRemoval,
    ShingleStore,
    earlier_shards,
    names,
    read_line_removals,
    read_removals,
    removal_shards,
    write_ids,
    write_index,
    write_shingles,
)
from datapipe.dedup.wordsig import LanguageSigner
from datapipe.io.jsonl import read_records
from datapipe.io.shards import Shard
from datapipe.kernels.normalize import normalize, normalized_utf8
from datapipe.runtime.evidence import Removal
from datapipe.runtime.heartbeat import Heartbeat
from datapipe.runtime.stage import ConfiguredStage, TwoPhaseStage
from datapipe.runtime.stats import StageStats


def normalized_key(normalized: bytes) -> int:
    """The 128-bit key of a normalized text's UTF-8: a document's for exact dedup (whose bytes the MinHash shingles
    reuse), a line's for paragraph dedup."""
    return xxhash.xxh3_128_intdigest(normalized)


@dataclass
class DedupStage(TwoPhaseStage, ConfiguredStage[DedupConfig]):
    name: str = "dedup"
    _hasher: MinHasher | None = field(default=None, repr=False)
    _shingler: Shingler | None = field(default=None, repr=False)
    _store: ShingleStore | None = field(default=None, repr=False)
    _by_language: LanguageSigner | None = field(default=None, repr=False)
    _cluster_sizes: dict[tuple[int, int], int] | None = field(default=None, repr=False)

    @property
    def earlier_builds(self) -> tuple[str, ...]:
        """The earlier builds' dedup indexes its global phase reads (``dedup.against``)."""
        return self.config.against

    @property
    def shape(self) -> DedupShape:
        """Which steps the global phase runs (both engines' paths read it)."""
        return dedup_shape(self.config)

    def __getstate__(self) -> dict[str, Any]:
        return {
            **self.__dict__,
            "_hasher": None,
            "_shingler": None,
            "_store": None,
            "_by_language": None,
            "_cluster_sizes": None,
        }

    @property
    def per_language(self) -> bool:
        return self.config.minhash is not None and self.config.minhash.words == "language"

    def setup(self) -> None:
        if self.config.minhash is not None and self._hasher is None:
            self._hasher = MinHasher(self.config.minhash)
            self._shingler = Shingler(self.config.minhash.ngram)
            if self.per_language:
                self._by_language = LanguageSigner(self.config.minhash)

    def _sign(self, shard: Shard) -> tuple[list, list, int]:
        """Keys of one shard: ``(text hash, ref)`` for exact dedup, ``((band, key), (ref, content))`` for LSH (the
        content key, a hash of the shingle set, lets a bucket pair up copies linearly), doc count.

        Also writes the shard's shingle sets for verification.
        """
        self.setup()
        exact: list[tuple[int, tuple[int, int]]] = []
        bands: list[tuple[tuple[int, int], tuple[tuple[int, int], int]]] = []
        sets: list = []
        ids: list[str] = []
        languages: list[str] = []
        n = 0
        by_language = self._by_language
        for i, doc in enumerate(read_records(self.upstream(shard))):
            n += 1
            ids.append(doc["id"])
            ref = (shard.index, i)
            normalized = None
            if self.config.exact:
                normalized = normalized_utf8(doc["text"])
                exact.append((normalized_key(normalized), ref))
            if by_language is not None:
                languages.append(doc.get("metadata", {}).get("language") or "unknown")
                sets.append(by_language.shingles(doc["text"], languages[-1]))
            elif self._shingler is not None:
                shingler = self._shingler
                sets.append(
                    shingler(doc["text"]) if normalized is None else shingler.of_normalized(normalized)
                )
        if self._hasher is not None:
            sigs = by_language.signatures(sets) if by_language is not None else self._hasher.signatures(sets)
            for i, (sig, shingles) in enumerate(zip(sigs, sets, strict=True)):
                if len(shingles):  # an empty text has no signature to compare
                    # 63 bits: Beam's coder writes a larger int as a long one
                    member = ((shard.index, i), xxhash.xxh3_64_intdigest(shingles.tobytes()) >> 1)
                    keys = (
                        by_language.band_keys(sig, languages[i])
                        if by_language is not None
                        else self._hasher.band_keys(sig)
                    )
                    bands.extend(((b, key), member) for b, key in enumerate(keys))
            write_shingles(self.out_dir, shard.index, sets)
        write_ids(self.out_dir, shard.index, ids)
        return exact, bands, n

    def sign_records(self, shard: Shard) -> tuple[np.ndarray, np.ndarray, int]:
        """One shard's keys as the record arrays of the file shuffle (``datapipe.dedup.spill``), also kept in the
        stage's ``index/`` for later builds (``dedup.against``); and its document count."""
        from datapipe.dedup.store import key_records

        # the progress display sees the stage begin here, not when the shard is applied after the global phase;
        # run_shard's heartbeat for the same shard replaces the file and removes it at the commit
        Heartbeat(self.out_dir, shard.part).tick(0)
        exact, bands, n = self._sign(shard)
        keys, banded = key_records(exact, bands, shard.index)
        write_index(self.out_dir, shard.index, keys, banded)
        return keys, banded, n

    def sign_shard(self, shard: Shard) -> tuple[list, list, int]:
        """:meth:`sign_records` as the elements of Beam's ``GroupByKey`` path: ``(text hash, ref)`` and
        ``((band, key), (ref, content))``."""
        keys, banded, n = self.sign_records(shard)
        exact = [
            ((hi << 64) | lo, (s, d))
            for hi, lo, s, d in zip(*(keys[f].tolist() for f in ("hi", "lo", "shard", "doc")), strict=True)
        ]
        columns = (banded[f].tolist() for f in ("band", "key", "shard", "doc", "content"))
        bands = [((b, k), ((s, d), c)) for b, k, s, d, c in zip(*columns, strict=True)]
        return exact, bands, n

    def begin_shard(self, shard: Shard) -> None:
        self._removals = {r.doc: r for r in read_removals(self.out_dir, shard.index)}
        self._shard = shard.index

    def keep(self, index: int, doc: dict[str, Any], stats: StageStats) -> str | None:
        decision = self._removals.get(index)
        if decision is not None:
            return self._evidence(decision)
        if self.per_language:  # FineWeb-2's save_cluster_size: what rehydration repeats by
            size = self.cluster_sizes().get((self._shard, index), 1)
            doc["metadata"]["minhash_cluster_size"] = size
            stats.observe("dedup/cluster_size", size, "log")
        return None

    def cluster_sizes(self) -> dict[tuple[int, int], int]:
        """Each survivor's cluster: itself and every document removed as its duplicate (exact or MinHash), read
        once per worker from all shards' removal lists (one entry per removed document)."""
        if self._cluster_sizes is None:
            sizes: Counter[tuple[int, int]] = Counter()
            for index in removal_shards(self.out_dir):
                for removed in read_removals(self.out_dir, index):
                    sizes[removed.kept] += 1
            self._cluster_sizes = {ref: n + 1 for ref, n in sizes.items()}
        return self._cluster_sizes

    def _evidence(self, removed: DocRemoval) -> Removal:
        """The kept copy a removal names (by its id) and, for MinHash, the exact Jaccard of the two shingle sets: a
        component joins documents through others, so a removed document may be further from its kept copy than the
        threshold (``jaccard_with_kept_copy``)."""
        name = removed.kept_id
        if removed.reason != MINHASH or self._shingler is None:
            return Removal(
                removed.reason, "kept_copy", name, note="same text after normalization", related=name
            )
        if self._store is None:
            self._store = ShingleStore(self.out_dir, earlier=earlier_shards(self.config.against))
        similar = jaccard(self._store.get((self._shard, removed.doc)), self._store.get(removed.kept))
        unverified = self.shape.unverified
        return Removal(
            removed.reason,
            "jaccard_with_kept_copy",
            round(similar, 4),
            # without verification a shared LSH bucket is the whole rule: no Jaccard threshold applied
            note=f"kept copy {name}"
            + ("; no threshold applied (the preset verifies no pair)" if unverified else ""),
            related=name,
        )

    def process_shard(self, shard: Shard, beat: Heartbeat | None = None) -> StageStats:
        try:
            return super().process_shard(shard, beat)
        finally:  # the shingle files the evidence read stay open no longer than the shard
            if self._store is not None:
                self._store.close()
                self._store = None

    def finalize(self, shards: list[Shard], stats: list[StageStats]) -> dict[str, object]:
        report = self.read_global_report()
        comps = report.get("largest_components", [])
        names = self._ids({tuple(m) for comp in comps for m in comp["members"]}, shards)
        for comp in comps:  # references -> stable document ids, for inspection
            comp["ids"] = [names[tuple(m)] for m in comp.pop("members")]
        return {**super().finalize(shards, stats), "dedup": report}

    def _ids(self, refs: set[tuple[int, int]], shards: list[Shard]) -> dict[tuple[int, int], str]:
        """Document ids by reference, from the ids stored when the shards were signed."""
        earlier = earlier_shards(self.config.against) if any(s < 0 for s, _ in refs) else ()
        return names(refs, self.out_dir, earlier)


@dataclass
class ParagraphStage(TwoPhaseStage, ConfiguredStage[ParagraphConfig]):
    name: str = "paragraphs"

    def line_keys(self, shard: Shard) -> tuple[list[tuple[int, tuple[int, int, int]]], int]:
        """``(hash of the normalized line, (shard, doc, line))`` for every line with text after normalizing; and
        the shard's document count."""
        out = []
        ids: list[str] = []
        for i, doc in enumerate(read_records(self.upstream(shard))):
            ids.append(doc["id"])
            for j, line in enumerate(doc["text"].split("\n")):
                norm = normalize(line)
                if norm:
                    out.append((normalized_key(norm.encode("utf-8")), (shard.index, i, j)))
        write_ids(self.out_dir, shard.index, ids)
        return out, len(ids)

    def begin_shard(self, shard: Shard) -> None:
        self._drop = read_line_removals(self.out_dir, shard.index)  # document position -> lines to drop

    def keep(self, index: int, doc: dict[str, Any], stats: StageStats) -> str | None:
        drop = self._drop.get(index)
        if drop:
            lines = doc["text"].split("\n")
            doc["text"] = "\n".join(line for j, line in enumerate(lines) if j not in drop).strip()
            stats.counters["paragraphs/lines_removed"] += len(drop)
            if len(doc["text"]) < self.config.min_chars:
                left = len(doc["text"])
                note = f"{len(drop)} of {len(lines)} lines seen earlier"
                return Removal(
                    "paragraphs/too_little_left", "chars_left", left, "<", self.config.min_chars, note
                )
        return None

    def finalize(self, shards: list[Shard], stats: list[StageStats]) -> dict[str, object]:
        return {**super().finalize(shards, stats), "dedup": self.read_global_report()}
