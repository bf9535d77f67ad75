"""``build_mixture --engine datatrove``: the same bytes as the Beam engine, and resumable after a kill."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, engine_cmd, run_build, small_build_fixture, tree_digest
from tests.slurm_cluster import ensure_installed, local_cluster

# What may differ between engines: the global phases' run statistics (Beam's shuffle bytes and metrics, datatrove's
# own counts), the run record, and datatrove's logs.
ENGINE_RECORDS = ("global.json", "experiment.json")


def comparable(out: Path) -> dict[str, str]:
    """Digest of every output file the two engines must write identically."""
    digest = {}
    for path, h in tree_digest(out).items():
        if path.startswith("_datatrove/") or path.rsplit("/", 1)[-1] in ENGINE_RECORDS:
            continue
        if path.endswith("/stage.json"):
            doc = json.loads((out / path).read_text())
            doc.pop("dedup", None)  # the global report (run statistics), also in global.json
            h = json.dumps(doc, sort_keys=True)
        digest[path] = h
    return digest


dt_build = engine_cmd("datatrove")


datatrove_small = small_build_fixture("datatrove", "--workers", "2")


def test_local_executor_writes_what_beam_writes(built_small, datatrove_small):
    beam_out, _ = built_small
    dt_out, proc = datatrove_small
    assert (dt_out / "mixture.json").read_bytes() == (beam_out / "mixture.json").read_bytes()
    # every executor reports its tasks' largest resident set in the build's log (datatrove's stats carry each
    # task's peak)
    build_log = "".join(p.read_text() for p in (dt_out / "_logs").glob("build-*.log"))
    peaks = re.findall(
        r" (buckets|shards|components): (\d+) task\(s\), largest process ([\d,]+) MiB", build_log
    )
    assert {p[0] for p in peaks} == {"buckets", "shards", "components"}
    assert all(int(n) >= 1 and 50 < int(mb.replace(",", "")) < 4096 for _, n, mb in peaks)
    beam, dt = comparable(beam_out), comparable(dt_out)
    assert sorted(dt) == sorted(beam)
    caches = [p for p in beam if "/tokenize-" in p]
    assert len(caches) > 10  # zarr arrays, ledgers and markers of every source's cache
    for path in beam:
        assert dt[path] == beam[path], f"{path} differs between the Beam and datatrove engines"
    # the dedup global phase ran as datatrove's file-based stages, each with datatrove's completion markers
    phases = {p.parent.parent.parent.name for p in (dt_out / "_datatrove").rglob("completions/*")}
    assert {
        "signatures",
        "buckets",
        "verify",
        "components",
        "commit",
        "lines",
        "line-buckets",
        "removals",
        "shards",
        "finish",
    } <= phases
    # datatrove's stats carry datapipe's counts
    stats = [json.loads(p.read_text()) for p in (dt_out / "_datatrove").rglob("shards/tasks-*/stats/*.json")]
    kept = sum(step["stats"].get("docs_kept", {}).get("total", 0) for st in stats for step in st)
    assert kept == sum(
        json.loads(p.read_text())["counts"]["docs_kept"] for p in dt_out.glob("*/*/stage.json")
    )
    assert (json.loads((dt_out / "experiment.json").read_text()))["runner"] == "datatrove-local"


@pytest.mark.slow
def test_demo_mixture_on_the_local_executor_equals_beam(demo, tmp_path):
    """The acceptance check: the bundled demo mixture (10 sources; dedup, paragraphs, quality) on
    ``--engine datatrove --executor local`` writes the Beam engine's mixture.json and caches byte for byte.
    ~2 minutes, so in ``make test-all``; ``make test`` compares the engines on the small mixture (above) and on
    the quality stage (tests/test_quality.py)."""
    beam_out, _ = demo
    out = tmp_path / "out"
    proc = run_build(
        "--mixture", "dclm_phase3.yaml", "--output", str(out), "--engine", "datatrove", "--executor", "local"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "mixture.json").read_bytes() == (beam_out / "mixture.json").read_bytes()
    beam, dt = comparable(beam_out), comparable(out)
    assert sorted(dt) == sorted(beam)
    assert sum("/tokenize-" in p for p in beam) >= 10 * 6  # every source's cache: arrays, ledger, markers
    assert [p for p in beam if dt[p] != beam[p]] == []


def test_prints_the_beam_engines_lines_and_logs_to_the_log_folders(built_small, datatrove_small):
    """The console gets what the Beam engine prints (one line per stage, the summary), not datatrove's logs (a
    stats dump per task, lines 350 characters wide: 1,600 lines for the demo mixture where Beam printed 40); those
    go to the build's log (``_logs/build-*.log``) and each task's log folder."""
    beam_out, beam = built_small
    out, proc = datatrove_small
    stages = list(out.glob("*/*/stage.json"))
    assert stages and proc.stderr.strip() == "", proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert len(lines) <= len(stages) + 15, proc.stdout[-3000:]
    # a stage's line is report_stage's, the Beam engine's (a long list of removal reasons makes it long)
    assert [s for s in lines if len(s) > 200 and " ran in " not in s] == []

    def same(text: str, folder: Path) -> list[str]:  # but for the output folder, times and the stages' order
        text = text.replace(str(folder), "OUT")
        return sorted(re.sub(r" ran in +[\d.]+s ", " ran in ", s) for s in text.splitlines())

    assert sum(" ran in " in s for s in lines) == len(stages)
    assert same(proc.stdout, out) == same(beam.stdout, beam_out)
    build_log = "".join(p.read_text() for p in (out / "_logs").glob("build-*.log"))
    assert "Stats: All" in build_log  # datatrove's own records, from this process
    tasks = list((out / "_datatrove").rglob("logs/task_*.log"))
    assert tasks and all("Processing done" in p.read_text() for p in tasks)
    # what each task would have printed, beside its log
    assert all(p.with_suffix(".console").exists() for p in tasks)


def test_rerun_skips_everything(small_mixture, datatrove_small):
    out, _ = datatrove_small
    before = tree_digest(out)
    proc = run_build("--mixture", str(small_mixture), "--output", str(out), "--engine", "datatrove")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert " ran in " not in proc.stdout and "skipped (cached)" in proc.stdout
    after = tree_digest(out)
    assert {k: v for k, v in after.items() if "experiment" not in k} == {
        k: v for k, v in before.items() if "experiment" not in k
    }


def test_phases_get_no_more_tasks_than_they_have_items(datatrove_small):
    """``--buckets`` is 4 by default, but a partition phase gets at most one task per partition (an idle task still
    costs a process, on Slurm an array element), and ``earlier`` runs only with ``dedup.against``."""
    out, _ = datatrove_small
    stages = list((out / "_datatrove").glob("*/dedup-*"))
    assert stages
    for dedup in stages:
        phases = {p.parent.name: p.name for p in dedup.glob("*/tasks-*")}
        parts = json.loads((out / dedup.parent.name / dedup.name / "global.json").read_text())["partitions"]
        assert "earlier" not in phases and "signatures" in phases
        for phase in ("buckets", "verify", "removals"):
            assert phases[phase] == f"tasks-{min(4, parts)}", (dedup, phases)


@pytest.mark.reliability
@pytest.mark.slow  # ~45 s each; make test-all (make test kills Beam builds, tests/test_reliability.py)
@pytest.mark.parametrize("moment", ["signatures", "shards"])
def test_killed_stage_resumes_to_the_same_bytes(small_mixture, datatrove_small, tmp_path, moment):
    """SIGKILL once datatrove has marked a task of the dedup stage's ``moment`` phase complete, then a rerun: the
    completed task is skipped (its log is not rewritten), and the output equals the uninterrupted build."""
    ref, _ = datatrove_small
    out = tmp_path / "out"
    proc = subprocess.Popen(
        dt_build(small_mixture, out, "--workers", "1"),
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # the kill takes the whole build, datatrove's manager process included
    )
    pattern = f"_datatrove/*/dedup-*/{moment}/tasks-*/completions/*"
    deadline = time.monotonic() + 300
    while not list(out.glob(pattern)) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = sorted(out.glob(pattern))
    assert done, f"the build ended before any {moment} task completed"
    logs = {
        p: p.stat().st_mtime_ns for p in out.glob(f"_datatrove/*/dedup-*/{moment}/tasks-*/logs/task_*.log")
    }
    finished_task_logs = {p: m for p, m in logs.items() if any(d.name in p.name for d in done)}
    assert finished_task_logs
    rerun = run_build("--mixture", str(small_mixture), "--output", str(out), "--engine", "datatrove")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    for path, mtime in finished_task_logs.items():
        assert path.stat().st_mtime_ns == mtime, f"{path}: a completed datatrove task ran again"
    want = {
        k: v for k, v in tree_digest(ref).items() if not k.startswith("_datatrove/") and "experiment" not in k
    }
    got = {
        k: v for k, v in tree_digest(out).items() if not k.startswith("_datatrove/") and "experiment" not in k
    }
    assert got == want


STEP_THEN_WRITER = """
import sys
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.writers import JsonlWriter
from datapipe import load_mixture
from datapipe.orchestrate.plan import check_inputs, make_stage, plan_mixture
from datapipe import load_tokenizer
from pipelines.datatrove.steps import StageShards

