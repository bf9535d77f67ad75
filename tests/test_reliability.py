"""Killed runs, concurrent runs, determinism of every stage, and input safety (issue 9). Bad inputs and fuzzing
are in test_bad_inputs.py and test_fuzz.py; all are ``-m reliability`` and part of ``make test``."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import CORPORA, REPO, build_cmd, tree_digest, write_mixture
from tests.reliability import tally

pytestmark = pytest.mark.reliability

KILL_MIX = """\
name: kills
data_root: {root}
seed: 3
tokenizer: {{path: builtin:gpt2}}
sources:
  web:
    weight: 2
    format: warc
    paths: [crawl/docs-00000.warc.gz]
    langid: {{languages: [en], min_score: 0.5}}
    filters: {{preset: refinedweb}}
    dedup: {{exact: true, minhash: {{preset: fineweb}}, paragraphs: {{min_chars: 50}}}}
  code:
    weight: 1
    format: parquet
    paths: [code/stdlib-00000.parquet]
    text_field: content
"""


def _committed(out: Path) -> tuple[int, int]:
    """How far a build got: stages with ``_SUCCESS``, and every commit marker (shards, global phases, stages)."""
    if not out.exists():
        return 0, 0
    done = sum(1 for _ in out.glob("*/*/_SUCCESS"))
    markers = (
        done
        + sum(1 for _ in out.glob("*/*/part-*.stats.json"))
        + sum(1 for _ in out.glob("*/*/_GLOBAL_SUCCESS"))
    )
    return done, markers


def stage_digests(out: Path) -> dict[str, dict[str, str]]:
    """Per stage folder (``source/stage-hash``), the digest of every file in it; plus the manifest."""
    digest = tree_digest(out)
    stages: dict[str, dict[str, str]] = {}
    for path, h in digest.items():
        parts = path.split("/")
        key = "/".join(parts[:2]) if len(parts) > 2 else parts[0]
        stages.setdefault(key, {})[path] = h
    return stages


@pytest.fixture(scope="module")
def kill_mix(tmp_path_factory) -> tuple[Path, Path, float]:
    """The kill mixture, its uninterrupted build, and how long that took."""
    folder = tmp_path_factory.mktemp("kills")
    mix = write_mixture(folder, KILL_MIX.format(root=CORPORA))
    t0 = time.perf_counter()
    proc = subprocess.run(build_cmd(mix, folder / "ref"), cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return mix, folder / "ref", time.perf_counter() - t0


def _kill_on_progress(runs: list[tuple[subprocess.Popen, Path, int, float]], limit_s: float) -> None:
    """SIGKILL each build once its output holds ``target`` commit markers, ``delay`` seconds after it got there or
    as soon as the next marker is committed, whichever comes first (so kills land inside the work that follows a
    marker, not only on it, and never past the next one): waits on the builds' progress, so the kills land at the
    same points however fast the machine is; a delay alone let a fast build run on through a burst of markers,
    and two kill points met. A build that ends first is left."""
    reached: dict[int, float] = {}
    deadline = time.monotonic() + limit_s
    pending = list(range(len(runs)))
    while pending:
        assert time.monotonic() < deadline, "the builds made no progress toward their kill points"
        for i in list(pending):
            proc, out, target, delay = runs[i]
            if proc.poll() is not None:
                pending.remove(i)
                continue
            markers = _committed(out)[1]
            if i in reached or markers >= target:
                reached.setdefault(i, time.monotonic())
                if markers > target or time.monotonic() >= reached[i] + delay:
                    proc.send_signal(signal.SIGKILL)
                    pending.remove(i)
        time.sleep(0.005)


@pytest.mark.parametrize("trials", [4, pytest.param(10, marks=pytest.mark.slow)])
def test_killed_builds_resume_to_the_same_bytes(kill_mix, tmp_path, trials):
    """SIGKILL at points spread over the whole build (every stage, global dedup phases, the cache's consolidation,
    the manifest), then a plain rerun: byte-identical to the uninterrupted build. The points are chosen by progress:
    trial t dies a random fraction of a second after its output holds the k-th of the reference build's commit
    markers, k spread over all of them. Two trials run side by side (one per core), each in its own folder.
    ``make test`` kills at 4 points (~35 s), ``make test-all`` at 10."""
    mix, ref, seconds = kill_mix
    reference = tree_digest(ref)
    total = _committed(ref)[1]
    rng = random.Random(11)
    # one kill point in each 1/trials of the build's markers, then up to 0.3 s into the work after it
    plan = [
        (min(total, 1 + int((t + rng.random()) / trials * total)), 0.3 * rng.random()) for t in range(trials)
    ]
    progress_at_kill = set()  # (stages done, shard and phase markers committed) when each kill landed
    for pair in range(0, trials, 2):
        outs = [tmp_path / f"t{t}" for t in (pair, pair + 1)]
        procs = [
            subprocess.Popen(build_cmd(mix, out), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            for out in outs
        ]
        runs = [
            (proc, out, *plan[t]) for t, (proc, out) in enumerate(zip(procs, outs, strict=True), start=pair)
        ]
        _kill_on_progress(runs, limit_s=10 * seconds + 300)
        for proc, out in zip(procs, outs, strict=True):
            proc.communicate()
            progress_at_kill.add(_committed(out))
        reruns = [
            subprocess.Popen(build_cmd(mix, out), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            for out in outs
        ]
        for t, (out, proc) in enumerate(zip(outs, reruns, strict=True), start=pair):
            err = proc.communicate()[1].decode()
            assert proc.returncode == 0, f"trial {t} (killed after marker {plan[t][0]}): {err[-2000:]}"
            assert tree_digest(out) == reference, f"trial {t} (killed after marker {plan[t][0]})"
            shutil.rmtree(out)
            tally("kills")
    print(f"kills landed at (stages done, markers committed) {sorted(progress_at_kill)}")
    # spread over the build: stages finish in bursts now that they run in waves, so count every commit marker
    assert len(progress_at_kill) >= 4, f"kills landed at too few distinct points: {sorted(progress_at_kill)}"
    assert any(0 < done < 7 for done, _ in progress_at_kill), (
        "no kill landed between the first and last stage"
    )


def test_determinism_of_every_stage(kill_mix, tmp_path):
    """1 vs 2 DirectRunner workers, and two separate runs: every stage folder hashes the same."""
    mix, ref, _ = kill_mix
    two = tmp_path / "two_workers"
    workers = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]
    proc = subprocess.run(build_cmd(mix, two, *workers), cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = tmp_path / "again"
    proc = subprocess.run(build_cmd(mix, again), cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    reference = stage_digests(ref)
    stages = [key for key in reference if "/" in key]  # stage folders (the manifest is checked too)
    assert len(stages) == 7  # web: extract, filter, dedup, paragraphs, tokenize; code: extract, tokenize
    for other in (two, again):
        digests = stage_digests(other)
        assert sorted(digests) == sorted(reference)
        for key in reference:
            assert digests[key] == reference[key], f"{key} differs between {ref.name} and {other.name}"
    tally("stages_identical", len(stages))


def test_a_second_build_on_the_same_output_refuses_or_waits(kill_mix, tmp_path):
    mix, _, _ = kill_mix
    out = tmp_path / "out"
    first = subprocess.Popen(
        build_cmd(mix, out), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lease = out / "_LEASE.json"
    deadline = time.time() + 60
    while not lease.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert lease.exists()
    holder = json.loads(lease.read_text())
    # the first build is stopped while the others start (seconds of imports each, more on a busy machine), so it
    # still holds the lease when they look: events, not timing, decide what they see (its TTL is 60 s)
    os.kill(first.pid, signal.SIGSTOP)
    try:
        second = subprocess.run(build_cmd(mix, out), cwd=REPO, capture_output=True, text=True)
        assert second.returncode == 2
        assert second.stderr.count("\n") == 1 and "another build is writing here" in second.stderr
        assert f"pid {holder['pid']}" in second.stderr and "Traceback" not in second.stderr
        waiting = subprocess.Popen(
            build_cmd(mix, out, "--wait-lease", "120"),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert waiting.stdout is not None
        seen = [waiting.stdout.readline()]
        while seen[-1] and "waiting for another build" not in seen[-1]:
            seen.append(waiting.stdout.readline())
        assert "waiting for another build" in seen[-1], seen
    finally:
        os.kill(first.pid, signal.SIGCONT)
    rest, err = waiting.communicate()
    assert first.wait() == 0
    assert waiting.returncode == 0, err[-2000:]
    waiting_out = "".join(seen) + rest
    assert " ran in " not in waiting_out  # all cached
    assert not lease.exists()
    # a lease left by a dead build (no heartbeat for longer than its TTL) is taken over
    lease.write_text(
        json.dumps({"host": "elsewhere", "pid": 1, "run_id": "x", "heartbeat": time.time() - 3600})
    )
    proc = subprocess.run(build_cmd(mix, out), cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0 and "taking over a stale lease" in proc.stderr
    assert not lease.exists()


TRAIN = [
    "--model",
    "tiny",
    "--steps",
    "12",
    "--devices",
    "2",
    "--peak-tflops",
    "1",
    "seq_len=64",
    "global_batch=4",
    "checkpoint.every=2",
    "checkpoint.keep_last=3",
    "checkpoint.async_save=false",
]


def _losses(run: Path) -> dict[int, float]:
    return {r["step"]: r["loss"] for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())}


def test_train_killed_during_a_checkpoint_write_resumes_from_the_last_complete_one(built_small, tmp_path):
    manifest = str(built_small[0] / "mixture.json")
    cmd = [sys.executable, "-m", "datapipe.cli", "train", "--mixture", manifest, *TRAIN]
    ref = subprocess.run([*cmd, "--run-dir", str(tmp_path / "ref")], cwd=REPO, capture_output=True, text=True)
    assert ref.returncode == 0, ref.stderr[-3000:]
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [*cmd, "--run-dir", str(run)], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    ckpts = run / "checkpoints"
    killed_during = None
    deadline = time.time() + 180
    while proc.poll() is None and time.time() < deadline:  # kill as soon as a save is in flight after step 4
        if ckpts.is_dir():
            tmp = [p.name for p in ckpts.iterdir() if "tmp" in p.name]
            done = [int(p.name) for p in ckpts.iterdir() if p.name.isdigit()]
            if tmp and done and max(done) >= 4:
                proc.send_signal(signal.SIGKILL)
                killed_during = tmp[0]
                break
        time.sleep(0.002)
    proc.wait()
    if killed_during is None:
        pytest.fail("never caught a checkpoint write in flight")
    complete = sorted(int(p.name) for p in ckpts.iterdir() if p.name.isdigit())
    again = subprocess.run([*cmd, "--run-dir", str(run)], cwd=REPO, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"resumed from checkpoint {complete[-1]}" in again.stdout
    assert _losses(run) == _losses(tmp_path / "ref")  # bit for bit, every step
    tally("kills")


def _ctrl_c(proc: subprocess.Popen) -> None:
    """What a terminal does on Ctrl-C: SIGINT to every process of the foreground group (the build, its sandbox
    child, its workers)."""
    os.killpg(proc.pid, signal.SIGINT)


def interrupt_at(cmd: list[str], out: Path, target: int, seconds: float) -> re.Match:
    """Start the build ``cmd`` writing to ``out``, Ctrl-C it once ``target`` commit markers are there; check that
    it stopped as a build must (exit 130, the one ``interrupted:`` line, no traceback from any process) and return
    that line's match (shards committed, shards planned). ``seconds``: about how long the whole build takes."""
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    deadline = time.monotonic() + 10 * seconds + 300
    while proc.poll() is None and _committed(out)[1] < target:
        assert time.monotonic() < deadline, "the build made no progress"
        time.sleep(0.005)
    assert proc.poll() is None, "the build ended before the point to interrupt it"
    _ctrl_c(proc)
    stdout, stderr = proc.communicate()
    assert proc.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr + stdout, stderr[-3000:]
    (line,) = stderr.strip().splitlines()
    stopped = re.fullmatch(r"interrupted: (\d+) of (\d+) shards committed; rerun to resume", line)
    assert stopped, line
    with pytest.raises(ProcessLookupError):  # every process of the build ended with it
        for _ in range(500):
            os.killpg(proc.pid, 0)
            time.sleep(0.01)
    return stopped


