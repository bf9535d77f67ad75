"""The ``decon`` stage: documents (or paragraphs) that overlap an evaluation item are removed, or lose the overlap.

Each worker builds the n-gram index once in ``setup`` from the evaluation files (a heavy resource, like a model);
``keep`` asks it about each document, or each paragraph (line) with ``scope: paragraph``. ``action: remove`` drops a
contaminated document (``decon/contaminated``); ``action: span`` drops only the lines that hold the matching
n-grams (counted in ``decon/lines_removed``), and the document if nothing is left (``decon/nothing_left``). Which
items were hit, and how often, is written per shard and summed into ``stage.json`` (``decon.items_hit``).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from datapipe.config.stages import DeconConfig
from datapipe.decon.evalsets import read_items
from datapipe.decon.index import EvalIndex, Match
from datapipe.decon.ngrams import text_words
from datapipe.io import fs
from datapipe.io.shards import Shard
from datapipe.runtime.evidence import Removal
from datapipe.runtime.heartbeat import Heartbeat
from datapipe.runtime.stage import ConfiguredStage
from datapipe.runtime.stats import StageStats

TOP_ITEMS = 1000  # items listed in stage.json (the count of distinct items hit is always there)


def build_index(config: DeconConfig) -> EvalIndex:
    items = [
        item
        for s in config.eval_sets
        for url in s.paths
        for item in read_items(s.name, url, s.fields, s.id_field, s.per_field)
    ]
    return EvalIndex.build(
        items, config.ngram, config.min_words, config.threshold, config.max_exact_ngrams, config.bloom_fp_rate
    )


@dataclass
class DeconStage(ConfiguredStage[DeconConfig]):
    name: str = "decon"
    _index: EvalIndex | None = field(default=None, repr=False)
    _hits: Counter = field(default_factory=Counter, repr=False)
    _last: Match = field(default_factory=lambda: Match(False), repr=False)

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_index": None, "_hits": Counter(), "_last": Match(False)}

    def setup(self) -> None:
        if self._index is None:
            self._index = build_index(self.config)

    def begin_shard(self, shard: Shard) -> None:
        self._hits = Counter()

    def keep(self, index: int, doc: dict[str, Any], stats: StageStats) -> str | None:
        assert self._index is not None
        remove = self.config.action == "remove"
        if self.config.scope == "document" and remove:  # the common case needs no line bookkeeping
            hashes, _, lengths = self._index.candidates(text_words(doc["text"]))
            contaminated = self._count(self._index.match(hashes, lengths))
            drop: set[int] = set()
        else:
            lines = doc["text"].split("\n")
            words = [text_words(line) for line in lines]
            units = (
                [list(range(len(lines)))]
                if self.config.scope == "document"
                else [[i] for i in range(len(lines))]
            )
            drop, contaminated = set(), False
            for unit in units:
                hashes, starts, lengths = self._index.candidates([w for i in unit for w in words[i]])
                m = self._index.match(hashes, lengths)
                if not self._count(m):
                    continue
                contaminated = True
                if remove:
                    break
                line_of_word = np.array([i for i in unit for _ in words[i]], dtype=np.int64)
                via = np.isin(hashes, m.hashes)
                for s, n in zip(starts[via], lengths[via], strict=True):
                    drop.update(line_of_word[s : s + n].tolist())
        if not contaminated:
            return None
        stats.counters["decon/documents_hit"] += 1
        if remove:
            return self._contaminated()
        stats.counters["decon/lines_removed"] += len(drop)
        doc["text"] = "\n".join(line for i, line in enumerate(lines) if i not in drop).strip()
        if not doc["text"]:
            return Removal("decon/nothing_left", "lines_removed", len(drop), note="every line matched")
        return None

    def _count(self, m: Match) -> bool:
        """Count the items that hit a contaminated text; whether it is contaminated."""
        assert self._index is not None
        for item in m.items:
            self._hits[self._index.item_ids[item]] += 1
        self._last = m
        return m.contaminated

    def _contaminated(self) -> Removal:
        """The evidence of the last match: how many of the text's n-grams are an eval item's, and which items
        (the Bloom-filter mode knows the n-grams, not the items)."""
        assert self._index is not None
        items = [self._index.item_ids[i] for i in self._last.items[:3]]
        more = f" and {len(self._last.items) - 3} more" if len(self._last.items) > 3 else ""
        return Removal(
            "decon/contaminated",
            f"eval_{self._index.n}_grams",
            len(self._last.hashes),
            note=f"items {', '.join(items)}{more}" if items else None,
        )

    def hits_url(self, shard: Shard) -> str:
        return fs.join(self.out_dir, f"{shard.part}.hits.json")

    def process_shard(self, shard: Shard, beat: Heartbeat | None = None) -> StageStats:
        stats = super().process_shard(shard, beat)
        assert self._index is not None
        doc = {"index": self._index.stats, "items_hit": dict(sorted(self._hits.items()))}
        fs.write_text_atomic(self.hits_url(shard), json.dumps(doc, sort_keys=True) + "\n")
        return stats

    def finalize(self, shards: list[Shard], stats: list[StageStats]) -> dict[str, object]:
        hits: Counter = Counter()
        index: dict[str, object] = {}
        for shard in shards:
            doc = json.loads(fs.read_text(self.hits_url(shard)))
            hits.update(doc["items_hit"])
            index = doc["index"]
        top = sorted(hits.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_ITEMS]
        return {
            **super().finalize(shards, stats),
            "decon": {"index": index, "distinct_items_hit": len(hits), "items_hit": dict(top)},
        }
