"""The ``pii`` stage: every document's text scrubbed (:func:`datapipe.pii.scrub.scrub`); nothing is removed, counts
per kind go to the stage's counters (``pii/<kind>``, ``pii/documents_changed``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from datapipe.config.stages import PIIConfig
from datapipe.pii.scrub import scrub
from datapipe.runtime.stage import ConfiguredStage
from datapipe.runtime.stats import StageStats


@dataclass
class PIIStage(ConfiguredStage[PIIConfig]):
    name: str = "pii"

    def keep(self, index: int, doc: dict[str, Any], stats: StageStats) -> str | None:
        text, counts = scrub(doc["text"], self.config)
        if counts:
            for kind, n in counts.items():
                stats.counters[f"pii/{kind}"] += n
            if text != doc["text"]:
                stats.counters["pii/documents_changed"] += 1
                doc["text"] = text
        return None
