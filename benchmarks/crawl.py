"""Reading a Common Crawl dump by name through a real HTTP server with faults, against the same files read from disk.

Data: the real pages of ``benchmarks/e2e.py``'s corpus (every HTML page of the Debian documentation packages
``debian_pages.py`` names, ~5,250, installed by name when missing; fewer than 5,000 and the benchmark refuses to
run), written as e2e writes them (one gzipped HTTP response record a page), then cut at record boundaries into a
miniature dump laid out as Common Crawl lays one out (``tests/crawl_server.build_crawl_tree``): 64 WARC files over 8
segments under ``crawl-data/CC-MAIN-2024-10/segments/<segment>/warc/``, and their listing ``warc.paths.gz``.

The server: the tests' loopback HTTP server (``tests/crawl_server.py``), with faults on a fixed set of the sampled
files: a 503 storm (503, 503, S3's ``SlowDown``) on six, a 429 on two, a connection cut part-way through the body on
four (resumed by a range request), a cut followed by a server that ignores the range (the file read again from the
start) on one, and a read that stalls past the policy's timeout on one.

Two builds of the same one-source mixture (the default extractor, lid.176 en >= 0.65, ``refinedweb`` filters,
exact + MinHash ``fineweb`` dedup, GPT-2), each timed from launch to exit, after an untimed warm-up build of the
files from disk (numba's caches, bytecode):

* ``crawl``: ``commoncrawl: {crawl: CC-MAIN-2024-10, sample: {fraction: 0.85, seed: 0}}`` from the server, the fetch
  policy Common Crawl's defaults with the back-off scaled down (``base_s`` 0.1, ``cap_s`` 1, ``timeout_s`` 2; the
  defaults wait seconds to an hour);
* ``local``: ``format: warc`` with ``paths`` the sampled files on disk, ``data_root`` the dump's root, so that
  every document is named the same (the path in the dump).

Both on the local engine with two processes (``--engine beam`` runs both on Beam's DirectRunner). ``identical`` is
1 when every file of every stage (the parts, removed records, the token cache) is byte-identical between the two
builds, the stages matched by name (their folders' hashes differ: a crawl file is named by its path in the dump, a
local file also by its size), leaving out ``stage.json``, the shards' statistics and timing files (the crawl build's
hold its fetch counts) and the crawl build's stored listing. ``vs_local`` is the local build's wall time over the
crawl build's (throughput through the server relative to local files).

Run: ``.venv/bin/python benchmarks/crawl.py``. Last line:
``bench: crawl files=N throttled=K resumed=R missing=M identical=I vs_local=X``
Targets (issue 65): N >= 50, K >= 1, R >= 1, M = 0, I = 1, X >= 0.8.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from e2e import build_corpus, byte_compile, child_env, real_pages  # noqa: E402

from tests.crawl_server import CRAWL, CrawlServer, build_crawl_tree  # noqa: E402

FILES, SEGMENTS, FRACTION = 64, 8, 0.85
POLICY = "{base_s: 0.1, cap_s: 1, timeout_s: 2, attempts: 10}"
ENGINES = {
    "local": ["--engine", "local", "--processes", "2"],
    "beam": ["--engine", "beam", "--direct_running_mode=multi_processing", "--direct_num_workers=2"],
}
STAGES = """\
    langid: {languages: [en], min_score: 0.65}
    filters: {preset: refinedweb}
    dedup: {exact: true, minhash: {preset: fineweb}}
