"""The ``tokenize`` stage: documents -> token ids -> one jagged cache per input shard -> the source's cache.

Each input shard's rows go to their own shard cache (``shards/part-NNNNN/``, uncompressed), in document order; ``finalize``
concatenates the shard caches in shard order into ``input_ids`` and writes the ledger, so the result does not
depend on how many workers ran or how a runner bundled the shards.

With ``by_language`` (a source's ``by_language``), each language (``metadata.language``) gets its own cache,
``<stage>/<language>/input_ids`` with its ledger, one mixture component each. With ``rehydrate``, each document's
row is written as many times as FineWeb-2's weights say for the size of the MinHash cluster it survived
(``metadata.minhash_cluster_size``), one after the other, as FineWeb-2's ``Rehydrater`` yields it; the repeats are
counted (``rehydrate/repeats``) and each cache's ledger says how many rows are repeats.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from datapipe.config.schema import load_validator
from datapipe.config.stages import TokenizerConfig
from datapipe.io import fs
from datapipe.io.jsonl import read_records
from datapipe.io.shards import Shard
from datapipe.languages import rehydration_table, repeats
from datapipe.runtime.heartbeat import Heartbeat
from datapipe.runtime.stage import WARM_TEXT, StageBase
from datapipe.runtime.stats import StageStats
from datapipe.store.cache import FIELD, make_ledger, write_ledger
from datapipe.store.jagged import concat_jagged, write_rows_npy
from datapipe.tokenize.tokenizer import LoadedTokenizer, load_tokenizer

BATCH = 256


@functools.lru_cache(maxsize=4)
def _bundled(cfg: TokenizerConfig) -> LoadedTokenizer:
    return load_tokenizer(cfg)


def _loaded(cfg: TokenizerConfig) -> LoadedTokenizer:
    """The stage's tokenizer; a bundled one (``builtin:``, built from a package's files) is loaded once per
    process and shared by the stage's DoFns, so the one that finishes the stage (on the build's last step, one
    worker busy) reuses the tokenizer its worker's shards were encoded with: building GPT-2's and hashing it
    there took 0.05 s (2026-12-05). A tokenizer from a file or the hub is read again each time: it could change."""
    return _bundled(cfg) if cfg.path.startswith("builtin:") else load_tokenizer(cfg)


@dataclass
class TokenizeStage(StageBase):
    source: str
    tokenizer_config: TokenizerConfig
    input_dir: str  # the upstream stage's folder, holding part-NNNNN.jsonl.zst
    out_dir: str
    name: str = "tokenize"
    by_language: bool = False
    rehydrate: str | None = None  # FineWeb-2's table name or a JSON file of weights
    quality_repeats: bool = (
        False  # the quality stage asks for copies of its top buckets (metadata.quality_repeats)
    )
    _tok: LoadedTokenizer | None = field(default=None, repr=False)
    _weights: dict[str, dict[int, int]] | None = field(default=None, repr=False)

    def __getstate__(self) -> dict[str, object]:  # the tokenizer is rebuilt in setup(), never pickled
        return {**self.__dict__, "_tok": None}

    def setup(self) -> None:
        if self._tok is None:
            self._tok = _loaded(self.tokenizer_config)

    def warm(self) -> None:
        """Set up and encode :data:`WARM_TEXT`: the fast encoder's tables and kernels load on a process's first
        text (~0.13 s of each process's first shard on e2e's pages, after the tokenizer's own 0.06 s); and load the
        ledger's validator, which the stage's finish imported while the build waited for it (0.05 s)."""
        self.tokenizer.encode_arrays([WARM_TEXT])
        load_validator()

    @property
    def tokenizer(self) -> LoadedTokenizer:
        self.setup()
        assert self._tok is not None
        return self._tok

    def shard_cache(self, shard: Shard) -> str:
        """This shard's rows, in document order: a scratch file that consolidation reads once."""
        return fs.join(self.out_dir, "shards", shard.part)

    @property
    def split(self) -> bool:
        """Rows go to per-language folders and a shard's ``rows.json`` (written last) lists them."""
        return self.by_language or self.rehydrate is not None or self.quality_repeats

    def has_output(self, shard: Shard) -> bool:
        marker = "rows.json" if self.split else "ends.npy"
        return fs.exists(fs.join(self.shard_cache(shard), marker))

    def _repeats(self, doc: dict[str, Any], stats: StageStats) -> int:
        """How many times a document goes into the cache: FineWeb-2's rehydration weight of its cluster size, times
        the copies the quality stage gave its bucket."""
        copies = int(doc.get("metadata", {}).get("quality_repeats", 1)) if self.quality_repeats else 1
        return copies * self._rehydrated(doc, stats)

    def _rehydrated(self, doc: dict[str, Any], stats: StageStats) -> int:
        if self.rehydrate is None:
            return 1
        if self._weights is None:
            self._weights = rehydration_table(self.rehydrate)
        meta = doc.get("metadata", {})
        weights = self._weights.get(meta.get("language") or "unknown")
        if weights is None:
            stats.counters["rehydrate/no_weights"] += 1
            return 1
        return repeats(weights, int(meta.get("minhash_cluster_size", 1)))

    def process_shard(self, shard: Shard, beat: Heartbeat | None = None) -> StageStats:
        stats = StageStats()
        rows: dict[str, list[np.ndarray]] = {}  # by language ("" when not split by language)
        batch: list[tuple[str, int, str]] = []

        def flush() -> None:
            encoded = self.tokenizer.encode_arrays([text for _, _, text in batch])
            for (key, times, _), ids in zip(batch, encoded, strict=True):
                rows.setdefault(key, []).extend([ids] * times)
                stats.tokens += len(ids) * times
                stats.observe("tokens_per_doc", len(ids))
            batch.clear()

        for doc in read_records(fs.join(self.input_dir, shard.records)):
            if beat is not None:
                beat.tick(stats.docs_in)
            stats.docs_in += 1
            stats.docs_kept += 1
            key = (doc.get("metadata", {}).get("language") or "unknown") if self.by_language else ""
            times = self._repeats(doc, stats)
            if (
                self.by_language
            ):  # a language's size in characters and bytes, beside its tokens (by_language.by)
                stats.counters[f"language_chars/{key}"] += len(doc["text"]) * times
                stats.counters[f"language_bytes/{key}"] += (
                    len(doc["text"].encode("utf-8", "surrogatepass")) * times
                )
            if times > 1:
                stats.counters["rehydrate/repeats"] += times - 1
            batch.append((key, times, doc["text"]))
            if len(batch) >= BATCH:
                flush()
        flush()
        if not self.split:
            write_rows_npy(self.shard_cache(shard), rows.get("", []))
            return stats
        counts = {}
        for key, got in sorted(rows.items()):
            counts[key] = write_rows_npy(fs.join(self.shard_cache(shard), key or "all"), got)
        fs.write_text_atomic(fs.join(self.shard_cache(shard), "rows.json"), json.dumps(counts) + "\n")
        return stats

    def finalize(self, shards: list[Shard], stats: list[StageStats]) -> dict[str, object]:
        identity = self.tokenizer.identity.to_dict()
        if not self.split:
            rows, tokens = concat_jagged(fs.join(self.out_dir, FIELD), [self.shard_cache(s) for s in shards])
            ledger = make_ledger(
                {s.name: st.docs_kept for s, st in zip(shards, stats, strict=True)},
                {s.name: st.tokens for s, st in zip(shards, stats, strict=True)},
                self.tokenizer.identity,
            )
            assert ledger.total_num_rows == rows and ledger.total_num_tokens == tokens
            write_ledger(self.out_dir, ledger)
            return {"cache": {"rows": rows, "tokens": tokens, "tokenizer": identity}}
        per_shard = {
            s.name: json.loads(fs.read_text(fs.join(self.shard_cache(s), "rows.json"))) for s in shards
        }
        keys = sorted({k for counts in per_shard.values() for k in counts})
        caches = {}
        for key in keys:  # each language's cache from the shards that hold it, in shard order
            held = [s for s in shards if key in per_shard[s.name]]
            folder = fs.join(self.out_dir, key) if key else self.out_dir
            rows, tokens = concat_jagged(
                fs.join(folder, FIELD), [fs.join(self.shard_cache(s), key or "all") for s in held]
            )
            ledger = make_ledger(
                {s.name: per_shard[s.name][key][0] for s in held},
                {s.name: per_shard[s.name][key][1] for s in held},
                self.tokenizer.identity,
            )
            assert ledger.total_num_rows == rows and ledger.total_num_tokens == tokens
            write_ledger(folder, ledger)
            caches[key] = {"rows": rows, "tokens": tokens}
            if self.by_language:
                for what in ("chars", "bytes"):
                    caches[key][what] = sum(st.counters.get(f"language_{what}/{key}", 0) for st in stats)
        total = {f: sum(c[f] for c in caches.values()) for f in ("rows", "tokens")}
        out: dict[str, object] = {**total, "tokenizer": identity}
        if self.by_language:
            out["languages"] = caches
        if self.rehydrate is not None or self.quality_repeats:
            out["repeats"] = sum(st.counters.get("rehydrate/repeats", 0) for st in stats)
        return {"cache": out}

    def cleanup(self) -> None:
        """Drop the shard caches once the stage is committed (they are fully copied into ``input_ids``)."""
        fs.remove(fs.join(self.out_dir, "shards"))
