"""Per-stage accounting: every input document is kept or removed with a reason.

Counts are made where the decision is made (datatrove's habit): a reader counts the records it skips, a stage counts
what it removes. Shard statistics are merged by addition, so the merged result does not depend on how many workers
ran or in which order they finished.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StageStats:
    """Counters for one shard or, merged, one stage.

    ``docs_in == docs_kept + sum(removed.values())`` always holds for a finished shard; ``skipped`` counts input
    records that are not documents at all (WARC request/warcinfo records, for instance).
    """

    docs_in: int = 0
    docs_kept: int = 0
    removed: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    tokens: int = 0
    bytes_in: int = 0
    chars_out: int = 0
    counters: Counter = field(default_factory=Counter)  # stage-specific counts (e.g. dedup/lines_removed)

    def remove(self, reason: str, n: int = 1) -> None:
        self.removed[reason] += n

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] += n

    @property
    def balanced(self) -> bool:
        return self.docs_in == self.docs_kept + sum(self.removed.values())

    def merge(self, other: StageStats) -> StageStats:
        return StageStats(
            docs_in=self.docs_in + other.docs_in,
            docs_kept=self.docs_kept + other.docs_kept,
            removed=self.removed + other.removed,
            skipped=self.skipped + other.skipped,
            tokens=self.tokens + other.tokens,
            bytes_in=self.bytes_in + other.bytes_in,
            chars_out=self.chars_out + other.chars_out,
            counters=self.counters + other.counters,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "docs_in": self.docs_in,
            "docs_kept": self.docs_kept,
            "removed": dict(sorted(self.removed.items())),
            "skipped": dict(sorted(self.skipped.items())),
            "tokens": self.tokens,
            "bytes_in": self.bytes_in,
            "chars_out": self.chars_out,
            "counters": dict(sorted(self.counters.items())),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StageStats:
        return cls(
            docs_in=d["docs_in"],
            docs_kept=d["docs_kept"],
            removed=Counter(d.get("removed", {})),
            skipped=Counter(d.get("skipped", {})),
            tokens=d.get("tokens", 0),
            bytes_in=d.get("bytes_in", 0),
            chars_out=d.get("chars_out", 0),
            counters=Counter(d.get("counters", {})),
        )


def merge_all(items: list[StageStats]) -> StageStats:
    out = StageStats()
    for s in items:
        out = out.merge(s)
    return out
