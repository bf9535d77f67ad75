"""The ``tokenize`` stage: documents -> token ids -> one jagged cache per input shard -> the source's cache.

Each input shard's rows go to their own shard cache (``shards/part-NNNNN/``, uncompressed), in document order; ``finalize``
concatenates the shard caches in shard order into ``input_ids`` and writes the ledger, so the result does not
depend on how many workers ran or how a runner bundled the shards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from datapipe.config.stages import TokenizerConfig
from datapipe.heartbeat import Heartbeat
from datapipe.io import fs
from datapipe.io.jsonl import read_records
from datapipe.io.shards import Shard
from datapipe.stats import StageStats
from datapipe.store.cache import FIELD, make_ledger, write_ledger
from datapipe.store.jagged import concat_jagged, write_rows_npy
from datapipe.tokenize.tokenizer import LoadedTokenizer, load_tokenizer

BATCH = 256


@dataclass
class TokenizeStage:
    source: str
    tokenizer_config: TokenizerConfig
    input_dir: str  # the upstream stage's folder, holding part-NNNNN.jsonl.zst
    out_dir: str
    name: str = "tokenize"
    _tok: LoadedTokenizer | None = field(default=None, repr=False)

    def __getstate__(self) -> dict[str, Any]:  # the tokenizer is rebuilt in setup(), never pickled
        return {**self.__dict__, "_tok": None}

    def setup(self) -> None:
        if self._tok is None:
            self._tok = load_tokenizer(self.tokenizer_config)

    @property
    def tokenizer(self) -> LoadedTokenizer:
        self.setup()
        assert self._tok is not None
        return self._tok

    def shard_cache(self, shard: Shard) -> str:
        """This shard's rows, in document order: a scratch file that consolidation reads once."""
        return fs.join(self.out_dir, "shards", shard.part)

    def has_output(self, shard: Shard) -> bool:
        return fs.exists(fs.join(self.shard_cache(shard), "ends.npy"))

    def process_shard(self, shard: Shard, beat: Heartbeat | None = None) -> StageStats:
        stats = StageStats()
        rows: list[np.ndarray] = []
        batch: list[str] = []

        def flush() -> None:
            for ids in self.tokenizer.encode_arrays(batch):
                rows.append(ids)
                stats.tokens += len(ids)
                stats.observe("tokens_per_doc", len(ids))
            batch.clear()

        for doc in read_records(fs.join(self.input_dir, f"{shard.part}.jsonl.zst")):
            if beat is not None:
                beat.tick(stats.docs_in)
            stats.docs_in += 1
            stats.docs_kept += 1
            batch.append(doc["text"])
            if len(batch) >= BATCH:
                flush()
        flush()
        write_rows_npy(self.shard_cache(shard), rows)
        return stats

    def finalize(self, shards: list[Shard], stats: list[StageStats]) -> dict[str, Any]:
        rows, tokens = concat_jagged(fs.join(self.out_dir, FIELD), [self.shard_cache(s) for s in shards])
        ledger = make_ledger(
            {s.name: st.docs_kept for s, st in zip(shards, stats, strict=True)},
            {s.name: st.tokens for s, st in zip(shards, stats, strict=True)},
            self.tokenizer.identity,
        )
        assert ledger["total_num_rows"] == rows and ledger["datapipe"]["total_num_tokens"] == tokens
        write_ledger(self.out_dir, ledger)
        return {"cache": {"rows": rows, "tokens": tokens, "tokenizer": self.tokenizer.identity.to_dict()}}

    def cleanup(self) -> None:
        """Drop the shard caches once the stage is committed (they are fully copied into ``input_ids``)."""
        fs.remove(fs.join(self.out_dir, "shards"))
