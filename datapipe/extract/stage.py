"""The ``extract`` stage: read an input shard, turn HTML into text, identify the language, write documents.

For JSONL and Parquet sources the text is already there; the stage still reads, normalizes the record shape and
counts, so every later stage sees one format: ``part-NNNNN.jsonl.zst`` per input shard, in input order.

HTML extraction runs with a per-document time limit (``extract.timeout_s``): in a sandboxed child process
(:mod:`datapipe.extract.sandbox`), or in the worker itself where the engine watches its pages and stops a worker
that hangs or dies on one (:meth:`ExtractStage.supervise`; the local engine). Either way such a page is removed as
``extract/timeout`` or ``extract/crash`` with the same note. Language ID (``langid``) runs in the worker on the
extracted text, as DCLM does, and removes what the keep-rules reject.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from datapipe.config.mixture import SourceConfig
from datapipe.crawl import coverage
from datapipe.crawl.fetch import Missing
from datapipe.crawl.source import fetch_into, files_dir
from datapipe.extract.html import Extracted, HtmlExtractor
from datapipe.extract.sandbox import Failed, Sandbox
from datapipe.extract.spaces import as_written
from datapipe.io import fs
from datapipe.io.jsonl import write_records_atomic
from datapipe.io.readers import input_format, read_shard
from datapipe.io.shards import Shard
from datapipe.io.tally import ReadTally
from datapipe.langid.identifier import LanguageIdentifier, LanguageSelection
from datapipe.runtime.decisions import RemovedLog, removed_url
from datapipe.runtime.evidence import Removal
from datapipe.runtime.heartbeat import Heartbeat
from datapipe.runtime.stage import StageBase
from datapipe.runtime.stats import StageStats, merge_all
from datapipe.runtime.watch import Watch

BATCH = 64  # pages sent to the extraction process at once


def _identified(reason: str | None) -> bool:
    """A removal by language ID: its text, extracted here, is kept in the removal list (the browser shows it)."""
    return str(reason or "").startswith("langid/")


def _page_rule(cfg: SourceConfig) -> str:
    """The source's page-type rule as the evidence of a removal says it (``keep: article, forum``)."""
    return "; ".join(f"{how}: {', '.join(types)}" for how, types in cfg.extract.page_types)


def account_read(tally: ReadTally, stats: StageStats) -> None:
    """The reader's counts as the stage's: every record met is a document in; one it could not make a document of
    is removed with its kind as the reason (``read/...``); what is no record of a document is skipped
    (``warc/request``, ``read/empty_file``, ...); notes become counters."""
    stats.docs_in += tally.records
    stats.bytes_in += tally.bytes
    for kind, n in tally.unusable.items():
        stats.remove(kind, n)
    for kind, n in tally.not_records.items():
        stats.skip(kind, n)
    for kind, n in tally.notes.items():
        stats.counters[kind] += n


# a small page every extraction method parses once in a new sandbox child before its time limit applies
WARMUP_PAGE = (
    b"<html><head><title>t</title></head><body><article><p>A first page.</p></article></body></html>",
    "utf-8",
)


