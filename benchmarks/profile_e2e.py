"""Where the end-to-end build's time goes, per stage and for the fixed cost (issue 43 item 1).

The build is ``benchmarks/e2e.py``'s: the same ~5,250 real Debian pages in 8 WARC shards, the same mixture (our
extractor, lid.176, ``refinedweb`` filters, exact + MinHash dedup, the fixture quality classifier, GPT-2), the same
2 worker processes on the same engine (``--engine local``, or ``beam`` for the DirectRunner), after the same untimed
warm-up build. It runs under py-spy (``pip install py-spy``, done
here when missing), which samples the launcher and every worker process it starts (``--subprocesses``), and a
second, tiny build (8 pages) shows the fixed cost: what a build spends whatever its input.

Each sample (one process's stack at one instant, active threads only) is given to the first category its stack
matches, innermost frame first: a stage's own modules (``datapipe/extract``, ``datapipe/langid``, ...) and the
libraries only that stage calls (a frame of ``datapipe/kernels/`` names no stage: the compiled kernels are shared,
lid.176's scan in ``kernels/fasttext.py`` is language ID's, ``kernels/normalize.py`` dedup's and the filters', so
it is passed over and the sample goes to the kernel's caller; until 2026-12-07 every kernel frame counted as
``filters``, language ID's scan, 8% of the build's samples, and dedup's normalizing among them); the stage
runtime's reading and writing of parts (zstd JSONL); the tokenizer and the cache writes; model loading; imports;
and what is left in Beam's runner. The table is each category's share of the samples, over all processes, times
the build's CPU seconds as ``e2e.py``'s wrapper measures them (user + sys of the whole process tree): with two
cores, a thread that waits for one while py-spy runs is sampled as running, so the samples alone (samples / rate)
overstate the CPU time, by about 1.7x on 2026-12-04.

    .venv/bin/python benchmarks/profile_e2e.py [--work DIR] [--rate 100]

Last line: ``bench: profile_e2e cpu_s=C fixed_cpu_s=F top=CATEGORY:SHARE ...``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HERE = REPO / "benchmarks"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

# (category, pattern over one frame "function (path:line)"), tried innermost frame first; the first match wins. No
# pattern names datapipe/kernels/: a kernel's frame is passed over, and its caller's frame decides
CATEGORIES: list[tuple[str, re.Pattern[str]]] = [
    ("import", re.compile(r"<frozen importlib\._bootstrap")),
    (
        "load models",
        re.compile(r"load_model|load_fasttext|from_file|Tokenizer\.from|_load_lid|read_supervised"),
    ),
    ("extract: HTML -> text", re.compile(r"datapipe/extract/|selectolax|resiliparse|treewalk")),
    ("extract: WARC read", re.compile(r"datapipe/io/warc\.py|fastwarc|warcio|datapipe/io/readers\.py")),
    ("langid", re.compile(r"datapipe/langid/")),
    ("filters", re.compile(r"datapipe/filters/|datapipe/languages/")),
    ("dedup", re.compile(r"datapipe/dedup/")),
    ("quality", re.compile(r"datapipe/quality/")),
    ("tokenize", re.compile(r"datapipe/tokenize/|tokenizers/")),
    ("cache write", re.compile(r"datapipe/store/|tensorstore")),
    ("parts: read/write JSONL", re.compile(r"datapipe/io/jsonl\.py|zstandard|orjson")),
    ("stage runtime", re.compile(r"datapipe/runtime/")),
    (
        "build: plan, checks, manifest",
        re.compile(r"datapipe/orchestrate/|datapipe/config/|pipelines/build_mixture"),
    ),
    ("Beam runner", re.compile(r"apache_beam|pipelines/beam/|grpc")),
    # pickling and pipes between processes: the extraction sandbox's batches, the local engine's tasks
    ("process pipes", re.compile(r"multiprocessing/connection|multiprocessing/reduction")),
    ("local engine", re.compile(r"pipelines/local/|multiprocessing/")),
]


def ensure_py_spy() -> str:
    exe = Path(sys.executable).with_name("py-spy")
    if not exe.exists() and importlib.util.find_spec("py_spy") is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "py-spy"], check=True)
    if not exe.exists():
        sys.exit("profile_e2e: py-spy did not install a py-spy program beside this Python")
    return str(exe)


def categorize(raw: Path) -> Counter[str]:
    """Samples per category from py-spy's raw (collapsed) output. A line without a sample count at its end (py-spy
    has written a garbled one, 2026-12-07) is left out and said."""
    out: Counter[str] = Counter()
    unreadable = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            unreadable += 1
            continue
        frames = [f for f in stack.split(";") if not f.startswith("process ")]
        for frame in reversed(frames):
            hit = next((name for name, pat in CATEGORIES if pat.search(frame)), None)
            if hit is not None:
                out[hit] += int(count)
                break
        else:
            out["other"] += int(count)
    if unreadable:
        print(f"profile_e2e: {raw}: {unreadable} line(s) without a sample count left out", file=sys.stderr)
    return out


def profile(spy: str, cmd: list[str], raw: Path, rate: int, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, the build's own CPU seconds): the build runs under e2e.py's wrapper, which reaps its whole
    process tree and reports its user + sys time. py-spy's samples give each category's share only: with two cores
    a thread that waits for one is sampled as running, so the sampled total runs well over the CPU time."""
    t0 = time.perf_counter()
    result, log = raw.with_suffix(".result.json"), raw.with_suffix(".log")
    wrapped = [sys.executable, str(HERE / "e2e.py"), "_wrap", str(result), str(log), "a^", "--", *cmd]
    proc = subprocess.run(
        [spy, "record", "--subprocesses", "--full-filenames", "--format", "raw", "--rate", str(rate),
         "--nonblocking", "-o", str(raw), "--", *wrapped],
        cwd=REPO, env=env, capture_output=True, text=True,
    )  # fmt: skip
    wrap = json.loads(result.read_text()) if result.exists() else {"rc": None}
    if proc.returncode != 0 or wrap["rc"] != 0:
        sys.exit(f"profile_e2e: the profiled build failed:\n{proc.stderr[-3000:]}")
    return time.perf_counter() - t0, float(wrap["cpu"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", help="working folder (kept); default a temporary one")
    ap.add_argument("--rate", type=int, default=100, help="samples a second per process (default 100)")
    ap.add_argument("--engine", default="local", choices=("local", "beam"), help="our engine (as e2e.py's)")
    args = ap.parse_args()
    import e2e

    from pipelines.build_mixture import command

    spy = ensure_py_spy()
    work = Path(args.work or tempfile.mkdtemp(prefix="profile-e2e-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    pages = e2e.real_pages()
    model = e2e.train_classifier(work)
    env = e2e.child_env(work)
    flags = e2e.ENGINE_FLAGS[args.engine]
    runs = {}
    for tag, chosen in (("warmup", pages[::20]), ("fixed", pages[:8]), ("full", pages)):
        corpus, out, mixture = work / f"corpus-{tag}", work / f"out-{tag}", work / f"mixture-{tag}.yaml"
        for p in (corpus, out):
            shutil.rmtree(p, ignore_errors=True)
        e2e.build_corpus(corpus, chosen, shards=2 if tag != "full" else e2e.SHARDS)
        e2e.write_mixture(mixture, corpus, model, 0.5, 5.0)
        cmd = command(str(mixture), str(out), *flags)
        if tag == "warmup":  # the bytecode and numba's caches, as e2e.py does: not profiled
            e2e.byte_compile()
            subprocess.run(cmd, cwd=REPO, env=env, check=True, capture_output=True)
            continue
        raw = work / f"profile-{tag}.txt"
        wall, cpu = profile(spy, cmd, raw, args.rate, env)
        runs[tag] = (len(chosen), wall, cpu, categorize(raw))
    full_pages, full_wall, total, full = runs["full"]
    _, fixed_wall, fixed_total, fixed = runs["fixed"]
    n_full, n_fixed = sum(full.values()), sum(fixed.values())
    print(
        f"profile_e2e: {full_pages:,} pages, 2 workers, {args.engine} engine; "
        f"py-spy at {args.rate} samples/s per process"
    )
    print(f"{'category':<32} {'full build CPU s':>16} {'share':>7} {'8-page build CPU s':>19}")
    for name, n in full.most_common():  # each category's share of the samples, of the build's measured CPU
        print(
            f"{name:<32} {total * n / n_full:>16.1f} {n / n_full:>7.1%} {fixed_total * fixed[name] / n_fixed:>19.1f}"
        )
    print(f"{'total (measured)':<32} {total:>16.1f} {'':>7} {fixed_total:>19.1f}")
    print(
        f"wall (profiled): full {full_wall:.1f} s, 8 pages {fixed_wall:.1f} s; sampled CPU "
        f"{n_full / args.rate:.1f} s and {n_fixed / args.rate:.1f} s (threads waiting for a core count as running)"
    )
    top = " ".join(
        f"{re.sub(r'[^a-z]+', '_', k.lower()).strip('_')}:{n / sum(full.values()):.2f}"
        for k, n in full.most_common(4)
    )
    print(f"bench: profile_e2e cpu_s={total:.1f} fixed_cpu_s={fixed_total:.1f} top={top}")


if __name__ == "__main__":
    main()
