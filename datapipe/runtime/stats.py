"""Per-stage accounting: every input document is kept or removed with a reason.

Counts are made where the decision is made (datatrove's habit): a reader counts the records it skips, a stage counts
what it removes. Shard statistics are merged by addition, so the merged result does not depend on how many workers
ran or in which order they finished.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

SAMPLES_PER_REASON = 5  # documents kept, and removed per reason, that a stage keeps for reports and `inspect`
SAMPLE_CHARS = 600
# histogram kinds: "log" has 4 bins per doubling of (value + 1) (lengths, sizes); "unit" has 50 bins over [0, 1]
HIST_KINDS = ("log", "unit")


def hist_bin(kind: str, value: float) -> int:
    if kind == "log":
        return int(math.floor(4 * math.log2(max(0.0, value) + 1)))
    return min(49, max(0, int(value * 50)))


def bin_edges(kind: str, index: int) -> tuple[float, float]:
    """[low, high) of a bin, in the metric's units."""
    if kind == "log":
        return 2 ** (index / 4) - 1, 2 ** ((index + 1) / 4) - 1
    return index / 50, (index + 1) / 50


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
    # distributions: name -> (kind, Counter of bin -> count); fixed bins, so shards merge by addition
    hists: dict[str, tuple[str, Counter]] = field(default_factory=dict)
    # a few documents per outcome ("kept", or the removal reason), for reports and `datapipe inspect`
    samples: dict[str, list[dict[str, object]]] = field(default_factory=dict)
    # per language a document was identified as (metadata.language): "in", "kept" and each removal reason
    languages: dict[str, Counter] = field(default_factory=dict)
    last_reason: str | None = field(default=None, compare=False, repr=False)

    def remove(self, reason: str, n: int = 1) -> None:
        """Count a removal; ``reason`` may be a :class:`datapipe.runtime.evidence.Removal`, whose evidence the stage
        then records with the document (``last_reason`` keeps it)."""
        self.removed[str(reason)] += n
        self.last_reason = reason

    def observe(self, name: str, value: float, kind: str = "log") -> None:
        """Count ``value`` in the histogram ``name`` (``log`` bins for lengths and sizes, ``unit`` for scores)."""
        if kind not in HIST_KINDS:
            raise ValueError(f"histogram kind must be one of {HIST_KINDS}")
        entry = self.hists.setdefault(name, (kind, Counter()))
        entry[1][hist_bin(kind, value)] += 1

    def sample(self, outcome: str, doc: dict[str, Any]) -> None:
        """Keep the first few documents of an outcome (text shortened): what a reviewer reads to judge a rule;
        a removal's evidence (``words=37 < 50``) with it."""
        evidence = getattr(outcome, "evidence", "")
        outcome = str(outcome)
        bucket = self.samples.setdefault(outcome, [])
        if len(bucket) < SAMPLES_PER_REASON:
            text = str(doc.get("text", ""))
            bucket.append(
                {
                    "id": str(doc.get("id", "")),
                    "ref": str(doc.get("ref", doc.get("id", ""))),
                    "url": str(
                        doc.get("metadata", {}).get("url", "")
                        if isinstance(doc.get("metadata"), dict)
                        else ""
                    ),
                    "chars": len(text),
                    "text": text[:SAMPLE_CHARS],
                    **({"evidence": evidence} if evidence else {}),
                }
            )

    def count_language(self, doc: dict[str, object], reason: str | None) -> None:
        """Count a decided document under its language (when language ID gave it one): kept (``reason`` None)
        or removed for ``reason``. Language ID's own removals count under the language it found."""
        meta = doc.get("metadata")
        language = meta.get("language") if isinstance(meta, dict) else None
        if not language:
            return
        counts = self.languages.setdefault(str(language), Counter())
        counts["in"] += 1
        counts["kept" if reason is None else str(reason)] += 1

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
            hists=_merge_hists(self.hists, other.hists),
            samples={
                k: (self.samples.get(k, []) + other.samples.get(k, []))[:SAMPLES_PER_REASON]
                for k in sorted(set(self.samples) | set(other.samples))
            },
            languages={
                k: self.languages.get(k, Counter()) + other.languages.get(k, Counter())
                for k in sorted(set(self.languages) | set(other.languages))
            },
        )

    def to_dict(self, detail: bool = True) -> dict[str, object]:
        """All counts; with ``detail``, also histograms and samples (left out of per-shard summaries)."""
        out = {
            "docs_in": self.docs_in,
            "docs_kept": self.docs_kept,
            "removed": dict(sorted(self.removed.items())),
            "skipped": dict(sorted(self.skipped.items())),
            "tokens": self.tokens,
            "bytes_in": self.bytes_in,
            "chars_out": self.chars_out,
            "counters": dict(sorted(self.counters.items())),
        }
        if detail:
            out["hists"] = {
                name: {"kind": kind, "bins": {str(b): n for b, n in sorted(bins.items())}}
                for name, (kind, bins) in sorted(self.hists.items())
            }
            out["samples"] = {k: v for k, v in sorted(self.samples.items())}
        if self.languages:  # only where language ID ran: other builds' records stay as they were
            out["by_language"] = {
                lang: {
                    "in": c["in"],
                    "kept": c["kept"],
                    "removed": {k: n for k, n in sorted(c.items()) if k not in ("in", "kept")},
                }
                for lang, c in sorted(self.languages.items())
            }
        return out

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
            hists={
                name: (h["kind"], Counter({int(b): n for b, n in h["bins"].items()}))
                for name, h in d.get("hists", {}).items()
            },
            samples={k: list(v) for k, v in d.get("samples", {}).items()},
            languages={
                lang: Counter({"in": c["in"], "kept": c["kept"], **c["removed"]})
                for lang, c in d.get("by_language", {}).items()
            },
        )


def _merge_hists(a: dict, b: dict) -> dict[str, tuple[str, Counter]]:
    out: dict[str, tuple[str, Counter]] = {}
    for name in sorted(set(a) | set(b)):
        kind = (a[name] if name in a else b[name])[0]
        out[name] = (
            kind,
            (a[name][1] if name in a else Counter()) + (b[name][1] if name in b else Counter()),
        )
    return out


def merge_all(items: list[StageStats]) -> StageStats:
    out = StageStats()
    for s in items:
        out = out.merge(s)
    return out
