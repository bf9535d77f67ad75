"""The scale build on a one-node Slurm cluster: every phase split into array-job tasks, each task's peak RSS.

The cluster is the one the tests start (``tests/slurm_cluster.py``: munged, slurmctld and slurmd from Debian's
packages, installed by name when missing, on free localhost ports, all state in ``WORK/cluster``). The corpus is
``scale_corpus.py``'s (reused when ``WORK/corpus-N`` already holds it, as ``scale.py --full --work WORK``
leaves it) and the recipe is ``e2e.py``'s. The build runs as
``python -m pipelines.build_mixture --engine datatrove --executor slurm`` with ``--tasks`` tasks for every per-shard
phase and ``--buckets`` tasks for every partition phase of the dedup shuffle, each task one Slurm array element with
1 CPU and ``--mem-per-cpu-gb`` (2 GB, datapipe's default). Each task records its own peak RSS (datatrove's stats,
``peak_rss_mb``); the launcher prints them per phase, and this benchmark prints them per stage with the stage's time
(the launcher's clock between ``_SUCCESS`` markers) and checks the planted copies' recall as ``scale.py`` does.

    .venv/bin/python benchmarks/slurm_scale.py [--pages 10000,100000,1000000] [--work DIR] [--tasks 16] [--buckets 16]

Three sizes by default, so that the cost per page is compared as ``scale.py`` compares the Beam builds (``growth``,
``marginal``). Every size is timed the same way: one build, smallest first, launch to exit of the launcher under
``e2e.py``'s wrapper (wall clock), all after ``scale.py``'s untimed warm-up build of 1,000 pages (bytecode, numba's
caches; until 2026-12-07 there was none, and the smallest size paid them on a fresh checkout). About an hour on
2 cores. Designed for 2 cores, 8 GiB and 6 GiB of free disk (20 GiB when the corpora are still to be written);
root and apt-get are needed only when Slurm is not installed yet. Last line:
``bench: slurm_scale pages_max=N tasks=T task_phases=P largest_task_mb=X launcher_mb=L worst_scaling=Z
dedup_recall=R``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]

import e2e  # noqa: E402
import scale  # noqa: E402
import scale_corpus  # noqa: E402

from tests.slurm_cluster import ensure_installed, local_cluster  # noqa: E402

MIB = 1 << 20
# the launcher's per-phase lines, in the build's log (<out>/_logs/build-*.log, after the log record's prefix)
PEAK_LINE = re.compile(r"\s(\S+)\s+(\S+)\s+(\S+): (\d+) task\(s\), largest process ([\d,]+) MiB$")


def refuse_small_machine(work: Path, corpus_ready: bool) -> None:
    scale.require_machine("slurm_scale", work, 6 if corpus_ready else 20)
    why = ensure_installed()
    if why:
        raise SystemExit(f"slurm_scale: no Slurm here: {why}")


def task_peaks(log: str) -> list[tuple[str, str, int, int]]:
    """(stage folder, phase, tasks, largest task MiB) from the launcher's per-phase lines (the build's log)."""
    return [
        (m.group(2), m.group(3), int(m.group(4)), int(m.group(5).replace(",", "")))
        for m in map(PEAK_LINE.search, log.splitlines())
        if m
    ]


def build(work: Path, pages: int, model: str, args: argparse.Namespace, env: dict[str, str]) -> dict:
    """One build of ``pages`` pages on the cluster: per stage (seconds, docs in), per phase task peaks, recall."""
    corpus = work / f"corpus-{pages}"
    t0 = time.perf_counter()
    meta = scale_corpus.build(corpus, pages, workers=2)
    print(f"corpus {pages:,} pages: {meta['shards']} shards ({time.perf_counter() - t0:.0f} s)", flush=True)
    tag = f"slurm-{pages}"
    mixture, out = work / f"mixture-{tag}.yaml", work / f"out-{tag}"
    e2e.write_mixture(mixture, corpus, model, 0.5, 5.0)
    shutil.rmtree(out, ignore_errors=True)
    from pipelines.build_mixture import command

    cmd = command(
        str(mixture), str(out), "--engine", "datatrove", "--executor", "slurm", "--partition", "test",
        "--tasks", str(args.tasks), "--buckets", str(args.buckets), "--mem-per-cpu-gb", str(args.mem_per_cpu_gb),
        "--time", "04:00:00",
    )  # fmt: skip
    res = e2e.run_wrapped(cmd, work, f"datapipe-{tag}", r"\bran in\b", {**e2e.child_env(work), **env})
    stages = {}
    previous = 0.0
    for seg in res["segments"]:
        m = e2e.STAGE_LINE.match(seg["line"])
        if not m:
            sys.exit(f"slurm_scale: unexpected stage line: {seg['line']!r}")
        clock = float(m.group(2))  # on Slurm: the launcher's clock when the stage's _SUCCESS appeared
        stages[m.group(1)] = {"s": clock - previous, "in": int(m.group(3))}
        previous = clock
    logged = "".join(p.read_text() for p in sorted((out / "_logs").glob("build-*.log")))
    run = {"wall": res["wall"], "launcher": res["maxrss"], "stages": stages, "peaks": task_peaks(logged)}
    run["recall"] = scale.build_recall(corpus, out)
    largest = max((mb for *_, mb in run["peaks"]), default=0)
    print(
        f"build {pages:,} pages: {run['wall']:.0f} s, {len(run['peaks'])} phases in"
        f" {sum(n for _, _, n, _ in run['peaks'])} tasks, largest task {largest:,} MiB, the launcher"
        f" {run['launcher'] / MIB:,.0f} MiB, dedup found {run['recall']['found']:,} of {run['recall']['copies']:,}"
        " planted copies",
        flush=True,
    )
    shutil.rmtree(out, ignore_errors=True)
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", default="10000,100000,1000000", help="comma-separated page counts")
    ap.add_argument("--work", type=Path, help="work folder (kept; default: a new temporary one)")
    ap.add_argument("--tasks", type=int, default=16, help="tasks of every per-shard phase (default 16)")
    ap.add_argument("--buckets", type=int, default=16, help="tasks of every partition phase (default 16)")
    ap.add_argument("--mem-per-cpu-gb", type=int, default=2)
    args = ap.parse_args()
    sizes = sorted({int(x) for x in args.pages.split(",")})
    work = args.work or Path(tempfile.mkdtemp(prefix="slurm-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    refuse_small_machine(work, all((work / f"corpus-{n}" / "corpus.json").exists() for n in sizes))
    model = e2e.train_classifier(work)
    scale.warm_up(work)  # untimed: the bytecode and numba's caches, before the first (smallest) size
    with local_cluster(work / "cluster") as env:
        runs = {n: build(work, n, model, args, env) for n in sizes}

    print(
        f"\nthe datatrove engine on Slurm: {args.tasks} tasks a shard phase, {args.buckets} a partition phase"
    )
    print(f"{'stage':<15}" + "".join(f" {f'{n:,} in':>11} {'ms/doc':>7}" for n in sizes) + " growth marginal")
    worst = 0.0
    for name in (*scale.STAGES, "overall"):
        row, times = f"{e2e.LABEL.get(name, name):<15}", {}
        for n in sizes:
            st = {"s": runs[n]["wall"], "in": n} if name == "overall" else runs[n]["stages"][name]
            times[n] = st["s"]
            row += f" {st['in']:>11,} {1000 * st['s'] / n:>7.2f}"
        growth, marginal = scale.scaling(times)
        worst = max(worst, growth, marginal or 0.0)
        print(row + f" {growth:>6.2f} {'-' if marginal is None else f'{marginal:.2f}':>8}")
    top = runs[sizes[-1]]
    print(f"\nlargest task of each phase at {sizes[-1]:,} pages (MiB):")
    for stage_dir, phase, n, mb in top["peaks"]:
        print(f"  {stage_dir:<20} {phase:<11} {n:>3} task(s) {mb:>7,}")
    largest = max((mb for *_, mb in top["peaks"]), default=0)
    recall = min(r["recall"]["found"] / max(1, r["recall"]["copies"]) for r in runs.values())
    print(
        f"bench: slurm_scale pages_max={sizes[-1]} tasks={args.tasks} task_phases={len(top['peaks'])}"
        f" largest_task_mb={largest} launcher_mb={top['launcher'] / MIB:.0f} worst_scaling={worst:.2f}"
        f" dedup_recall={recall:.4f}"
    )


if __name__ == "__main__":
    main()
