"""Quality scoring: the ``quality`` stage against bare batched fastText ``predict`` on the same documents, one run.

The model is the bundled recipe's (``classifiers/fixture_quality.yaml``, trained if needed). Documents: the first
``--docs`` real documents of ``benchmarks/corpus.py``. Bare: ``model.predict(texts, k=2)`` on the preprocessed texts
already in memory, in batches of 512. Stage: ``QualityStage.process_shard`` on the same documents as zstd JSONL
parts (read, preprocess, batched predict, scores into metadata, threshold, write). Both in this process, one
after the other, each the best of ``--tries`` wall-clock (``perf_counter``) runs after one untimed run (until
2026-12-07 only the bare side had one).

Last line: ``bench: quality stage_vs_bare=X``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from corpus import best_of, documents  # noqa: E402

from datapipe import (  # noqa: E402
    ClassifierRef,
    QualityConfig,
    QualityStage,  # noqa: E402
    Shard,  # noqa: E402
    load_fasttext,  # noqa: E402
    load_recipe,  # noqa: E402
    preprocess,  # noqa: E402
    write_records_atomic,  # noqa: E402
)
from datapipe import train_classifier as train  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=5000)
    ap.add_argument("--tries", type=int, default=3)
    ap.add_argument("--shard-docs", type=int, default=1000)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as work:
        model_url = train(load_recipe("fixture_quality"), os.path.join(work, "classifiers")).model_url
        docs = documents(args.docs)
        texts = [t for _, t in docs]
        model = load_fasttext(model_url)

        def bare() -> None:
            for start in range(0, len(texts), 512):
                model.predict([preprocess(t) for t in texts[start : start + 512]], k=2)

        upstream = os.path.join(work, "upstream")
        shards = []
        for k, start in enumerate(range(0, len(docs), args.shard_docs)):
            chunk = docs[start : start + args.shard_docs]
            write_records_atomic(
                os.path.join(upstream, f"part-{k:05d}.jsonl.zst"),
                ({"id": i, "text": t, "source": "b", "metadata": {}} for i, t in chunk),
            )
            shards.append(Shard(k, f"part-{k:05d}", f"part-{k:05d}"))
        config = QualityConfig((ClassifierRef("fq", model_url),), "fq", threshold=0.5)
        stage = QualityStage("bench", config, upstream, os.path.join(work, "quality"))
        stage.setup()

        def staged() -> None:
            for shard in shards:
                stage.process_shard(shard)

        bare()  # one untimed run on each side: the page cache and fastText
        staged()
        t_bare = best_of(args.tries, bare)
        t_stage = best_of(args.tries, staged)

    n = len(texts)
    chars = sum(map(len, texts))
    print(
        f"{n} real documents ({chars / n:,.0f} characters on average), model {Path(model_url).name}, one core"
    )
    print(f"{'bare batched predict (texts in memory)':<52} {t_bare:>7.2f}s {n / t_bare:>9.0f} docs/s")
    print(f"{'quality stage (read, score, select, write)':<52} {t_stage:>7.2f}s {n / t_stage:>9.0f} docs/s")
    print(f"bench: quality stage_vs_bare={t_bare / t_stage:.2f}")


if __name__ == "__main__":
    main()