mixture_file, out, docs, logs = sys.argv[1:]
mixture = load_mixture(mixture_file, output=out)
files = check_inputs(mixture, mixture.sources)
plans = plan_mixture(mixture, mixture.sources, files, load_tokenizer(mixture.tokenizer).identity.sha256)
sp = next(p for p in plans if any(st.stage == "filter" for st in p.stages))
st = sp.stage("filter")
step = StageShards(make_stage(mixture, sp, st), tuple(st.shards), emit_documents=True)
LocalPipelineExecutor([step, JsonlWriter(docs)], tasks=1, workers=1, logging_dir=logs).run()
print(st.out_dir)
"""


def test_a_stage_step_feeds_datatrove_steps(small_mixture, datatrove_small, tmp_path):
    """``StageShards(emit_documents=True)`` in a datatrove pipeline before datatrove's own JsonlWriter: the writer
    gets exactly the stage's kept documents (committed shards are read back, not redone). In a child process:
    datatrove's executor forks, which a test process that has loaded JAX must not do."""
    import gzip

    from datapipe import read_records

    out, _ = datatrove_small
    docs = tmp_path / "docs"
    args = [str(small_mixture), str(out), str(docs), str(tmp_path / "logs")]
    proc = subprocess.run(
        [sys.executable, "-c", STEP_THEN_WRITER, *args], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    stage_dir = Path(proc.stdout.strip().splitlines()[-1])
    written = []
    for path in sorted(docs.glob("*.jsonl.gz")):
        with gzip.open(path, "rt") as f:
            written += [json.loads(line)["id"] for line in f]
    kept = [d["id"] for part in sorted(stage_dir.glob("part-*.jsonl.zst")) for d in read_records(str(part))]
    assert written == kept and len(kept) > 10


FAILING_TASK = """
import sys
from datatrove.pipeline.base import PipelineStep
from datapipe import DatapipeError
from datapipe.errors import error_lines
from pipelines.datatrove.engine import DatatroveOptions, Job, run_in_turn
from pipelines.datatrove.logs import datatrove_logs_to_logging

class Fails(PipelineStep):
    name = "fails"

    def run(self, data=None, rank=0, world_size=1):
        if rank == 1:
            from datapipe import DatapipeError  # a worker gets this class, not this script's globals

            raise {error}("shard 1 cannot be read")
        yield from ()

with datatrove_logs_to_logging():
    try:
        run_in_turn(Job("src/stage", "shards", [Fails()], 2, sys.argv[1]), DatatroveOptions(workers=2))
    except DatapipeError as e:
        print(error_lines(e), file=sys.stderr)
        sys.exit(2)
"""


@pytest.mark.parametrize("error", ["DatapipeError", "ValueError"])
def test_a_failing_task_is_one_line(tmp_path, error):
    """A task that raises stops the build with one line (a DatapipeError's own, anything else naming the phase and
    the task logs), not datatrove's tracebacks: those are in the task's log."""
    logs = tmp_path / "logs"
    proc = subprocess.run(
        [sys.executable, "-c", FAILING_TASK.format(error=error), str(logs)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr[-3000:]
    (line,) = proc.stderr.splitlines()
    if error == "DatapipeError":
        assert line == "error: shard 1 cannot be read"
    else:
        assert line == (
            "error: src/stage shards: a datatrove task failed (ValueError: shard 1 cannot be read); "
            f"its traceback is in {logs}/logs/"
        )
    assert "Traceback" in (logs / "logs" / "task_00001.log").read_text()


def test_bad_engine_flags_are_one_line_errors(small_mixture, tmp_path):
    base = ["--mixture", str(small_mixture), "--output", str(tmp_path / "o"), "--engine", "datatrove"]
    proc = run_build(*base, "--runner=X")
    assert proc.returncode == 2
    assert "error: unknown argument(s) with --engine datatrove: --runner=X" in proc.stderr
    proc = run_build(*base, "--executor", "slurm")
    assert proc.returncode == 2 and "--partition" in proc.stderr
    # no Slurm to reach (none installed, or a controller that does not answer): one line before any work
    proc = subprocess.run(
        [*dt_build(small_mixture, tmp_path / "o"), "--executor", "slurm", "--partition", "test"],
        cwd=REPO,
        env={**os.environ, "SLURM_CONF": str(tmp_path / "no-such-slurm.conf")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: --executor slurm: ") and ("not found on PATH" in line or "sinfo" in line)
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_demo_mixture_on_a_local_slurm_cluster(tmp_path):
    """A one-node Slurm cluster (munged + slurmctld + slurmd) on localhost: the demo mixture submitted through
    datatrove's SlurmPipelineExecutor as a chain of array jobs writes what the local executor writes."""
    why = ensure_installed()
    if why:
        pytest.skip(f"no Slurm here: {why}")
    local, on_slurm = tmp_path / "local", tmp_path / "slurm"
    proc = run_build("--mixture", "dclm_phase3.yaml", "--output", str(local), "--engine", "datatrove")
    assert proc.returncode == 0, proc.stderr[-3000:]
    with local_cluster(tmp_path / "cluster") as env:
        nosuch = dt_build(Path("dclm_phase3.yaml"), on_slurm, "--executor", "slurm", "--partition", "nosuch")
        proc = subprocess.run(nosuch, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and proc.stderr.strip() == (
            "error: --partition nosuch: no such Slurm partition (see sinfo)"
        ), proc.stderr[-2000:]
        assert not on_slurm.exists()
        cmd = dt_build(Path("dclm_phase3.yaml"), on_slurm, "--executor", "slurm", "--partition", "test")
        proc = subprocess.run(
            [*cmd, "--mem-per-cpu-gb", "1"], cwd=REPO, env=env, capture_output=True, text=True, timeout=1800
        )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert proc.stdout.count(" ran in ") == sum(1 for _ in local.glob("*/*/stage.json"))
    scripts = list(on_slurm.glob("_datatrove/*/*/*/tasks-*/launch_script.slurm"))
    assert scripts and all("#SBATCH --partition=test" in s.read_text() for s in scripts)
    assert list(
        on_slurm.glob("_datatrove/*/*/shards/tasks-*/slurm_logs/*.out")
    )  # the tasks ran as Slurm jobs
    assert (on_slurm / "mixture.json").read_bytes() == (local / "mixture.json").read_bytes()
    assert comparable(on_slurm) == comparable(local)
    assert json.loads((on_slurm / "experiment.json").read_text())["runner"] == "datatrove-slurm"
