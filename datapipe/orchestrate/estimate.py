"""A resource plan before the work (``--dry-run``): per stage, documents, bytes, time, memory, disk and shuffle.

How it is made:

1. **Sample the inputs.** Per source, the document count: Parquet's footers give it exactly; other formats are
   read whole when a source has less than ``SAMPLE_BYTES`` (an exact count), else over the start of up to
   ``SAMPLE_FILES`` files spread over the list, giving documents per input byte, applied to every byte. Up to ``SAMPLE_DOCS`` of those documents are kept: their text size (WARC
   pages: the text resiliparse extracts) and, for WARC, the time extraction takes on this machine.
2. **Apply measured costs.** ``REFERENCE`` holds, per stage, what ``benchmarks/scale.py`` measured on the scale
   corpus (2 workers on the 2-core reference machine; docs/scaling.md): CPU microseconds per character of text
   into the stage, the share of documents it keeps, a worker's resident memory while it runs, and what it writes.
   Costs are scaled by this machine's speed (the sample's extraction time over the reference's, for WARC) and by
   the sample's text size; a cached stage costs nothing and its real counts are used.
3. **Global phases** (sizes from their record formats): dedup shuffles 592 bytes a document (14 bands) plus 32
   for exact; a task holds one partition (8 input shards' keys) in the file shuffle, but with Beam's
   ``GroupByKey`` on the DirectRunner all of it, as Python objects (~10x); the components hold the near-duplicate
   edges; a ``keep_fraction`` cut-off holds 16 bytes a document; tokenize's consolidation holds one outer chunk
   of the cache (512 MiB of uint32) staged and encoded: ``CONSOLIDATION`` times the smaller of the cache and
   that chunk, over a worker's memory (measured: 793 MiB at 10^5 pages, 1,614 MiB at 10^6). Exact-substring dedup
   is planned by its own model (``datapipe.substrings.budget.plan``: chunks from the budget, pairs, peak, disk).

It is an estimate: keep rates and text sizes vary with the corpus (the scale benchmark prints estimate against
measured; within 2x there). Warnings name the flag that makes a local run fit.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from datapipe.config.mixture import SourceConfig
from datapipe.config.stages import SubstringsConfig
from datapipe.io import fs
from datapipe.orchestrate.plan import SourcePlan
from datapipe.store.tensorstore_spec import OUTER_CHUNK

SAMPLE_BYTES = 32 << 20  # read in all; a source smaller than this is counted exactly
SAMPLE_FILES = 8
SAMPLE_DOCS = 200
EXTRACT_TIMING_S = 1.0  # CPU seconds spent timing the sample's extraction (the fastest pass counts)
MIB = 1 << 20


@dataclass(frozen=True)
class StageCost:
    """One stage on the reference machine, per document into it."""

    cpu_us_per_char: float  # CPU time per character of text (extract: per byte of HTML)
    keep: float  # share of documents kept on the scale corpus
    rss_mb: float  # a worker's resident set while running the stage
    out_bytes_per_char: (
        float  # bytes written per character of kept text (zstd JSONL parts; tokenize: the cache)
    )


# Measured by benchmarks/scale.py (2026-12-02; scale corpus, 2 workers on the 2-core reference machine): the
# marginal cost between the 10,000- and 30,000-page builds (stage seconds x 2 workers over the characters, or for
# extract the HTML bytes, that entered the stage), the keep rate and the largest process at 30,000 pages.
# Recalibrated 2026-12-04 (fifth session) and 2026-12-05 (eleventh) the same way, each stage's cost scaled by its
# measured marginal seconds over the estimate's. In the eleventh: extract 3.6/4.7, filter 2.4/3.7, dedup 1.6/2.6,
# quality 0.9/1.0, tokenize 0.7/1.0 (the estimate had drifted to 2.1x the build as it got faster); the sample's
# extraction is timed with the default extractor, ``datapipe`` since 2026-12-04, which reads 0.0274 us a byte here
# where resiliparse read 0.021 (the old reference made this machine look 1.3x slower than itself); and the fixed
# costs are the line's intercepts (the build's time less its stages' own: 1.7 s at both sizes).
# paragraphs, decon and pii are not in that recipe: their costs are the filter stage's (a line-level pass of the
# same kind), their keep rates 1 minus what the demo build removes.
REFERENCE: dict[str, StageCost] = {
    "extract": StageCost(cpu_us_per_char=0.070, keep=0.70, rss_mb=341, out_bytes_per_char=0.40),
    "filter": StageCost(cpu_us_per_char=0.077, keep=0.925, rss_mb=412, out_bytes_per_char=0.40),
    "dedup": StageCost(cpu_us_per_char=0.056, keep=0.743, rss_mb=453, out_bytes_per_char=0.40),
    "paragraphs": StageCost(cpu_us_per_char=0.077, keep=0.98, rss_mb=453, out_bytes_per_char=0.40),
    "quality": StageCost(cpu_us_per_char=0.042, keep=1.00, rss_mb=477, out_bytes_per_char=0.40),
    "decon": StageCost(cpu_us_per_char=0.077, keep=0.99, rss_mb=477, out_bytes_per_char=0.40),
    "pii": StageCost(cpu_us_per_char=0.077, keep=1.00, rss_mb=477, out_bytes_per_char=0.40),
    "tokenize": StageCost(cpu_us_per_char=0.033, keep=1.00, rss_mb=582, out_bytes_per_char=0.45),
}
REFERENCE_EXTRACT_US_PER_BYTE = 0.0274  # the sample's timing (fastest pass), reference machine, scale corpus
STARTUP_S = 1.7  # a build's fixed cost (workers start; the build's time less its stages' own, at both sizes)
# a stage's own fixed cost, once a worker (lid.176, spaCy's tokenizer, the quality model, GPT-2's tokenizer): the
# intercept of its line through the two builds
STAGE_START_S = {"extract": 0.2, "filter": 0.4, "quality": 0.15, "tokenize": 0.15}
CONSOLIDATION = 1.8  # tokenize's consolidation holds this many times the chunk it writes (staged + encoded)
DEDUP_BYTES_PER_DOC = 592 + 32  # band records (14 x 40 bytes + header share) and the exact key
GROUPBY_OVERHEAD = 10  # Python objects in a DirectRunner GroupByKey, over their encoded bytes
EDGE_BYTES = 40 * 6  # an edge record and the arrays the components step builds from it


@dataclass
class SourceSample:
    """What sampling one source's inputs found."""

    input_bytes: int
    docs: int
    chars_per_doc: float  # text after extraction
    html_bytes_per_doc: float = 0.0  # WARC only
    extract_us_per_byte: float | None = None  # WARC only: measured on this machine
    exact: bool = True  # the count is exact (Parquet footers, or every file read whole)