"""
SKIP_SUFFIXES = (".stats.json", ".timing.json", ".progress")


def faults(sampled: list[str]) -> dict[str, list[str]]:
    """The faults each of a fixed set of the sampled files meets (by its place in the sample)."""
    plan: dict[str, list[str]] = {}
    for i in range(0, 6):
        plan[sampled[i * 7]] = ["503", "503", "slowdown"]
    for i in (3, 11):
        plan[sampled[i]] = ["429"]
    for i in (5, 19, 29, 37):
        plan[sampled[i]] = ["cut:150000"]
    plan[sampled[23]] = ["cut:90000", "norange"]
    plan[sampled[45]] = ["stall:5"]
    return {"/" + k: v for k, v in plan.items()}


def mixture(path: Path, source: str, data_root: Path) -> None:
    path.write_text(
        f"name: crawl\ndata_root: {data_root}\nseed: 0\ntokenizer: {{path: 'builtin:gpt2'}}\nsources:\n"
        f"  web:\n    weight: 1\n{source}{STAGES}"
    )


def build(mix: Path, out: Path, engine: str, env: dict[str, str]) -> float:
    from pipelines.build_mixture import command

    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    proc = subprocess.run(
        command(str(mix), str(out), *ENGINES[engine]), capture_output=True, text=True, env=env
    )
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"crawl benchmark: the build of {mix.name} failed:\n{proc.stderr[-3000:]}")
    return took


def stage_files(out: Path) -> dict[str, bytes]:
    """Every file of every stage of a build, by ``<stage name>/<file>``, less what holds counts or times."""
    got = {}
    for folder in sorted((out / "web").iterdir()):
        if folder.name == "crawl":
            continue
        stage = folder.name.rsplit("-", 1)[0]
        for f in sorted(folder.rglob("*")):
            if f.is_file() and f.name != "stage.json" and not f.name.endswith(SKIP_SUFFIXES):
                got[f"{stage}/{f.relative_to(folder)}"] = f.read_bytes()
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", choices=sorted(ENGINES), default="local")
    ap.add_argument("--work", type=Path, help="work folder (default: a temporary one, removed after)")
    args = ap.parse_args()
    if (os.cpu_count() or 1) < 2:
        sys.exit("crawl benchmark: needs 2 cores (both builds run two processes)")
    work = args.work or Path(tempfile.mkdtemp(prefix="datapipe-crawl-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    env = child_env(work)
    try:
        pages = real_pages()
        corpus = work / "corpus"
        shutil.rmtree(corpus, ignore_errors=True)
        records = build_corpus(corpus, pages)
        root = work / "bucket"
        shutil.rmtree(root, ignore_errors=True)
        build_crawl_tree(root, sorted(corpus.glob("web-*.warc.gz")), FILES, SEGMENTS)
        byte_compile()
        with CrawlServer(root) as server:
            crawl_mix = work / "crawl.yaml"
            mixture(
                crawl_mix,
                f"    commoncrawl:\n      crawl: {CRAWL}\n      sample: {{fraction: {FRACTION}, seed: 0}}\n"
                f"      base_url: {server.url}\n      fetch: {POLICY}\n",
                root,
            )
            from pipelines.build_mixture import command

            dry = subprocess.run(
                command(str(crawl_mix), str(work / "dry"), "--dry-run"),
                capture_output=True,
                text=True,
                env=env,
            )
            if dry.returncode != 0:
                sys.exit(f"crawl benchmark: the dry run failed:\n{dry.stderr[-3000:]}")
            plan_line = next(x for x in dry.stdout.splitlines() if x.startswith("fetch web:"))
            print(plan_line)
            # the sample, as the build will read it (the listing stored by the build names the same files)
            sys.path.insert(0, str(REPO))
            from datapipe import Sample, parse_listing
            from datapipe import sample_files as sample

            listed = parse_listing((root / f"crawl-data/{CRAWL}/warc.paths.gz").read_bytes(), CRAWL, "warc")
            sampled = [f.path for f in sample(listed, Sample(fraction=FRACTION, seed=0))]
            local_mix = work / "local.yaml"
            mixture(local_mix, f"    format: warc\n    paths: [{', '.join(sampled)}]\n", root)
            build(local_mix, work / "warm", args.engine, env)  # untimed: numba's caches, bytecode
            t_local = build(local_mix, work / "out-local", args.engine, env)
            server.faults.update(faults(sampled))
            t_crawl = build(crawl_mix, work / "out-crawl", args.engine, env)
        (extract,) = (work / "out-crawl" / "web").glob("extract-*")
        cov = json.loads((extract / "stage.json").read_text())["crawl"]
        ours, theirs = stage_files(work / "out-crawl"), stage_files(work / "out-local")
        differ = sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
        identical = int(not differ and bool(ours))
        size = sum((root / p).stat().st_size for p in sampled)
        print(
            f"dump: {FILES} files over {SEGMENTS} segments, {records:,} real pages; sampled {len(sampled)} files, "
            f"{size / 1e6:.1f} MB ({args.engine} engine, 2 processes)"
        )
        print(
            f"crawl build: {t_crawl:.1f} s; {cov['requests']} requests, {cov['retried']} retried, "
            f"{cov['throttled']} throttled, {cov['resumed']} resumed, {cov['backoff_s']:.1f} s of back-off, "
            f"{cov['missing']} missing; {cov['records']:,} records, {cov['bytes'] / 1e6:.1f} MB"
        )
        print(f"local build: {t_local:.1f} s")
        print(f"files compared: {len(ours)}; differing: {len(differ)} {differ[:5]}")
        print(
            f"bench: crawl files={cov['planned']} throttled={cov['throttled']} resumed={cov['resumed']} "
            f"missing={cov['missing']} identical={identical} vs_local={t_local / t_crawl:.2f}"
        )
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
