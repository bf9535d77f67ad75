"""``--engine datatrove --executor ray`` (issue 42 item 4): a build on a real Ray cluster that the test starts on this
machine (a head and two worker nodes, separate ``ray start`` processes, every address on loopback:
``tests/ray_cluster.py``) writes Beam's bytes, and a worker node killed mid-build loses nothing. ``make test`` (and
so CI) installs Ray with the dev extras and runs it (about two minutes: a cluster's start and a build on it)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from datapipe import DatapipeError
from tests.conftest import REPO, tree_digest


def _digest(out: Path) -> dict[str, str]:
    return {
        k: v for k, v in tree_digest(out).items() if not k.startswith("_datatrove/") and "experiment" not in k
    }


def test_a_build_on_a_ray_cluster_is_beams_and_survives_a_killed_node(built_small, small_mixture, tmp_path):
    pytest.importorskip("ray", reason="the dev install (make venv) installs Ray")
    from tests.ray_cluster import loopback_cluster

    beam_out, _ = built_small
    out = tmp_path / "ray"
    with loopback_cluster(tmp_path / "cluster", workers=2) as cluster:
        ips = [node.ip() for node in cluster.nodes]
        assert ips == ["127.0.0.2", "127.0.0.3", "127.0.0.4"]  # every node on loopback
        build = subprocess.Popen(
            [sys.executable, "-m", "pipelines.build_mixture", "--mixture", str(small_mixture), "--output", str(out),
             "--engine", "datatrove", "--executor", "ray", "--ray-address", cluster.address],
            cwd=REPO, env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        # a worker node dies while a shard is being processed (its progress file exists only then)
        victim = cluster.nodes[1]
        deadline = time.monotonic() + 300
        while not list(out.glob("*/*/part-*.progress.json")):
            assert build.poll() is None, build.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "no shard started within 300 s"
            time.sleep(0.05)
        victim.kill()
        stdout, stderr = build.communicate(timeout=900)
        assert build.returncode == 0, stderr[-3000:]
        assert victim.process.poll() is not None
    assert _digest(out) == _digest(beam_out)
    assert "ran in" in stdout and "Traceback" not in stderr
    # the killed node's task failed and ran again elsewhere (datatrove's resubmission, in the build's log)
    (log,) = (out / "_logs").glob("build-*.log")
    assert "failed with RayActorError" in log.read_text() or "WorkerCrashedError" in log.read_text()


def test_ray_flags_are_checked_before_any_work(tmp_path):
    """``--ray-address`` belongs to ``--executor ray``; an address that is not HOST:PORT, or where nothing answers,
    is one line before any work."""
    from pipelines.datatrove.engine import DatatroveOptions
    from pipelines.datatrove.ray import check_ray
    from tests.ray_cluster import free_port

    with pytest.raises(DatapipeError, match="--ray-address is a flag of --executor ray"):
        DatatroveOptions(executor="local", ray_address="127.0.0.2:6379")
    pytest.importorskip("ray", reason="the dev install (make venv) installs Ray")
    with pytest.raises(DatapipeError, match="expected HOST:PORT"):
        check_ray("somewhere")
    with pytest.raises(DatapipeError, match=r"--ray-address 127.0.0.1:\d+: no Ray cluster answers there"):
        check_ray(f"127.0.0.1:{free_port()}")