@pytest.mark.parametrize("where", ["middle", pytest.param("start", marks=pytest.mark.slow)])
def test_ctrl_c_during_a_build_is_one_line_and_the_rerun_is_identical(kill_mix, tmp_path, where):
    """Ctrl-C in the middle of a build (``make test-all``: also after its first committed shard): exit 130, one
    line (``interrupted: N of M shards committed; rerun to resume``), no traceback from any process; the rerun
    gives the uninterrupted build's bytes."""
    mix, ref, seconds = kill_mix
    reference = tree_digest(ref)
    total = _committed(ref)[1]
    for t, target in enumerate([total // 2 if where == "middle" else 1]):
        out = tmp_path / f"i{t}"
        stopped = interrupt_at(build_cmd(mix, out), out, target, seconds)
        t0 = time.monotonic()
        rerun = subprocess.run(build_cmd(mix, out), cwd=REPO, capture_output=True, text=True)
        wall = time.monotonic() - t0
        assert rerun.returncode == 0, rerun.stderr[-2000:]
        # the rerun says what it reuses, and its stages' times are this run's (issue 39 item 11)
        resumed = re.search(r"^resuming: (\d+) of (\d+) shards already committed", rerun.stdout, re.M)
        assert resumed, rerun.stdout[:2000]
        assert int(resumed[1]) >= int(stopped[1]) and resumed[2] == stopped[2]
        times = [float(x) for x in re.findall(r" ran in +([\d.]+)s", rerun.stdout)]
        assert times and max(times) <= wall, (times, wall)
        assert tree_digest(out) == reference, f"interrupted after marker {target}"
        tally("interrupts")
        tally("tracebacks", 0)


def test_ctrl_c_during_training_writes_a_checkpoint(built_small, tmp_path):
    """Ctrl-C in ``datapipe train`` ends the step, writes a checkpoint as SIGTERM does and exits 130; the same
    command resumes from it with the uninterrupted run's losses."""
    manifest = str(built_small[0] / "mixture.json")
    cmd = [sys.executable, "-m", "datapipe.cli", "train", "--mixture", manifest, *TRAIN, "checkpoint.every=0"]
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [*cmd, "--run-dir", str(run)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    metrics = run / "metrics.jsonl"
    deadline = time.monotonic() + 240
    while proc.poll() is None and (not metrics.exists() or len(metrics.read_text().splitlines()) < 3):
        assert time.monotonic() < deadline, "training made no progress"
        time.sleep(0.01)
    _ctrl_c(proc)
    stdout, stderr = proc.communicate()
    assert proc.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    steps = sorted(int(p.name) for p in (run / "checkpoints").iterdir() if p.name.isdigit())
    assert steps and f"train: interrupted at step {steps[-1]}" in stdout
    again = subprocess.run([*cmd, "--run-dir", str(run)], cwd=REPO, capture_output=True, text=True)
    assert again.returncode == 0 and f"resumed from checkpoint {steps[-1]}" in again.stdout
    tally("interrupts")
    tally("tracebacks", 0)


def test_names_and_yaml_cannot_escape_or_execute(tmp_path):
    from datapipe import ConfigError, load_mixture

    base = "data_root: {root}\ntokenizer: {{path: builtin:gpt2}}\nsources:\n  {src}: {{weight: 1, format: jsonl, paths: [fortunes/fortunes-en.jsonl.zst]}}\n"
    bad = write_mixture(tmp_path, "name: ok\n" + base.format(root=CORPORA, src="'../../etc'"))
    with pytest.raises(ConfigError, match="invalid name '../../etc'"):
        load_mixture(str(bad))
    dots = write_mixture(tmp_path, "name: '..'\n" + base.format(root=CORPORA, src="web"), "dots.yaml")
    with pytest.raises(ConfigError, match="name"):
        load_mixture(str(dots))
    marker = tmp_path / "executed"
    evil = write_mixture(
        tmp_path,
        f"name: !!python/object/apply:os.system ['touch {marker}']\n" + base.format(root=CORPORA, src="web"),
        "evil.yaml",
    )
    with pytest.raises(ConfigError):
        load_mixture(str(evil))
    assert not marker.exists()
    # no code path loads pickles or evaluates input
    offenders = []
    for path in list((REPO / "datapipe").rglob("*.py")) + list((REPO / "pipelines").rglob("*.py")):
        text = path.read_text()
        for needle in (
            "pickle.load",
            "allow_pickle=True",
            "eval(",
            "exec(",
            "yaml.load(",
            "yaml.unsafe_load",
        ):
            if needle in text and not (needle == "yaml.load(" and "Loader=_Loader" in text):
                offenders.append(f"{path.relative_to(REPO)}: {needle}")
    assert not offenders


def test_pinned_hashes_are_checked(built_small, tmp_path):
    import hashlib

    from datapipe import (
        DatapipeError,
        TokenizerConfig,
        load_manifest,
        load_tokenizer,
        open_component,
        read_manifest,
    )

    ident = load_tokenizer(TokenizerConfig("builtin:gpt2")).identity
    assert load_tokenizer(TokenizerConfig("builtin:gpt2", sha256=ident.sha256)).identity == ident
    with pytest.raises(DatapipeError, match="sha256"):
        load_tokenizer(TokenizerConfig("builtin:gpt2", sha256="0" * 64))
    # a cache whose ledger changed after the manifest was written is refused
    out = tmp_path / "copy"
    shutil.copytree(built_small[0], out)
    manifest = str(out / "mixture.json")
    doc = read_manifest(manifest)
    name = doc["components"][0]["name"]
    ledger = out / doc["components"][0]["cache"] / "shard_ledger.json"
    assert hashlib.sha256(ledger.read_bytes()).hexdigest() == doc["components"][0]["ledger_sha256"]
    open_component(load_manifest(manifest), name)
    ledger.write_text(ledger.read_text().replace('"is_finished": true', '"is_finished": true '))
    with pytest.raises(DatapipeError, match="ledger_sha256"):
        open_component(load_manifest(manifest), name)
    # a classifier model pinned by hash
    model = REPO / "tests" / "fixtures" / "corpora" / "PROVENANCE.json"  # any file: the hash is checked first
    from datapipe.orchestrate.classifiers import check_pinned

    check_pinned(
        str(model),
        hashlib.sha256(model.read_bytes()).hexdigest(),
        "sources.web.quality.classifiers[0].sha256",
    )
    with pytest.raises(DatapipeError, match=r"classifiers\[0\].sha256"):
        check_pinned(str(model), "1" * 64, "sources.web.quality.classifiers[0].sha256")
    assert os.path.exists(model)
