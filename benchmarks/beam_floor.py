"""Beam's own fixed cost for a build's pipeline shape: what a build would cost if every stage did nothing (issue 43).

The e2e build's fixed cost (``benchmarks/e2e.py``: the line through a 263-page and the 5,255-page build, 6.4-7.8 s
of wall time on the 2-core machine) is part Beam and part our own stack (workers importing spaCy, numba and the
stage modules, models, the launcher's checks, the cache's consolidation). This runs the shape of that build's
pipeline with trivial steps: five stages, each ``Create``/``FlatMap`` of 8 shards -> ``Reshuffle`` -> ``ParDo`` ->
``GroupByKey`` -> ``ParDo``, the dedup stage with a five-task table in front (count, items, reshuffle, task), on the
DirectRunner as builds run it (``pipelines.beam.runner.pipeline``, ``--direct_running_mode=multi_processing
--direct_num_workers=2``, the workers forked from a warm parent started first, :mod:`pipelines.beam.zygote`), each
run in a fresh process, timed from its start (imports included) with the CPU
seconds of the whole process tree. The difference to a real build's fixed cost is ours to cut; this part is the
engine's.

    .venv/bin/python benchmarks/beam_floor.py [--runs 3]

Last line: ``bench: beam_floor wall_s=W cpu_s=C`` (the fastest run's wall and CPU seconds).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARDS = 8
STAGES = (("extract", 0), ("filter", 0), ("dedup", 5), ("quality", 0), ("tokenize", 0))


def child() -> None:
    """One pipeline of the build's shape, with steps that do nothing, its workers forked from a warm parent
    started before Beam is imported, as a build's launcher starts one."""
    sys.path.insert(0, str(REPO))
    from pipelines.beam.zygote import WarmWorkers

    workers = WarmWorkers()
    import apache_beam as beam

    from pipelines.beam.quiet import PipelineOptions
    from pipelines.beam.runner import pipeline

    shards = list(range(SHARDS))

    def stage(x, name: str, tasks: int):
        for t in range(tasks):
            x = (
                x
                | f"{name}/t{t}/After" >> beam.combiners.Count.Globally()
                | f"{name}/t{t}/Items" >> beam.FlatMap(lambda _: shards)
                | f"{name}/t{t}/Spread" >> beam.Reshuffle()
                | f"{name}/t{t}" >> beam.Map(lambda s: s)
            )
        return (
            x
            | f"{name}/Spread" >> beam.Reshuffle()
            | f"{name}/Process" >> beam.Map(lambda s: (None, s))
            | f"{name}/Gather" >> beam.GroupByKey()
            | f"{name}/Finish" >> beam.Map(lambda kv: 0)
            | f"{name}/Next" >> beam.FlatMap(lambda _: shards)
        )

    options = PipelineOptions(["--direct_running_mode=multi_processing", "--direct_num_workers=2"])
    try:
        with pipeline(options, workers) as p:
            x = p | beam.Create(shards, reshuffle=False)
            for name, tasks in STAGES:
                x = stage(x, name, tasks)
    finally:
        workers.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="fresh processes to time (default 3)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child()
        return
    runs = []
    for _ in range(max(1, args.runs)):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--child"],
            check=True,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        runs.append((wall, cpu))
        print(f"run {len(runs)}: {wall:.2f} s wall, {cpu:.2f} CPU s", flush=True)
    wall, cpu = min(runs)
    print(f"bench: beam_floor wall_s={wall:.2f} cpu_s={cpu:.2f}")


if __name__ == "__main__":
    main()
