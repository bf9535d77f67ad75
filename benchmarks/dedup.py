"""Deduplication: accuracy on natural near-duplicates, signature speed against datasketch and datatrove, and the
memory a DoFn holds at 1x and 8x the documents. All in one run, one core.

1. Accuracy: the handbook pages in 26 languages (fixtures), through the real ``dedup`` global phase (DirectRunner);
   ground truth is the exact Jaccard of the same shingles over all pairs. Recall: pairs with J >= 0.85 that end in
   one component; precision: verified edges with J >= 0.8.
2. Signatures on N real documents (default 5,000; ``benchmarks/corpus.py``): datapipe (normalize, shingle, MinHash
   from raw text) vs datasketch ``MinHash(num_perm=112).update_batch`` given the shingles ready-made, and vs
   datatrove's ``MinhashDedupSignature`` step (its own normalization, spaCy words, hashing) on a subset.
3. Memory: the dedup global phase at 1x and 8x N documents; the largest collection any DoFn materialized (an LSH
   bucket, a node's neighbourhood, one shard's removals, ...) and the bytes shuffled per document.

Timing (2): every side runs in this process, one after the other, once, by wall clock (``perf_counter``), each
after one untimed call of its own (datapipe's compiles numba's loop, datasketch's two uses one MinHash each,
datatrove's step one document, loading spaCy; until 2026-12-07 datasketch had none); the texts, shingle hashes
and shingle strings are made beforehand. The global phases of (3) run once each, no warm-up.

Last line: ``bench: dedup recall=R precision=P sig_vs_datasketch=X sig_vs_datatrove=Y held_1x=A held_8x=B``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ.setdefault("HF_HOME", tempfile.mkdtemp(prefix="hf-"))

from corpus import CORPORA, documents  # noqa: E402

from datapipe import (  # noqa: E402  # noqa: E402  # noqa: E402
    DedupConfig,
    DedupStage,  # noqa: E402
    MinHashConfig,
    MinHasher,
    Shard,
    Shingler,  # noqa: E402
    all_pairs_jaccard,
    normalize,
    pair_metrics,
    read_records,
    write_records_atomic,  # noqa: E402
)
from pipelines.beam.dedup import run_dedup_global  # noqa: E402
from pipelines.beam.quiet import PipelineOptions  # noqa: E402

OPTIONS = PipelineOptions(["--runner=DirectRunner"])


def global_phase(
    texts: list[str], shard_size: int, work: str, edges: bool = False
) -> tuple[dict, str, list[int]]:
    """Write texts as upstream parts, run the dedup global phase, return its report, folder and shard sizes."""
    upstream = os.path.join(work, "upstream")
    out = os.path.join(work, "dedup")
    shards, sizes = [], []
    for k, start in enumerate(range(0, len(texts), shard_size)):
        chunk = texts[start : start + shard_size]
        write_records_atomic(
            os.path.join(upstream, f"part-{k:05d}.jsonl.zst"),
            ({"id": f"d{start + i}", "text": t, "source": "b", "metadata": {}} for i, t in enumerate(chunk)),
        )
        shards.append(Shard(k, f"part-{k:05d}", f"part-{k:05d}"))
        sizes.append(len(chunk))
    cfg = DedupConfig(exact=False, minhash=MinHashConfig.preset("fineweb", keep_edges=edges))
    stage = DedupStage("bench", cfg, upstream, out)
    return run_dedup_global(stage, shards, OPTIONS), out, sizes


def accuracy(work: str) -> tuple[float, float, int]:
    texts = [
        d["text"] for p in sorted((CORPORA / "handbook").glob("*.jsonl.zst")) for d in read_records(str(p))
    ]
    truth = all_pairs_jaccard(texts)
    _, out, sizes = global_phase(texts, 182, work, edges=True)
    m = pair_metrics(out, truth, sizes)
    return m.recall, m.precision, m.positives


def signatures(texts: list[str], datatrove_docs: int) -> dict[str, float]:
    from datasketch import MinHash

    cfg = MinHashConfig.preset("fineweb")
    hasher = MinHasher(cfg)
    shingler = Shingler(cfg.ngram)
    hasher.signatures([shingler("warm up the compiled loop")])

    # from raw text: normalize, shingle, sign
    t0 = time.perf_counter()
    sets = []
    for start in range(0, len(texts), 1000):
        batch = [shingler(t) for t in texts[start : start + 1000]]
        hasher.signatures(batch)
        sets.extend(batch)
    from_text = time.perf_counter() - t0

    # the signature step alone, like for like: the same 64-bit shingle hashes in, signatures out
    t0 = time.perf_counter()
    for start in range(0, len(sets), 1000):
        hasher.signatures(sets[start : start + 1000])
    ours_sign = time.perf_counter() - t0
    as_lists = [s.tolist() for s in sets]
    # one untimed call, as our side's warm-up above
    MinHash(num_perm=cfg.num_perm, seed=cfg.seed, hashfunc=int, scheme="affine64").update_batch(as_lists[0])
    t0 = time.perf_counter()
    for s in as_lists:
        MinHash(num_perm=cfg.num_perm, seed=cfg.seed, hashfunc=int, scheme="affine64").update_batch(s)
    datasketch_sign = time.perf_counter() - t0

    # datasketch as most people use it: shingle strings (built outside the timing), its own SHA-1 hashing
    strings = []
    for t in texts:
        w = normalize(t).split()
        n = min(cfg.ngram, len(w))
        strings.append([" ".join(w[i : i + n]).encode() for i in range(len(w) - n + 1)] if w else [])
    MinHash(num_perm=cfg.num_perm, seed=cfg.seed).update_batch(strings[0])  # untimed, as above
    t0 = time.perf_counter()
    for s in strings:
        MinHash(num_perm=cfg.num_perm, seed=cfg.seed).update_batch(s)
    datasketch_strings = time.perf_counter() - t0

    from datatrove.data import Document
    from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupSignature
    from loguru import logger

    logger.remove()  # datatrove logs every step at INFO
    sub = texts[:: max(1, len(texts) // datatrove_docs)][:datatrove_docs]  # spread over the corpus
    t0 = time.perf_counter()
    hasher.signatures([shingler(t) for t in sub])
    ours_sub = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as d:
        step = MinhashDedupSignature(
            output_folder=d, config=MinhashConfig(num_buckets=14, hashes_per_bucket=8)
        )
        step.run(iter([Document(text="warm up spacy", id="w")]), rank=1, world_size=2)
        t0 = time.perf_counter()
        step.run((Document(text=t, id=str(i)) for i, t in enumerate(sub)), rank=0, world_size=2)
        datatrove = time.perf_counter() - t0
    n = len(texts)
    return {
        "ours_text": n / from_text,
        "ours_sign": n / ours_sign,
        "datasketch_sign": n / datasketch_sign,
        "datasketch_strings": n / datasketch_strings,
        "datatrove_text": len(sub) / datatrove,
        "ours_text_sub": len(sub) / ours_sub,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=5000, help="documents at 1x (default 5,000)")
    ap.add_argument(
        "--scale", type=int, default=8, help="the larger run is this many times --docs (default 8)"
    )
    ap.add_argument("--datatrove-docs", type=int, default=600, help="documents for datatrove's slow step")
    ap.add_argument("--shard-docs", type=int, default=1000, help="documents per shard in the memory runs")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as work:
        recall, precision, positives = accuracy(os.path.join(work, "acc"))
        big = [t for _, t in documents(args.docs * args.scale)]
        small = big[: args.docs]
        speed = signatures(small, args.datatrove_docs)
        t0 = time.perf_counter()
        rep1, _, _ = global_phase(small, args.shard_docs, os.path.join(work, "x1"))
        t1 = time.perf_counter() - t0
        t0 = time.perf_counter()
        rep8, _, _ = global_phase(big, args.shard_docs, os.path.join(work, f"x{args.scale}"))
        t8 = time.perf_counter() - t0

    per_doc = {k: v["per_document"] for k, v in rep1["shuffle_bytes"].items()}
    per_doc8 = {k: v["per_document"] for k, v in rep8["shuffle_bytes"].items()}
    vs_ds = speed["ours_sign"] / speed["datasketch_sign"]
    vs_dt = speed["ours_text_sub"] / speed["datatrove_text"]
    print(
        f"accuracy (handbook in 26 languages): recall {recall:.4f} over {positives} pairs with J >= 0.85; "
        f"edge precision {precision:.4f}"
    )
    print(f"MinHash, 112 permutations, {len(small)} real documents, one core (docs/s):")
    print("  signature step, same 64-bit shingle hashes in:")
    print(f"    datapipe MinHasher.signatures (numba)                 {speed['ours_sign']:>9.0f}")
    print(
        f"    datasketch MinHash.update_batch (affine64)            {speed['datasketch_sign']:>9.0f}  x{vs_ds:.1f}"
    )
    print("  from text:")
    print(f"    datapipe normalize + shingle + sign                   {speed['ours_text']:>9.0f}")
    print(
        f"    datasketch, shingle strings given, SHA-1 + affine32   {speed['datasketch_strings']:>9.0f}  "
        f"x{speed['ours_text'] / speed['datasketch_strings']:.1f}"
    )
    print(
        f"    datatrove MinhashDedupSignature ({args.datatrove_docs} docs)           "
        f"{speed['datatrove_text']:>9.0f}  x{vs_dt:.1f}"
    )
    print(f"global phase: {len(small)} docs {t1:.1f}s; {len(big)} docs {t8:.1f}s")
    print(
        f"  largest collection held by a DoFn: 1x {rep1['largest_held_collection']}, "
        f"{args.scale}x {rep8['largest_held_collection']}"
    )
    print(f"    by kind, 1x: {rep1['largest_held_by_kind']}")
    print(f"    by kind, {args.scale}x: {rep8['largest_held_by_kind']}")
    big1 = rep1["largest_components"][0]["size"] if rep1["largest_components"] else 0
    big8 = rep8["largest_components"][0]["size"] if rep8["largest_components"] else 0
    print(f"  largest duplicate component: 1x {big1}, {args.scale}x {big8}")
    print(f"  bytes shuffled per document, 1x: {per_doc}")
    print(f"  bytes shuffled per document, {args.scale}x: {per_doc8}")
    print(
        f"bench: dedup recall={recall:.4f} precision={precision:.4f} sig_vs_datasketch={vs_ds:.1f} "
        f"sig_vs_datatrove={vs_dt:.1f} held_1x={rep1['largest_held_collection']} "
        f"held_8x={rep8['largest_held_collection']}"
    )


if __name__ == "__main__":
    main()
