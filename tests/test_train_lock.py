"""One ``datapipe train`` per run folder: a second one refuses with one line naming the holder; a lock left by a
dead trainer is taken over and said so; the lock goes when the trainer ends."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from datapipe.train.lock import LOCK, RunFolderInUse, RunLock
from datapipe.train.metrics import read_metrics
from tests.conftest import REPO
from tests.test_train import _train_cmd

HOLD = "import sys; from datapipe.train.lock import RunLock; RunLock(sys.argv[1]).acquire(); print('held', flush=True); sys.stdin.read()"


def _holder(run: Path) -> subprocess.Popen:
    """Another process that holds the run folder's lock until its stdin closes (or it is killed)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def test_a_second_train_into_the_same_run_folder_is_refused_in_one_line(built_small, tmp_path):
    manifest = str(built_small[0] / "mixture.json")
    run = tmp_path / "run"
    first = subprocess.Popen(
        _train_cmd(manifest, run, 400, "--devices", "8", "checkpoint.every=0", "checkpoint.at_exit=false"),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        metrics = run / "metrics.jsonl"
        deadline = time.monotonic() + 240
        while first.poll() is None and (not metrics.exists() or not metrics.read_text().strip()):
            assert time.monotonic() < deadline, "the first trainer made no step"
            time.sleep(0.05)
        assert first.poll() is None, first.communicate()[1][-3000:]
        second = subprocess.run(
            _train_cmd(manifest, run, 400, "--devices", "8", "--until", "1"),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert second.returncode == 2, second.stderr[-3000:]
        (line,) = second.stderr.strip().splitlines()
        assert line == (
            f"error: run folder {run} is in use by another datapipe train (pid {first.pid} on host "
            f"{socket.gethostname()} since {json.loads((run / LOCK).read_text())['since']}); wait for it to end "
            "or pass another --run-dir"
        )
        assert "train:" not in second.stdout  # it trained nothing
    finally:
        first.send_signal(signal.SIGTERM)
        out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err[-3000:]
    steps = [r["step"] for r in read_metrics(str(run / "metrics.jsonl"))]
    assert steps == list(range(1, len(steps) + 1))  # every step once
    assert not (run / LOCK).exists()


def test_a_lock_held_by_another_process_names_it_and_is_free_once_it_dies(tmp_path, capsys):
    run = tmp_path / "run"
    holder = _holder(run)
    try:
        with pytest.raises(
            RunFolderInUse, match=rf"is in use by another datapipe train \(pid {holder.pid} on "
        ):
            RunLock(str(run)).acquire()
    finally:
        holder.kill()  # SIGKILL: no clean-up, the file stays and the kernel drops the lock
        holder.wait()
    assert (run / LOCK).exists()
    with RunLock(str(run)):
        assert json.loads((run / LOCK).read_text())["pid"] == os.getpid()
    (notice,) = capsys.readouterr().err.splitlines()
    assert notice.startswith(f"train: took over the lock of {run} left by pid {holder.pid} on host ")
    assert "that process is gone" in notice
    assert not (run / LOCK).exists()


def test_a_lock_file_naming_a_dead_pid_is_taken_over_with_a_notice(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    held = {"pid": gone.pid, "host": socket.gethostname(), "since": "2026-01-02T03:04:05+00:00"}
    (run / LOCK).write_text(json.dumps(held))
    lock = RunLock(str(run))
    lock.acquire()
    try:
        assert json.loads((run / LOCK).read_text())["pid"] == os.getpid()
        with pytest.raises(RunFolderInUse):  # this process holds it now: a second holder is refused
            RunLock(str(run)).acquire()
    finally:
        lock.release()
    assert capsys.readouterr().err.splitlines() == [
        f"train: took over the lock of {run} left by pid {gone.pid} on host {socket.gethostname()} since "
        "2026-01-02T03:04:05+00:00 (that process is gone: its lock was free)"
    ]
    assert not (run / LOCK).exists()
    with RunLock(str(run)):  # released: taken again without a notice
        pass
    assert capsys.readouterr().err == ""
