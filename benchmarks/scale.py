"""Scale: whole builds from 10^4 pages up, the dedup global phase from 10^5 documents up; memory and cost per document.

Two series, each size run as its own process tree under ``e2e.py``'s wrapper (peak RSS of every process it reaps,
wall and CPU seconds):

* **build**: ``scale_corpus.py`` crawls (real Debian documentation paragraphs recombined into pages, with planted
  exact and near copies and their ground truth) through ``python -m pipelines.build_mixture`` on the DirectRunner
  with 2 worker processes (``--build-engine local``: the local engine with 2), the recipe of ``e2e.py`` (resiliparse, lid.176 en >= 0.65, refinedweb filters, exact +
  MinHash ``fineweb`` dedup, the bundled ``fixture_quality`` classifier, GPT-2). Per stage: documents in, seconds,
  ms per document, the largest process while it ran. ``dedup recall``: of the planted copies that reached the dedup
  stage together with their original, the share it removed.
* **dedup**: the dedup global phase alone on ``planted.py`` keys (10^4 documents a shard; 30% planted copies), on
  both engines with 2 workers: Beam's DirectRunner (``TaskTable``) and datatrove's local executor
  (``PhaseTask`` rows), then the removal lists checked against the planted truth.

Timing: every size and engine the same way: once, as its own process tree under the wrapper (launch to exit,
wall and CPU seconds; a build's stages by its ``ran in`` lines), all after one untimed warm-up build of 1,000 pages
(bytecode, numba's caches); the dedup series runs first, one engine's sizes then the other's. Until 2026-12-07 the
warm-up came only before the build series, so on a fresh checkout the first dedup run (Beam's, smallest) paid
those caches.

Scaling: per series, stage and engine, the time per document at each size over that at the smallest size
(``growth``; fixed start-up costs make the smallest size the dearest per document) and, from three sizes on, the
marginal cost per document between the two largest sizes over that between the two smallest (``marginal``).
``worst_scaling`` is the largest of them all. The incremental check (``incremental.py``) builds A, then B deduped
against A's stored index, and compares B's removals with those of A+B built together.

Defaults (about 10 minutes on 2 cores): build 10^4 and 3x10^4 pages, dedup 10^5, 3x10^5 and 10^6 documents.
``--full``: build 10^4, 10^5 and 10^6 pages, dedup 10^5, 10^6 and 10^7 documents (~1 hour; 20 GiB of disk).

    .venv/bin/python benchmarks/scale.py [--full] [--work DIR] [--build-sizes 10000,30000] [--dedup-sizes ...]
        [--engines beam,datatrove] [--build-engine beam|local] [--series build,dedup]

Last line: ``bench: scale pages_max=N build_rss_mb=X dedup_docs_max=M dedup_rss_mb=Y worst_scaling=Z
dedup_recall=R incremental_equal=1``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]

import e2e  # noqa: E402
import scale_corpus  # noqa: E402

MIB = 1 << 20
WORKERS = 2
STAGES = e2e.STAGES
DEFAULT_BUILD = (10_000, 30_000)
DEFAULT_DEDUP = (100_000, 300_000, 1_000_000)
FULL_BUILD = (10_000, 100_000, 1_000_000)
FULL_DEDUP = (100_000, 1_000_000, 10_000_000)
ENGINES = ("beam", "datatrove")


def refuse_small_machine(full: bool, work: Path) -> None:
    """This benchmark was designed for 2 cores, 8 GiB of memory and free disk for its corpora and outputs where it
    works: 2 GiB for the defaults, 20 GiB with ``--full`` (its 10^6-page crawl alone is 3.1 GiB)."""
    require_machine("scale", work, 20 if full else 2)


def require_machine(name: str, work: Path, disk_gib: int) -> None:
    """Exit with one line unless this machine has 2 cores, 8 GiB and ``disk_gib`` free in ``work``."""
    cores = os.cpu_count() or 1
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if cores < WORKERS or mem < 8 << 30:
        raise SystemExit(
            f"{name}: needs >= {WORKERS} cores and 8 GiB (this machine: {cores}, {mem / 2**30:.1f} GiB)"
        )
    free = shutil.disk_usage(work).free
    if free < disk_gib << 30:
        raise SystemExit(f"{name}: needs {disk_gib} GiB free in {work} ({free / 2**30:.1f} GiB there)")


def _env() -> dict[str, str]:
    env = e2e.child_env(Path(tempfile.gettempdir()))
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(HERE), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


# ------------------------------------------------------------------------------------------------ build series


def build_recall(corpus: Path, out: Path) -> dict[str, int]:
    """Planted copies that reached dedup with their original, and how many of them dedup removed."""
    before, after = e2e.kept_ours(out, "filter"), e2e.kept_ours(out, "dedup")
    both = removed = 0
    for line in (corpus / "truth.jsonl").read_text().splitlines():
        t = json.loads(line)
        if t["url"] in before and t["of"] in before:
            both += 1
            removed += t["url"] not in after
    return {"copies": both, "found": removed}


PLAN_LINE = re.compile(r"^\s+web\s+(\w+)\s+([\d,]+)\s+([\d,.]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,.]+)")
TOTAL_LINE = re.compile(r"^\s+total: ~([\d,]+) s, peak ~([\d,]+) MiB")


def dry_run(corpus: Path, work: Path, tag: str, model: str, engine: str = "beam") -> dict:
    """The build's ``--dry-run`` resource plan: per stage (docs in, estimated seconds, MiB a worker), and total."""
    from pipelines.build_mixture import command

    mixture = work / f"mixture-{tag}.yaml"
    e2e.write_mixture(mixture, corpus, model, 0.5, 5.0)
    extra = ("--dry-run", *e2e.ENGINE_FLAGS[engine])
    proc = subprocess.run(
        command(str(mixture), str(work / f"out-{tag}"), *extra),
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"scale: the dry run failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    out: dict = {"stages": {}}
    for line in proc.stdout.splitlines():
        if m := PLAN_LINE.match(line):
            out["stages"][m.group(1)] = {
                "docs": int(m.group(2).replace(",", "")),
                "s": float(m.group(4).replace(",", "")),
                "rss_mb": float(m.group(5).replace(",", "")),
            }
        elif m := TOTAL_LINE.match(line):
            out["s"], out["rss_mb"] = float(m.group(1).replace(",", "")), float(m.group(2).replace(",", ""))
    if "s" not in out:
        raise SystemExit(f"scale: no resource plan in the dry run's output:\n{proc.stdout[-2000:]}")
    return out


def print_estimates(runs: dict[int, dict]) -> float:
    """The dry run's estimate against the measured build, per stage and size; returns the worst ratio (>= 1)."""
    print()
    print(
        "dry-run estimate vs measured (seconds, MiB of the largest process; ratio = the larger over the smaller)"
    )
    print(
        f"{'size':>10} {'stage':<10} {'est s':>7} {'real s':>7} {'ratio':>6} {'est MiB':>8} {'real MiB':>9} {'ratio':>6}"
    )
    worst = 1.0

    def ratio(a: float, b: float) -> float:
        return max(a, b) / max(min(a, b), 1e-9)

    for n, run in sorted(runs.items()):
        est = run["estimate"]
        rows = [
            (
                st,
                est["stages"][st]["s"],
                run["stages"][st]["s"],
                est["stages"][st]["rss_mb"],
                run["stages"][st]["rss"] / MIB,
            )
            for st in STAGES
            if st in est["stages"]
        ]
        rows.append(("overall", est["s"], run["wall"], est["rss_mb"], run["maxrss"] / MIB))
        for st, es, rs, em, rm in rows:
            rt, rmem = ratio(max(es, 0.5), rs), ratio(em, rm)
            if (
                st == "overall" or rs >= 10
            ):  # stages shorter than 10 s are mostly start-up: only the total counts
                worst = max(worst, rt, rmem)
            print(
                f"{n:>10,} {st:<10} {es:>7,.0f} {rs:>7,.0f} {rt:>6.2f} {em:>8,.0f} {rm:>9,.0f} {rmem:>6.2f}"
            )
    print(f"worst ratio {worst:.2f} ({'within' if worst <= 2 else 'NOT within'} 2x)")
    return worst


def warm_up(work: Path, engine: str = "beam") -> None:
    """An untimed build of 1,000 pages before any timed run: the bytecode and numba's caches (on disk, shared by
    every later process, both series and both engines), which would otherwise land in the first timed run alone."""
    model = e2e.train_classifier(work)
    warm = scale_corpus.build(work / "corpus-warmup", 1000)
    t0 = time.perf_counter()
    e2e.byte_compile()
    e2e.run_datapipe(work / "corpus-warmup", work, "warmup", model, 0.5, 5.0, engine=engine)
    print(f"warm-up build ({warm['pages']:,} pages, untimed): {time.perf_counter() - t0:.0f} s", flush=True)


def build_series(work: Path, sizes: tuple[int, ...], engine: str = "beam") -> dict[int, dict]:
    model = e2e.train_classifier(work)
    runs = {}
    for n in sizes:
        corpus = work / f"corpus-{n}"
        t0 = time.perf_counter()
        meta = scale_corpus.build(corpus, n, workers=WORKERS)
        print(
            f"corpus {n:,} pages: {meta['shards']} shards, {meta['bytes'] / MIB:,.0f} MiB, copies {meta['copies']}"
            f" ({time.perf_counter() - t0:.0f} s)",
            flush=True,
        )
        os.sync()
        estimate = dry_run(corpus, work, f"build-{n}", model, engine)
        run = e2e.run_datapipe(corpus, work, f"build-{n}", model, 0.5, 5.0, engine=engine)
        run["estimate"] = estimate
        run["recall"] = build_recall(corpus, run["out"])
        print(
            f"build {n:,} pages: {run['wall']:.0f} s, largest process {run['maxrss'] / MIB:,.0f} MiB, dedup found"
            f" {run['recall']['found']:,} of {run['recall']['copies']:,} planted copies",
            flush=True,
        )
        shutil.rmtree(run["out"], ignore_errors=True)
        if n != max(sizes):
            shutil.rmtree(corpus, ignore_errors=True)
        runs[n] = run
    return runs


# ------------------------------------------------------------------------------------------------ dedup series


def dedup_child(engine: str, docs: int, work: str) -> None:
    """``scale.py _dedup ENGINE DOCS WORK``: the dedup global phase on planted keys, on one engine."""
    import planted

    from datapipe import DEDUP_PHASE as DEDUP
    from datapipe import DEDUP_TASKS

    stage = planted.make_stage(os.path.join(work, "stage"), docs)
    shards = stage.shards()
    scratch = os.path.join(work, "scratch")
    if engine == "beam":
        from pipelines.beam.phase import TaskTable
        from pipelines.beam.quiet import PipelineOptions, beam
        from pipelines.beam.runner import pipeline

        opts = PipelineOptions(["--direct_running_mode=multi_processing", f"--direct_num_workers={WORKERS}"])
        with pipeline(opts) as p:
            _ = p | beam.Create(list(shards)) | TaskTable(stage, shards, DEDUP_TASKS)
    else:
        from datatrove.executor import LocalPipelineExecutor

        from pipelines.datatrove.engine import phase_steps

        width = {"shards": len(shards), "partitions": 4, "once": 1}  # 4: build_mixture's --buckets default
        for folder, factory, over in phase_steps(DEDUP):
            if over == "earlier":  # no dedup.against here
                continue
            LocalPipelineExecutor(
                pipeline=[factory(stage, shards, scratch)],
                tasks=width[over],
                workers=min(WORKERS, width[over]),
                logging_dir=os.path.join(work, "logs", folder),
            ).run()
    if not stage.global_done():
        raise SystemExit(f"scale: the {engine} dedup phase ended without _GLOBAL_SUCCESS")


def measured_builds(work: Path, sizes: tuple[int, ...]) -> dict[int, dict]:
    """``--series estimate``: the builds an earlier run measured in ``work`` (their wrapper results and logs),
    each with a fresh dry run of its corpus, so that the plan can be compared again without building."""
    model = e2e.train_classifier(work)
    runs = {}
    for n in sizes:
        tag, result = f"build-{n}", work / f"datapipe-build-{n}.result.json"
        corpus = work / f"corpus-{n}"
        if not result.exists() or not (corpus / "corpus.json").exists():
            raise SystemExit(f"scale: --series estimate needs {result} and {corpus} from an earlier run")
        res = json.loads(result.read_text())
        res["log"] = (work / f"datapipe-{tag}.log").read_text()
        run = e2e.read_datapipe_run(res, [], work / f"out-{tag}", work, tag)
        run["estimate"] = dry_run(corpus, work, tag, model)
        runs[n] = run
    return runs


def dedup_series(work: Path, sizes: tuple[int, ...], engines: tuple[str, ...]) -> dict[str, dict[int, dict]]:
    import planted

    out: dict[str, dict[int, dict]] = {}
    for engine in engines:
        for n in sizes:
            folder = work / f"dedup-{engine}-{n}"
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            cmd = [sys.executable, str(Path(__file__).resolve()), "_dedup", engine, str(n), str(folder)]
            res = e2e.run_wrapped(cmd, work, f"dedup-{engine}-{n}", r"^$", _env())
            stage = planted.make_stage(str(folder / "stage"), n)
            res["truth"] = planted.check(stage)
            res["report"] = stage.read_global_report()
            t = res["truth"]
            print(
                f"dedup {engine} {n:,} documents: {res['wall']:.0f} s, largest process {res['maxrss'] / MIB:,.0f}"
                f" MiB, removed {t['found']:,} of {t['copies']:,} planted copies, {t['false']} unique",
                flush=True,
            )
            out.setdefault(engine, {})[n] = res
            shutil.rmtree(folder, ignore_errors=True)
    return out


# ------------------------------------------------------------------------------------------------------ report


def scaling(times: dict[int, float]) -> tuple[float, float | None]:
    """(growth: time per document at the largest size over the smallest's; marginal: the cost per document between
    the two largest sizes over that between the two smallest, from three sizes on)."""
    sizes = sorted(times)
    lo, hi = sizes[0], sizes[-1]
    growth = (times[hi] / hi) / (times[lo] / lo) if times[lo] else 0.0
    if len(sizes) < 3:
        return growth, None
    first = (times[sizes[1]] - times[sizes[0]]) / (sizes[1] - sizes[0])
    last = (times[sizes[-1]] - times[sizes[-2]]) / (sizes[-1] - sizes[-2])
    return growth, (last / first if first > 0 else None)


def print_build(runs: dict[int, dict]) -> float:
    sizes = sorted(runs)
    print()
    print(f"whole build, DirectRunner with {WORKERS} workers (ms/doc: stage seconds per page of the crawl)")
    head = f"{'stage':<15}" + "".join(f" {f'{n:,} in':>11} {'ms/doc':>7} {'MiB':>6}" for n in sizes)
    head += f" {'growth':>6} {'marginal':>8}"
    print(head)
    print("-" * len(head))
    worst = 0.0
    for st in (*STAGES, "overall"):
        row, times = f"{e2e.LABEL.get(st, st):<15}", {}
        for n in sizes:
            r = runs[n]
            if st == "overall":
                secs, docs_in, rss = r["wall"], r["docs"], r["maxrss"]
            else:
                secs, docs_in, rss = r["stages"][st]["s"], r["stages"][st]["in"], r["stages"][st]["rss"]
            times[n] = secs
            row += f" {docs_in:>11,} {secs / n * 1000:>7.2f} {rss / MIB:>6,.0f}"
        growth, marginal = scaling(times)
        worst = max(worst, growth, marginal or 0.0)
        print(row + f" {growth:>6.2f} {'-' if marginal is None else f'{marginal:.2f}':>8}")
    return worst


def print_dedup(series: dict[str, dict[int, dict]]) -> float:
    print()
    print(f"dedup global phase on planted keys ({WORKERS} workers; 14 bands x 8 rows, verify off)")
    worst = 0.0
    for engine, runs in series.items():
        sizes = sorted(runs)
        for n in sizes:
            r, t = runs[n], runs[n]["truth"]
            print(
                f"  {engine:<10} {n:>12,} docs {r['wall']:>8.1f} s {r['wall'] / n * 1e6:>8.1f} us/doc "
                f"{r['cpu'] / n * 1e6:>8.1f} CPU us/doc {r['maxrss'] / MIB:>7,.0f} MiB  recall "
                f"{t['found'] / max(1, t['copies']):.4f}  false {t['false']}  partitions {r['report']['partitions']}"
            )
        growth, marginal = scaling({n: runs[n]["wall"] for n in sizes})
        worst = max(worst, growth, marginal or 0.0)
        print(
            f"  {engine:<10} growth {growth:.2f}, marginal {'-' if marginal is None else f'{marginal:.2f}'}"
        )
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="10^6 pages and 10^7 dedup documents (hours)")
    ap.add_argument("--work", help="working folder (kept); default a temporary one, removed at the end")
    ap.add_argument("--build-sizes", help="comma-separated page counts (default 10000,30000)")
    ap.add_argument("--dedup-sizes", help="comma-separated document counts (default 100000,300000,1000000)")
    ap.add_argument(
        "--engines", default=",".join(ENGINES), help="dedup series engines (default beam,datatrove)"
    )
    ap.add_argument(
        "--build-engine",
        default="beam",
        choices=tuple(e2e.ENGINE_FLAGS),
        help="the build series' engine (default beam: the DirectRunner with 2 workers; local: --engine local)",
    )
    ap.add_argument(
        "--series",
        default="build,dedup",
        help="build,dedup (default: both, then the incremental check and the bench line with every key); one of"
        " them alone repeats that series and prints the keys it measured; estimate: only new dry runs, compared"
        " with the builds an earlier run left in --work",
    )
    args = ap.parse_args()

    def sizes(flag: str | None, default: tuple[int, ...], full: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(sorted({int(x) for x in flag.split(",")})) if flag else full if args.full else default

    build_sizes = sizes(args.build_sizes, DEFAULT_BUILD, FULL_BUILD)
    dedup_sizes = sizes(args.dedup_sizes, DEFAULT_DEDUP, FULL_DEDUP)
    engines = tuple(e for e in args.engines.split(",") if e)
    tmp = None if args.work else tempfile.mkdtemp(prefix="bench-scale-")
    work = Path(args.work or tmp).resolve()
    work.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    try:
        refuse_small_machine(args.full, work)
        series = set(args.series.split(","))
        if series == {"estimate"}:
            worst = print_estimates(measured_builds(work, build_sizes))
            print(f"bench: scale estimate_worst_ratio={worst:.2f}")
            return
        if not series or not series <= {"build", "dedup"}:
            raise SystemExit(f"scale: --series takes build, dedup, both, or estimate; not {args.series!r}")
        warm_up(work, args.build_engine)
        dedup = dedup_series(work, dedup_sizes, engines) if "dedup" in series else {}
        builds = build_series(work, build_sizes, args.build_engine) if "build" in series else {}
        worst = max(print_build(builds) if builds else 0.0, print_dedup(dedup) if dedup else 0.0)
        recalls = [r["recall"]["found"] / max(1, r["recall"]["copies"]) for r in builds.values()]
        recalls += [
            r["truth"]["found"] / max(1, r["truth"]["copies"]) for e in dedup.values() for r in e.values()
        ]
        keys = []
        if builds:
            print_estimates(builds)
            keys += [
                f"pages_max={max(build_sizes)}",
                f"build_rss_mb={builds[max(build_sizes)]['maxrss'] / MIB:.0f}",
            ]
        if dedup:
            dedup_rss = max(e[max(dedup_sizes)]["maxrss"] for e in dedup.values()) / MIB
            keys += [f"dedup_docs_max={max(dedup_sizes)}", f"dedup_rss_mb={dedup_rss:.0f}"]
        keys += [f"worst_scaling={worst:.2f}", f"dedup_recall={min(recalls):.4f}"]
        if series >= {"build", "dedup"}:
            import incremental

            inc = incremental.check(work / "incremental")
            print(f"incremental: {inc['line']}")
            keys.append(f"incremental_equal={int(inc['equal'])}")
        print(f"benchmark wall time {time.perf_counter() - t_start:.0f} s")
        print("bench: scale " + " ".join(keys))
    finally:
        if tmp:
            with contextlib.suppress(OSError):
                shutil.rmtree(tmp)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_dedup":
        dedup_child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        main()
