"""The dedup global phase on Beam: its two shuffle paths, side by side, in one run (issue 42 item 2).

``--global-shuffle beam`` groups the phase's keys with Beam's ``GroupByKey`` (``pipelines/beam/dedup.py:
DedupGlobal``); ``--global-shuffle files`` runs the task table of ``datapipe/dedup/spill.py`` (the datatrove
engine's too) through partitioned files (``pipelines/beam/phase.py: TaskTable``). Both run on the same shards of real documents
(``benchmarks/corpus.py``) with planted copies and near-copies, on the DirectRunner in one process and on its
multi-process mode with ``--workers`` worker processes (the multi-worker run this machine can hold), each in a
fresh process so that its peak memory is its own. Every run must write the same removal lists. Both paths are timed
the same way: wall clock inside that process around the phase alone (imports and options outside), ``--tries``
rounds (default 2) interleaved path by path, the fastest kept, no warm-up run on either.

    .venv/bin/python benchmarks/global_shuffle.py [--docs 20000] [--shard-docs 500] [--workers 2]

Last line: ``bench: global_shuffle docs=N files_vs_beam=X files_vs_beam_multi=Y rss_files_mb=A rss_beam_mb=B
same_removals=1``, ``files_vs_beam`` being the GroupByKey path's wall time over the file path's (above 1: files
is faster), ``rss_*`` the launching process's peak resident memory (the DirectRunner holds a GroupByKey there).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

PATHS = ("beam", "files")


def corpus(folder: str, docs: int, shard_docs: int, seed: int = 0) -> int:
    """Upstream parts of ``docs`` documents: real ones, then exact copies (10%) and near-copies (10%: one word in
    fifty changed) of random earlier ones. Returns the number of shards."""
    from corpus import documents

    from datapipe import write_records_atomic

    rng = random.Random(seed)
    real = [t for _, t in documents(int(docs * 0.8))]
    texts = list(real)
    while len(texts) < docs:
        words = rng.choice(real).split()
        if rng.random() < 0.5 and words:
            for _ in range(max(1, len(words) // 50)):
                words[rng.randrange(len(words))] = f"w{rng.randrange(10**6)}"
        texts.append(" ".join(words))
    rng.shuffle(texts)
    shards = 0
    for k, start in enumerate(range(0, len(texts), shard_docs)):
        write_records_atomic(
            os.path.join(folder, f"part-{k:05d}.jsonl.zst"),
            (
                {"id": f"d{start + i}", "text": t, "source": "b", "metadata": {}}
                for i, t in enumerate(texts[start : start + shard_docs])
            ),
        )
        shards = k + 1
    return shards


def one(path: str, workers: int, upstream: str, out: str, shards: int) -> dict:
    """One global phase in this process (the child of :func:`main`): seconds, CPU seconds, peak memory."""
    from datapipe import DEDUP_TASKS, DedupConfig, DedupStage, MinHashConfig, Shard
    from pipelines.beam.dedup import run_dedup_global
    from pipelines.beam.phase import TaskTable
    from pipelines.beam.quiet import PipelineOptions, beam
    from pipelines.beam.runner import pipeline

    flags = ["--runner=DirectRunner"]
    if workers > 1:
        flags += ["--direct_running_mode=multi_processing", f"--direct_num_workers={workers}"]
    options = PipelineOptions(flags)
    parts = tuple(Shard(k, f"part-{k:05d}", f"part-{k:05d}") for k in range(shards))
    stage = DedupStage(
        "bench", DedupConfig(exact=True, minhash=MinHashConfig.preset("fineweb")), upstream, out
    )
    t0, c0 = time.perf_counter(), time.process_time()
    if path == "files":
        stage.reset_global()
        with pipeline(options) as p:
            _ = p | "Shards" >> beam.Create(list(parts)) | "Dedup" >> TaskTable(stage, parts, DEDUP_TASKS)
    else:  # with as many star rounds as the components need, as the engine runs it
        run_dedup_global(stage, list(parts), options)
    wall = time.perf_counter() - t0
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "wall_s": wall,
        "cpu_s": time.process_time() - c0 + children.ru_utime + children.ru_stime,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "worker_rss_mb": children.ru_maxrss / 1024,
        "removals": removals_digest(out),
        "components": stage.read_global_report()["components"],
    }


def removals_digest(out: str) -> str:
    h = hashlib.sha256()
    for f in sorted(Path(out, "removals").glob("part-*.json")):
        h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--shard-docs", type=int, default=500)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tries", type=int, default=2, help="runs of each configuration (the fastest is kept)")
    ap.add_argument(
        "--one", nargs=5, metavar=("PATH", "WORKERS", "UPSTREAM", "OUT", "SHARDS"), help=argparse.SUPPRESS
    )
    args = ap.parse_args()
    if args.one:
        path, workers, upstream, out, shards = args.one
        print(json.dumps(one(path, int(workers), upstream, out, int(shards))))
        return
    if (os.cpu_count() or 1) < 2 or args.workers < 2:
        sys.exit("global_shuffle: needs 2 cores and --workers >= 2 (the multi-worker run)")
    work = tempfile.mkdtemp(prefix="global-shuffle-")
    upstream = os.path.join(work, "upstream")
    shards = corpus(upstream, args.docs, args.shard_docs)
    print(
        f"global_shuffle: {args.docs:,} documents in {shards} shards, dedup exact + MinHash (fineweb preset)"
    )
    results: dict[tuple[str, int], dict] = {}
    for attempt in range(args.tries):
        for workers in (1, args.workers):
            for path in PATHS:  # interleaved, so that a busy spell of the machine falls on both paths alike
                out = os.path.join(work, f"{path}-{workers}-{attempt}")
                proc = subprocess.run(
                    [sys.executable, __file__, "--one", path, str(workers), upstream, out, str(shards)],
                    capture_output=True,
                    text=True,
                )
                if proc.returncode != 0:
                    sys.exit(
                        f"global_shuffle: the {path} path with {workers} worker(s) failed:\n{proc.stderr[-3000:]}"
                    )
                got = json.loads(proc.stdout.strip().splitlines()[-1])
                best = results.get((path, workers))
                if best is None or got["wall_s"] < best["wall_s"]:
                    results[(path, workers)] = got
    print(
        f"{'path':<6} {'workers':>7} {'wall s':>8} {'CPU s':>8} {'launcher MB':>12} {'worker MB':>10}  removals"
    )
    for (path, workers), r in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        print(
            f"{path:<6} {workers:>7} {r['wall_s']:>8.1f} {r['cpu_s']:>8.1f} {r['rss_mb']:>12.0f} "
            f"{r['worker_rss_mb']:>10.0f}  {r['removals'][:12]} ({r['components']:,} components)"
        )
    same = len({r["removals"] for r in results.values()}) == 1
    w = args.workers
    print(
        f"bench: global_shuffle docs={args.docs} "
        f"files_vs_beam={results[('beam', 1)]['wall_s'] / results[('files', 1)]['wall_s']:.2f} "
        f"files_vs_beam_multi={results[('beam', w)]['wall_s'] / results[('files', w)]['wall_s']:.2f} "
        f"rss_files_mb={results[('files', 1)]['rss_mb']:.0f} rss_beam_mb={results[('beam', 1)]['rss_mb']:.0f} "
        f"same_removals={int(same)}"
    )


if __name__ == "__main__":
    main()
