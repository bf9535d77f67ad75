"""Extraction and filter throughput, side by side with the bare libraries and with datatrove, in one process.

1. The ``extract`` stage (WARC read + HTTP parse + charset decode + resiliparse extraction in the sandbox + fastText
   language ID + writing the part file) against bare ``resiliparse.extract_plain_text`` plus bare ``lid.176.ftz``
   prediction on the same pages, already in memory and decoded. Target: the stage reaches >= 0.7 of bare docs/s.
2. The ``filter`` stage's rules (``refinedweb`` preset: Gopher quality + Gopher repetition + RefinedWeb line
   modifiers) against datatrove's ``GopherRepetitionFilter`` + ``GopherQualityFilter`` with the same thresholds,
   run as datatrove pipeline steps, on the same documents (each once; our word memo starts cold). Target: >= 3x.

Corpus: the fixture crawl WARCs (real Debian documentation pages), read ``--repeat`` times; the filter part uses
the text of every fixture document. Run: ``.venv/bin/python benchmarks/extract.py``. The last line is
``bench: extract stage_vs_bare=X filters_vs_datatrove=Y``.

Timing, every side alike: wall clock in this process, each side once untimed and then the best of ``--tries``
(the filter part: of ``--tries`` - 1), so every side is warm (the sandbox process, the page cache, first calls).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ.setdefault("HF_HOME", tempfile.mkdtemp(prefix="hf-"))  # datatrove must never try a download

from corpus import best_of, fixture_documents  # noqa: E402
from fastwarc.warc import ArchiveIterator, WarcRecordType  # noqa: E402
from resiliparse.extract.html2text import extract_plain_text  # noqa: E402
from resiliparse.parse.encoding import bytes_to_str  # noqa: E402

from datapipe import (  # noqa: E402  # noqa: E402
    ExtractStage,  # noqa: E402
    FilterDoc,
    LangidConfig,  # noqa: E402
    Shard,
    build_chain,
    bundled_model_path,
    load_fasttext,
    load_mixture,
)
from pipelines.mixtures import BUNDLED  # noqa: E402

CORPORA = REPO / "tests" / "fixtures" / "corpora"
WARCS = sorted((CORPORA / "crawl").glob("docs-*.warc.gz"))


def bench_extract(repeat: int, tries: int) -> tuple[float, float, int]:
    # the same pages, in memory and decoded, for the bare loop
    pages = []
    for path in WARCS:
        with open(path, "rb") as f:
            for rec in ArchiveIterator(f, record_types=WarcRecordType.response, parse_http=True):
                pages.append(bytes_to_str(rec.reader.read(), rec.http_charset or "utf-8"))
    pages = pages * repeat
    model = load_fasttext(bundled_model_path())  # bare fastText (the stage computes the same bits faster)

    def bare() -> None:
        for html in pages:
            text = extract_plain_text(html, main_content=True)
            model.predict(text.replace("\n", " "), k=1)

    mix = load_mixture("dclm_phase3.yaml", search=(BUNDLED,))
    from dataclasses import replace

    src = replace(mix.source("dolmino_dclm"), langid=LangidConfig(languages=("en",), min_score=0.65))
    out = tempfile.mkdtemp(prefix="bench-extract-")
    stage = ExtractStage(src, out)
    stage.setup()
    shards = [Shard(i, str(p), p.name) for i, p in enumerate(WARCS)]

    def staged() -> None:
        for _ in range(repeat):
            for shard in shards:
                stage.process_shard(shard)

    staged()  # warm the sandbox process and the page cache
    bare()  # and the bare libraries alike: each side gets one untimed run before its best of `tries`
    t_bare = best_of(tries, bare)
    t_stage = best_of(tries, staged)
    stage.teardown()
    shutil.rmtree(out)
    return t_bare, t_stage, len(pages)


def bench_filters(texts: list[str], tries: int) -> tuple[float, float, int, int]:
    from datatrove.data import Document
    from datatrove.pipeline.filters import GopherQualityFilter, GopherRepetitionFilter

    from datapipe import spacy_words as words

    def ours() -> int:
        words.splitter.cache_clear()  # a cold word memo, as on a fresh worker
        chain = build_chain("refinedweb")
        return sum(chain.apply(FilterDoc(t)) is None for t in texts)

    def theirs() -> int:
        docs = (Document(text=t, id=str(i)) for i, t in enumerate(texts))
        rep = GopherRepetitionFilter()
        qual = GopherQualityFilter(max_non_alpha_words_ratio=None)
        return sum(1 for _ in qual.run(rep.run(docs)))

    kept_theirs = theirs()  # also loads spaCy once, outside the timing
    kept_ours = ours()
    t_ours = best_of(tries, ours)
    t_theirs = best_of(tries, theirs)
    return t_ours, t_theirs, kept_ours, kept_theirs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=8, help="read the crawl this many times (default 8)")
    ap.add_argument("--tries", type=int, default=3, help="best of N timings (default 3)")
    args = ap.parse_args()

    t_bare, t_stage, n = bench_extract(args.repeat, args.tries)
    texts = [t for _, t in fixture_documents()]  # every fixture document, HTML extracted
    t_ours, t_theirs, kept_ours, kept_theirs = bench_filters(texts, max(1, args.tries - 1))
    stage_vs_bare = t_bare / t_stage
    filters_vs = t_theirs / t_ours
    print(f"pages: {n} real HTML pages ({len(WARCS)} WARC files x {args.repeat}); filter docs: {len(texts)}")
    print(f"{'what':<58} {'seconds':>8} {'docs/s':>9}")
    print(f"{'bare resiliparse extract_plain_text + lid.176 predict':<58} {t_bare:>8.3f} {n / t_bare:>9.0f}")
    print(
        f"{'extract stage (WARC read, decode, sandbox, langid, write)':<58} {t_stage:>8.3f} {n / t_stage:>9.0f}"
    )
    print(
        f"{'datatrove GopherRepetition + GopherQuality':<58} {t_theirs:>8.3f} {len(texts) / t_theirs:>9.0f}"
    )
    print(
        f"{'datapipe refinedweb (same rules + line modifiers)':<58} {t_ours:>8.3f} {len(texts) / t_ours:>9.0f}"
    )
    print(
        f"documents kept: datatrove {kept_theirs} (Gopher rules), datapipe {kept_ours} (also line modifiers)"
    )
    print(f"bench: extract stage_vs_bare={stage_vs_bare:.2f} filters_vs_datatrove={filters_vs:.2f}")


if __name__ == "__main__":
    main()