@dataclass
class ExtractStage(StageBase):
    source_config: SourceConfig
    out_dir: str
    name: str = "extract"
    keep_removed = False  # not a field: the planner sets it for a source's keep_removed
    _sandbox: Sandbox | None = field(default=None, repr=False)
    _lid: LanguageIdentifier | None = field(default=None, repr=False)
    _select: LanguageSelection | None = field(default=None, repr=False)
    _watch: Watch | None = field(default=None, repr=False)  # the engine's, when it guards the pages
    # the shard's pages that hung or crashed a process before (their places -> why), when the engine guards them
    _failed: Mapping[int, str] = field(default_factory=dict, repr=False)
    _warm: bool = field(default=False, repr=False)  # the extractor has run once in this process (see setup)

    def __getstate__(self) -> dict[str, object]:  # worker resources are rebuilt in setup(), never pickled
        return {
            **self.__dict__,
            "_sandbox": None,
            "_lid": None,
            "_select": None,
            "_watch": None,
            "_failed": {},
            "_warm": False,
        }

    @property
    def source(self) -> str:
        return self.source_config.name

    @property
    def extractor(self) -> HtmlExtractor:
        return HtmlExtractor.from_config(self.source_config.extract)

    @property
    def item_limit_s(self) -> float:
        """A page's time limit: ``timeout_s`` where HTML is extracted, else 0 (no limit)."""
        cfg = self.source_config
        return cfg.extract.timeout_s if input_format(cfg.format).pages else 0.0

    def supervise(self, watch: Watch, failed: Mapping[int, str]) -> None:
        """Extract in this process, each page marked on ``watch`` for the engine, which stops a process that runs
        past ``timeout_s`` on a page or dies on one and runs the shard again with ``failed`` (a page's place in
        the shard -> :data:`~datapipe.runtime.watch.TIMEOUT` or ``CRASH``): those pages are recorded as failed,
        not extracted. Called before each shard; no sandbox is started."""
        if self.item_limit_s > 0:
            self._watch, self._failed = watch, failed

    def setup(self) -> None:
        cfg = self.source_config
        if self.item_limit_s > 0 and self._watch is None and self._sandbox is None:
            self._sandbox = Sandbox(self.extractor.extract, cfg.extract.timeout_s, warmup=WARMUP_PAGE)
            self._sandbox.start()  # the child imports while the model below loads and the first batch is read
        if self._watch is not None and not self._warm:
            # what the extractor loads on its first call is loaded before any page's time counts, as in a new
            # sandbox child: a process that replaced one stopped on a page once lost its first page so
            with contextlib.suppress(Exception):
                self.extractor.extract(WARMUP_PAGE)
            self._warm = True
        if cfg.langid is not None and self._lid is None:
            self._lid = LanguageIdentifier(cfg.langid.model)

    def part_url(self, shard: Shard) -> str:
        return fs.join(self.out_dir, shard.records)

    def has_output(self, shard: Shard) -> bool:
        # a crawl file that was missing is tried again by the next run
        return fs.exists(self.part_url(shard)) and not fs.exists(self._missing_url(shard))

    def _missing_url(self, shard: Shard) -> str:
        return fs.join(self.out_dir, f"{shard.part}.missing.json")

    def _crawl_file(self, shard: Shard, stats: StageStats) -> Shard | None:
        """A Common Crawl source's file, fetched whole into the build (a whole copy a killed run left is read as
        it is); None when it cannot be had: counted, and its URL and why written beside the shard's part."""
        cc = self.source_config.commoncrawl
        assert cc is not None
        folder = files_dir(fs.parent(self.out_dir))
        try:
            local, got = fetch_into(shard.url, folder, cc.fetch)
        except Missing as e:
            coverage.count(stats.counters, None, fetched=False)
            why = str(e).removeprefix(f"{shard.url}: ")
            fs.write_text_atomic(
                self._missing_url(shard), json.dumps({"file": shard.name, "why": why}) + "\n"
            )
            return None
        # a whole copy a killed run left is read without a request
        coverage.count(stats.counters, got, fetched=got.requests > 0)
        if fs.exists(self._missing_url(shard)):
            fs.remove(self._missing_url(shard))
        return Shard(index=shard.index, url=local, name=shard.name)

    def _extract_batch(self, batch: list[dict], places: list[int]) -> list[Extracted | Failed]:
        # the URL helps the learned extractor tell the page's type
        items = [(rec.pop("html"), rec.pop("charset"), rec["metadata"].get("url") or "") for rec in batch]
        if self._sandbox is not None:
            return self._sandbox.run(items)
        extract, watch, limit = self.extractor.extract, self._watch, self.item_limit_s
        out: list[Extracted | Failed] = []
        for place, item in zip(places, items, strict=True):
            if place in self._failed:
                out.append(Failed.watched(self._failed[place], limit))
                continue
            if watch is not None:
                watch.enter(place, limit)
            try:
                out.append(extract(item))
            except Exception as e:  # a parser error on one page removes that page only
                out.append(Failed.raised(e))
            finally:
                if watch is not None:
                    watch.leave()
        return out

    def _keep(self, rec: dict, text: str, stats: StageStats, extracted: bool) -> bool:
        spaced = as_written(text, extracted=extracted, normalize=self.source_config.extract.normalize_spaces)
        if spaced is not text:
            stats.counters["extract/spaces_normalized"] += 1
            text = spaced
        if not text.strip():
            stats.remove(Removal("extract/empty", "chars", len(text.strip())))
            return False
        rec["text"] = text
        lid = self.source_config.langid
        if lid is not None and self._lid is not None:
            pred = self._lid.predict(text)
            rec["metadata"]["language"] = pred.language
            rec["metadata"]["language_score"] = round(pred.score, 4)
            stats.observe("langid/score", pred.score, "unit")
            if self._select is None:
                self._select = LanguageSelection.of(lid.languages, lid.min_score, self._lid.scripted)
            why = self._select.judge(pred)
            if why is not None:
                stats.remove(why)
                stats.sample(why, rec)
                return False
        return True

    def process_shard(self, shard: Shard, beat: Heartbeat | None = None) -> StageStats:
        self.setup()
        cfg = self.source_config
        stats = StageStats()
        docs: list[dict] = []
        pending: list[dict] = []
        removed = RemovedLog(self.keep_removed)
        places: list[int] = []  # of the pending pages among the shard's documents

        def flush_html() -> None:
            for place, rec, got in zip(places, pending, self._extract_batch(pending, places), strict=True):
                if isinstance(got, Failed):
                    why = Removal(f"extract/{got.reason}", note=got.detail or None)
                    stats.remove(why)
                    removed.add(place, rec, why)
                    continue
                if got.title:  # the page's headline: metadata, not text (datapipe's extractor)
                    rec["metadata"]["title"] = got.title
                if got.page_type is not None:  # datapipe's learned extractor
                    rec["metadata"]["page_type"] = got.page_type
                    rec["metadata"]["page_type_score"] = round(got.page_type_score, 4)
                    stats.counters[f"extract/page_type/{got.page_type}"] += 1
                    if not cfg.extract.page_type_kept(got.page_type):
                        why = Removal("extract/page_type", "page_type", got.page_type, note=_page_rule(cfg))
                        stats.remove(why)
                        removed.add(place, rec, why)
                        continue
                if self._keep(rec, got.text, stats, extracted=True):
                    stats.count_language(rec, None)
                    docs.append(rec)
                else:
                    stats.count_language(rec, stats.last_reason or "")
                    removed.add(place, rec, stats.last_reason or "", with_text=_identified(stats.last_reason))
            pending.clear()
            places.clear()

        tally = ReadTally()
        place = -1  # the record's place among the shard's documents
        reading: Shard | None = shard
        if cfg.commoncrawl is not None:
            reading = self._crawl_file(shard, stats)
        records = (
            read_shard(
                reading,
                cfg.name,
                cfg.format,
                cfg.text_field,
                cfg.id_field,
                tally,
                max_record_bytes=cfg.extract.max_record_bytes,
                max_html_bytes=cfg.extract.max_bytes,
                url_prefix=cfg.url_prefix,
            )
            if reading is not None
            else iter(())  # a missing crawl file: no documents, counted as missing
        )
        for rec in records:
            place += 1
            if beat is not None:
                beat.position = tally.bytes_read
                beat.tick(place)
            if "html" in rec:
                pending.append(rec)
                places.append(place)
                if len(pending) >= BATCH:
                    flush_html()
            else:
                flush_html()  # keep input order when a file mixes HTML and text records
                if self._keep(rec, rec["text"], stats, extracted=False):
                    stats.count_language(rec, None)
                    docs.append(rec)
                else:
                    stats.count_language(rec, stats.last_reason or "")
                    removed.add(place, rec, stats.last_reason or "", with_text=_identified(stats.last_reason))
        flush_html()
        account_read(tally, stats)
        for rec in docs:
            stats.chars_out += len(rec["text"])
            stats.observe("kept_chars", len(rec["text"]))
            stats.sample("kept", rec)
        stats.docs_kept = len(docs)
        write_records_atomic(self.part_url(shard), docs)
        removed.write(removed_url(self.out_dir, shard))
        removed.write_documents(self.out_dir, shard)
        if cfg.commoncrawl is not None and reading is not None and not cfg.commoncrawl.keep_files:
            os.remove(reading.url)  # read and committed: the build holds its documents now
        return stats

    def finalize(self, shards: list[Shard], stats: list[StageStats]) -> dict[str, object]:
        out: dict[str, object] = {"parts": [s.records for s in shards]}
        cc = self.source_config.commoncrawl
        if cc is not None:
            missing = [
                json.loads(fs.read_text(self._missing_url(s)))
                for s, st in zip(shards, stats, strict=True)
                if st.counters.get(coverage.PREFIX + "missing")
            ]
            total = merge_all(stats)
            cov = coverage.coverage(cc.to_dict(), total.counters, missing, cc.allow_missing, total.docs_in)
            coverage.check(cov, f"sources.{self.source}.commoncrawl")
            out["crawl"] = cov
        return out

    def teardown(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
