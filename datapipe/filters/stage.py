"""The ``filter`` stage: heuristic rules and line modifiers over extracted documents.

A removed document is counted under ``filter/<rule>``; a kept one may come out with lines removed (RefinedWeb's
modifiers, C4's line rules).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from datapipe.config.stages import FilterConfig
from datapipe.evidence import prefixed
from datapipe.filters.document import FilterDoc
from datapipe.filters.presets import FilterChain, build_chain
from datapipe.stage import DocumentStage
from datapipe.stats import StageStats


@dataclass
class FilterStage(DocumentStage):
    source: str
    config: FilterConfig
    input_dir: str
    out_dir: str
    name: str = "filter"
    _chain: FilterChain | None = field(default=None, repr=False)

    def setup(self) -> None:
        if self._chain is None:
            c = self.config
            self._chain = build_chain(
                c.preset, dict(c.overrides), url_blocklist=c.url_blocklist, bad_words=c.bad_words
            )

    def keep(self, index: int, doc: dict[str, Any], stats: StageStats) -> bool:
        assert self._chain is not None
        view = FilterDoc(doc["text"], url=doc["metadata"].get("url", ""))
        reason = self._chain.apply(view)
        if reason is not None:
            stats.remove(prefixed("filter", reason))
            return False
        doc["text"] = view.text
        return True
