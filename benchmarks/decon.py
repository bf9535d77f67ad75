"""Decontamination: datapipe's ``decon`` stage against datatrove's n-gram decontamination, same documents and items.

Documents: the first ``--docs`` real documents of ``benchmarks/corpus.py``. Evaluation items: ``--items``
question/answer pairs, each two lines (15+ and 13+ words) of one real document from beyond those (so written from
real text, like the unit test's; lines that also occur in the documents are passed over); ``--planted`` of the documents get a copy of an item inserted whole at a random
line, and ``--planted`` more get only its question. The rest are unplanted.

* datapipe: ``DeconStage`` (13-grams, threshold 0.5, document scope, exact index built from a JSONL file) deciding
  every document, index build included.
* datatrove: ``NGramsDecontFilter`` with 13-grams and query n-grams on (so a question alone can match, as ours
  can), reading an index written with datatrove's own ``NGramsDecontIndexer.compute_hashes`` (its ``run`` needs
  lighteval to fetch benchmark tasks, which cannot be downloaded here), over the same texts as datatrove
  ``Document``s; index build (a word tokenizer loaded, the items hashed, the file written) and load included.

Both sides run in this process, one after the other (datapipe first), on texts already in memory, and are timed the
same way: once, by wall clock (``perf_counter``), no warm-up on either, from the items to the last decision (imports
outside). Until 2026-12-07 datatrove's index was built (spaCy imported, the items hashed) before its clock
started, while ours was built inside it. Recall: planted documents removed. Removals among unplanted documents are
printed too (a document may share text with an item for real).

Last line: ``bench: decon vs_datatrove=X recall=R`` (X = datatrove seconds / datapipe seconds; R = our recall).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from corpus import documents  # noqa: E402

from datapipe import (  # noqa: E402
    DeconConfig,
    DeconStage,  # noqa: E402
    EvalSet,
    StageStats,  # noqa: E402
    normalize,  # noqa: E402
)

N = 13


def make_items(texts: list[str], n: int, rng: random.Random, avoid: set[str]) -> list[dict]:
    """Items from lines that do not occur (normalized) in the documents to decontaminate."""
    items = []
    for text in texts:
        lines = [
            ln.strip() for ln in text.split("\n") if len(ln.split()) >= 15 and normalize(ln) not in avoid
        ]
        if len(lines) >= 2:
            q, a = rng.sample(lines, 2)
            items.append({"id": f"item{len(items)}", "question": q, "answer": a})
            if len(items) == n:
                break
    return items


def plant(
    texts: list[str], items: list[dict], planted: int, rng: random.Random
) -> tuple[list[str], list[str]]:
    """Copies of the texts, with kinds: 'whole' (question + answer inserted), 'question' (question only), ''."""
    out, kinds = list(texts), [""] * len(texts)
    chosen = rng.sample(range(len(texts)), 2 * planted)
    for k, i in enumerate(chosen):
        item = items[k % len(items)]
        whole = k < planted
        lines = out[i].split("\n")
        at = rng.randrange(len(lines) + 1)
        add = [item["question"], item["answer"]] if whole else [item["question"]]
        out[i] = "\n".join(lines[:at] + add + lines[at:])
        kinds[i] = "whole" if whole else "question"
    return out, kinds


def run_ours(texts: list[str], items_file: Path, work: Path) -> tuple[float, list[bool]]:
    t0 = time.perf_counter()
    stage = DeconStage("bench", DeconConfig((EvalSet("bench", (str(items_file),)),)), "", str(work))
    stage.setup()
    stats = StageStats()
    kept = [stage.keep(i, {"text": t}, stats) for i, t in enumerate(texts)]
    return time.perf_counter() - t0, kept


def run_datatrove(texts: list[str], items: list[dict], work: Path) -> tuple[float, list[bool]]:
    import numpy as np
    from datatrove.data import Document
    from datatrove.pipeline.decont import NGramsDecontConfig, NGramsDecontFilter, NGramsDecontIndexer
    from datatrove.utils.hashing import create_hash_func
    from datatrove.utils.word_tokenizers import load_word_tokenizer

    # timed from the items, as ours is: the index built (a word tokenizer loaded), then the filter run
    t0 = time.perf_counter()
    config = NGramsDecontConfig(n_grams=N, find_query_ngrams=True)
    indexer = object.__new__(NGramsDecontIndexer)  # its constructor insists on lighteval, which we do not use
    indexer.config, indexer.tokenizer = config, load_word_tokenizer("en")
    indexer.hash_func = create_hash_func(config.hash_config)
    hashes = {h for it in items for h in indexer.compute_hashes(it["answer"], it["question"])}
    index = work / "datatrove-index"
    index.mkdir(parents=True, exist_ok=True)
    np.array(sorted(hashes), dtype=config.hash_config.np_descr).tofile(index / "bench.index.hashes")
    filt = NGramsDecontFilter(str(index), config=config)
    docs = [Document(text=t, id=str(i)) for i, t in enumerate(texts)]
    kept_ids = {d.id for d in filt.run(iter(docs))}
    return time.perf_counter() - t0, [str(i) in kept_ids for i in range(len(texts))]


def summary(name: str, kept: list[bool], kinds: list[str]) -> tuple[float, int]:
    planted = [k for k in kinds if k]
    caught = sum(1 for keep, k in zip(kept, kinds, strict=True) if k and not keep)
    whole = sum(1 for keep, k in zip(kept, kinds, strict=True) if k == "whole" and not keep)
    question = caught - whole
    other = sum(1 for keep, k in zip(kept, kinds, strict=True) if not k and not keep)
    n_whole = kinds.count("whole")
    print(
        f"{name:<10} planted caught {caught}/{len(planted)} (whole items {whole}/{n_whole}, question only "
        f"{question}/{len(planted) - n_whole}); unplanted documents removed: {other}/{kinds.count('')}"
    )
    return whole / max(1, n_whole), other


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--docs", type=int, default=10_000, help="real documents to decontaminate (default 10,000)"
    )
    ap.add_argument("--items", type=int, default=500, help="evaluation items (default 500)")
    ap.add_argument(
        "--planted", type=int, default=300, help="documents with a whole item (and as many with a question)"
    )
    args = ap.parse_args()
    rng = random.Random(7)
    corpus = documents(args.docs + 8 * args.items)
    texts = [t for _, t in corpus[: args.docs]]
    avoid = {normalize(ln) for t in texts for ln in t.split("\n")}
    items = make_items([t for _, t in corpus[args.docs :]], args.items, rng, avoid)
    texts, kinds = plant(texts, items, args.planted, rng)
    words = sum(len(t.split()) for t in texts)
    print(f"{len(texts):,} real documents ({words:,} words), {len(items)} items; {args.planted} planted whole, "
          f"{args.planted} with the question only")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-decon-") as tmp:
        work = Path(tmp)
        items_file = work / "items.jsonl"
        items_file.write_text("".join(json.dumps(it) + "\n" for it in items))
        ours_s, ours = run_ours(texts, items_file, work)
        theirs_s, theirs = run_datatrove(texts, items, work)
    print(f"datapipe   {ours_s:6.2f} s  {len(texts) / ours_s:8,.0f} docs/s  (index build included)")
    print(f"datatrove  {theirs_s:6.2f} s  {len(texts) / theirs_s:8,.0f} docs/s  (index load included)")
    recall, _ = summary("datapipe", ours, kinds)
    summary("datatrove", theirs, kinds)
    print(
        "question only: ours needs >= 50% of the question field's 13-grams (per-field items); datatrove any one"
    )
    print(f"bench: decon vs_datatrove={theirs_s / ours_s:.2f} recall={recall:.3f}")


if __name__ == "__main__":
    main()
