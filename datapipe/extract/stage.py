"""The ``extract`` stage: read an input shard, turn HTML into text, write Dolma-style documents.

For JSONL and Parquet sources the text is already there; the stage still reads, normalizes the record shape and
counts, so every later stage sees one format: ``part-NNNNN.jsonl.zst`` per input shard, in input order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from datapipe.config import SourceConfig
from datapipe.extract.html import decode_html, html_to_text
from datapipe.io import fs
from datapipe.io.jsonl import write_records_atomic
from datapipe.io.readers import read_shard
from datapipe.io.shards import Shard
from datapipe.stats import StageStats


@dataclass
class ExtractStage:
    source_config: SourceConfig
    out_dir: str
    name: str = "extract"

    @property
    def source(self) -> str:
        return self.source_config.name

    def setup(self) -> None:
        pass

    def part_url(self, shard: Shard) -> str:
        return fs.join(self.out_dir, f"{shard.part}.jsonl.zst")

    def has_output(self, shard: Shard) -> bool:
        return fs.exists(self.part_url(shard))

    def process_shard(self, shard: Shard) -> StageStats:
        cfg = self.source_config
        stats = StageStats()
        docs = []
        for rec in read_shard(shard, cfg.name, cfg.format, cfg.text_field, cfg.id_field, stats):
            if "html" in rec:
                html = decode_html(rec.pop("html"), rec.pop("charset"))
                text = html_to_text(
                    html,
                    main_content=cfg.extract.main_content,
                    preserve_formatting=cfg.extract.preserve_formatting,
                )
            else:
                text = rec["text"]
            if not text.strip():
                stats.remove("extract/empty")
                continue
            rec["text"] = text
            stats.docs_kept += 1
            stats.chars_out += len(text)
            docs.append(rec)
        write_records_atomic(self.part_url(shard), docs)
        return stats

    def finalize(self, shards: list[Shard], stats: list[StageStats]) -> dict[str, Any]:
        return {"parts": [f"{s.part}.jsonl.zst" for s in shards]}