@dataclass
class StageEstimate:
    source: str
    stage: str
    cached: bool
    docs_in: int
    input_mb: float
    seconds: float
    rss_mb: float
    disk_mb: float
    shuffle_mb: float = 0.0
    notes: list[str] = field(default_factory=list)


def _count_prefix(url: str, src: SourceConfig, limit: int) -> tuple[int, int, list[dict[str, Any]]]:
    """(bytes read, records, the first SAMPLE_DOCS records) over the first ``limit`` bytes of ``url``."""
    from datapipe.io.readers import read_shard
    from datapipe.io.shards import Shard
    from datapipe.io.tally import ReadTally

    size = fs.size(url)
    folder = tempfile.mkdtemp(prefix="datapipe-sample-")
    try:
        local = os.path.join(folder, os.path.basename(fs.local_path(url)) or "sample")
        with fs.fsspec_open(url, "rb") as f, open(local, "wb") as out:
            out.write(f.read(min(size, limit)))
        records: list[dict[str, object]] = []
        n = 0
        try:
            for rec in read_shard(
                Shard(0, local, "sample"), src.name, src.format, src.text_field, src.id_field, ReadTally()
            ):
                n += 1
                if len(records) < SAMPLE_DOCS:
                    records.append(rec)
        except Exception:  # noqa: BLE001 - a prefix ends mid-record; what came before it counts
            pass
        return min(size, limit), n, records
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def sample_source(src: SourceConfig, files: list[str]) -> SourceSample:
    """Document count and text size of one source's inputs, from the start of its first file."""
    from datapipe.io.readers import input_format

    sizes = [fs.size(u) for u in files]
    total = sum(sizes)
    if not files:
        return SourceSample(0, 0, 0.0)
    fmt = input_format(src.format)
    if fmt.rows is not None:  # the files say how many records they hold
        docs = 0
        for url in files:
            with fs.fsspec_open(url, "rb") as f:
                docs += fmt.rows(f)
        _, _, records = _count_prefix(files[0], src, sizes[0])
        exact = True
    elif total <= SAMPLE_BYTES:  # small: every file read whole, the count is exact
        docs, records = 0, []
        for url, size in zip(files, sizes, strict=True):
            _, n, got = _count_prefix(url, src, size)
            docs, records = docs + n, records + got[: SAMPLE_DOCS - len(records)]
        exact = True
    else:  # the start of up to SAMPLE_FILES files spread over the list: documents per byte, times every byte
        picked = sorted({round(i * (len(files) - 1) / max(1, SAMPLE_FILES - 1)) for i in range(SAMPLE_FILES)})
        read = n = 0
        records = []
        for i in picked:
            r, k, got = _count_prefix(files[i], src, SAMPLE_BYTES // len(picked))
            read, n, records = read + r, n + k, records + got[: SAMPLE_DOCS - len(records)]
        docs, exact = (round(n * total / read) if read else 0), False
    sample = SourceSample(total, docs, 0.0, exact=exact)
    if not records:
        return sample
    if fmt.pages:
        from datapipe.extract.html import HtmlExtractor

        extract = HtmlExtractor()
        pages = [(r["html"], r.get("charset")) for r in records if "html" in r]
        # the fastest of passes over the sample for at least EXTRACT_TIMING_S: one pass over 200 pages is ~35 ms
        # of CPU and varied 0.023-0.037 us a byte from call to call in one launcher process, and the whole plan
        # with it
        cpu, spent, passes = float("inf"), 0.0, 0
        while passes < 3 or spent < EXTRACT_TIMING_S:
            t0 = time.thread_time()
            texts = [extract(p) for p in pages]
            took = time.thread_time() - t0
            cpu, spent, passes = min(cpu, took), spent + took, passes + 1
        html = sum(len(p[0]) for p in pages)
        sample.html_bytes_per_doc = html / max(1, len(pages))
        sample.extract_us_per_byte = cpu * 1e6 / html if html else None
    else:
        texts = [r.get("text", "") for r in records]
    sample.chars_per_doc = sum(len(t) for t in texts) / max(1, len(texts))
    return sample


def estimate_source(sp: SourcePlan, sample: SourceSample, workers: int, parts: int) -> list[StageEstimate]:
    """Per stage of one source: its estimate (a cached stage: its real counts, no cost)."""
    from datapipe.runtime.stage import read_stage_json

    speed = 1.0
    if sample.extract_us_per_byte:
        speed = sample.extract_us_per_byte / REFERENCE_EXTRACT_US_PER_BYTE
    docs, chars = float(sample.docs), sample.chars_per_doc
    out: list[StageEstimate] = []
    for st in sp.stages:
        cost = REFERENCE.get(st.stage, REFERENCE["filter"])
        if st.done:
            counts = read_stage_json(st.out_dir)["counts"]
            out.append(StageEstimate(sp.source.name, st.stage, True, counts["docs_in"], 0.0, 0.0, 0.0, 0.0))
            docs = float(counts["docs_kept"])
            continue
        if st.stage == "extract" and sample.html_bytes_per_doc:
            work_units, input_mb = docs * sample.html_bytes_per_doc, sample.input_bytes / MIB
        else:
            work_units, input_mb = docs * chars, docs * chars * cost.out_bytes_per_char / MIB
        cpu = work_units * cost.cpu_us_per_char * speed / 1e6
        kept = docs * cost.keep
        est = StageEstimate(
            sp.source.name,
            st.stage,
            False,
            round(docs),
            input_mb,
            cpu / max(1, workers) + STAGE_START_S.get(st.stage, 0.0),
            cost.rss_mb,
            kept * chars * cost.out_bytes_per_char / MIB,
        )
        if st.stage == "dedup":
            est.shuffle_mb = docs * DEDUP_BYTES_PER_DOC / MIB
            est.disk_mb += docs * (DEDUP_BYTES_PER_DOC + chars / 6 * 8) / MIB  # index/ and shingles/
            partition = est.shuffle_mb / max(1, parts)
            edges = docs * (1 - cost.keep) * EDGE_BYTES / MIB
            est.rss_mb = max(est.rss_mb, cost.rss_mb + 3 * partition, cost.rss_mb + edges)
            est.notes.append(f"{parts} partition(s) of ~{partition:,.0f} MiB; components ~{edges:,.0f} MiB")
        if st.stage == "paragraphs":
            est.shuffle_mb = docs * chars / 60 * 40 / MIB  # a line record per ~60 characters
            est.rss_mb = max(est.rss_mb, cost.rss_mb + 3 * est.shuffle_mb / max(1, parts))
        if st.stage == "substrings" and sp.source.substrings is not None:
            _substrings(est, sp.source.substrings, docs * chars)
        if st.stage == "tokenize":  # one process writes the cache an outer chunk at a time
            est.rss_mb = cost.rss_mb + CONSOLIDATION * min(est.disk_mb, OUTER_CHUNK * 4 / MIB)
        if st.stage == "quality" and getattr(sp.source.quality, "keep_fraction", None):
            est.rss_mb = max(est.rss_mb, cost.rss_mb + docs * 32 / MIB)
        out.append(est)
        docs = kept
    return out


def _substrings(est: StageEstimate, cfg: SubstringsConfig, chars: float) -> None:
    """Exact-substring dedup's plan (:func:`datapipe.substrings.budget.plan`): its text (about a byte a character
    of the sampled text; more in scripts of several bytes a character) in chunks sized by the budget, the pair
    merges, the peak memory of the whole phase, its work folder (kept with the stage for later builds) and
    time."""
    from datapipe.substrings.budget import plan
    from datapipe.substrings.phase import threads

    prior = sum(_work_bytes(stage_dir) for stage_dir in cfg.against)
    sized = plan(int(chars), cfg.budget_mb, cfg.min_bytes, threads(), prior_bytes=prior)
    est.seconds += sized.seconds
    est.rss_mb = max(est.rss_mb, float(sized.peak_mb))
    est.disk_mb += sized.disk_mb * 1e6 / MIB
    est.notes.append(sized.line())


def _work_bytes(stage_dir: str) -> int:
    """The text bytes of an earlier build's substrings stage (its work folder's layout); 0 if it has none."""
    from datapipe.substrings.stage import WORK
    from datapipe.substrings.work import SubstringsError, read_layout

    try:
        return read_layout(fs.local_path(fs.join(stage_dir, WORK))).total_bytes
    except SubstringsError:
        return 0


def plan_resources(
    plans: list[SourcePlan], files: dict[str, list[str]], workers: int, in_memory_shuffle: bool
) -> tuple[list[StageEstimate], list[str]]:
    """Every stage's estimate, and the warnings (one line each, naming the flag to use)."""
    from datapipe.dedup.spill import partition_count

    estimates: list[StageEstimate] = []
    for sp in plans:
        # a Common Crawl source's files are not fetched to plan: its fetch is planned apart (files, bytes, time)
        crawl = sp.source.commoncrawl is not None
        sample = sample_source(sp.source, [] if crawl else files.get(sp.source.name, []))
        parts = partition_count(len(sp.stages[0].shards)) if sp.stages else 1
        estimates += estimate_source(sp, sample, workers, parts)
    mem_total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / MIB
    return estimates, resource_warnings(estimates, workers, in_memory_shuffle, mem_total)


def resource_warnings(
    estimates: list[StageEstimate], workers: int, in_memory_shuffle: bool, mem_total_mb: float
) -> list[str]:
    """One line per way the local run would not fit, with the flag that makes it fit."""
    warnings: list[str] = []
    todo = [e for e in estimates if not e.cached]
    worst = max(todo, key=lambda e: e.rss_mb, default=None)
    if worst is not None and worst.rss_mb * workers > 0.8 * mem_total_mb:
        fit = max(1, int(0.8 * mem_total_mb // max(1.0, worst.rss_mb)))
        warnings.append(
            f"warning: {worst.source}/{worst.stage} needs ~{worst.rss_mb:,.0f} MiB a worker x {workers} workers, "
            f"this machine has {mem_total_mb:,.0f} MiB: use --direct_num_workers={fit} (Beam) or --workers {fit} "
            "(datatrove)"
        )
    if in_memory_shuffle:
        held = sum(e.shuffle_mb for e in todo) * GROUPBY_OVERHEAD
        if held > 0.5 * mem_total_mb:
            warnings.append(
                f"warning: the DirectRunner would hold ~{held:,.0f} MiB of dedup keys in memory "
                f"({mem_total_mb:,.0f} MiB here): use --global-shuffle files"
            )
    return warnings


def format_plan(estimates: list[StageEstimate], workers: int, output: str) -> str:
    lines = [
        f"resource plan ({workers} worker(s); estimates from sampled inputs and measured per-stage costs, "
        "see datapipe/orchestrate/estimate.py):",
        f"  {'source':<18} {'stage':<11} {'docs in':>12} {'input MB':>10} {'est. s':>9} {'MB/worker':>10} "
        f"{'disk MB':>9} {'shuffle MB':>11}",
    ]
    for e in estimates:
        if e.cached:
            lines.append(f"  {e.source:<18} {e.stage:<11} {e.docs_in:>12,} {'cached':>10}")
            continue
        lines.append(
            f"  {e.source:<18} {e.stage:<11} {e.docs_in:>12,} {e.input_mb:>10,.1f} {e.seconds:>9,.0f} "
            f"{e.rss_mb:>10,.0f} {e.disk_mb:>9,.1f} {e.shuffle_mb:>11,.1f}"
            + (f"  ({'; '.join(e.notes)})" if e.notes else "")
        )
    todo = [e for e in estimates if not e.cached]
    total_s = sum(e.seconds for e in todo) + (STARTUP_S if todo else 0.0)
    disk = sum(e.disk_mb for e in todo)
    peak = max((e.rss_mb for e in todo), default=0.0)
    free = _free_mb(output)
    lines.append(
        f"  total: ~{total_s:,.0f} s, peak ~{peak:,.0f} MiB a worker, ~{disk:,.0f} MiB written to {output}"
        + (f" ({free:,.0f} MiB free there)" if free is not None else "")
    )
    if free is not None and disk > free:
        lines.append(
            f"warning: the build would write ~{disk:,.0f} MiB but {free:,.0f} MiB are free: use --output on a "
            "larger disk"
        )
    return "\n".join(lines)


def _free_mb(output: str) -> float | None:
    """Free space where a local output folder is (its nearest existing folder); None for object stores."""
    if not fs.is_local(output):
        return None
    path = os.path.abspath(fs.local_path(output))
    while not os.path.isdir(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return shutil.disk_usage(path).free / MIB
