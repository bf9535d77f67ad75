"""The warm parent of a local build's workers (``pipelines.beam.zygote``): a worker started by Beam's command line
runs in a child forked from the parent with the client's environment, folder, arguments and standard streams; the
client exits with the child's status; SIGTERM reaches the child; a killed client takes its child with it; the
parent ends once told to and its children are reaped; and with no parent the client runs the harness itself."""

from __future__ import annotations

import os
import select
import signal
import socket
import struct
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

# a parent whose "harness" reports what it was given instead of running Beam's
_PARENT = textwrap.dedent(
    """
    import os, signal, socket, sys
    from pipelines.beam import zygote

    def harness():
        print(f"child={os.getpid()} parent={os.getppid()} cwd={os.getcwd()} argv={sys.argv[1:]}", flush=True)
        print(f"X={os.environ.get('X')}", file=sys.stderr, flush=True)
        if os.environ.get("X") == "wait":
            signal.pause()
        os._exit(int(os.environ.get("X", "0")) if os.environ.get("X", "0").isdigit() else 0)

    zygote.serve(socket.socket(fileno=int(sys.argv[1])), sys.stdin.fileno(), harness)
    """
)


@contextmanager
def _parent(tmp_path: Path) -> Iterator[tuple[subprocess.Popen, str]]:
    path = str(tmp_path / "z.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    proc = subprocess.Popen(
        [sys.executable, "-c", _PARENT, str(listener.fileno())],
        stdin=subprocess.PIPE,
        pass_fds=(listener.fileno(),),
    )
    listener.close()
    try:
        yield proc, path
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _worker(path: str, env: dict[str, str], cwd: Path, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "pipelines.beam.worker", f"--zygote={path}", "--flag"],
        env={**os.environ, **env},
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def _waiting_worker(path: str, cwd: Path) -> tuple[subprocess.Popen, int]:
    """A worker whose child waits for a signal; with the child's pid, read from its first line."""
    w = _worker(path, {"X": "wait"}, cwd)
    assert w.stdout is not None
    return w, int(w.stdout.readline().split()[0].split("=")[1])


def _let_go(parent: subprocess.Popen) -> int:
    """Close the parent's standard input (the build is over) and wait for its status."""
    assert parent.stdin is not None
    parent.stdin.close()
    return parent.wait(timeout=60)


def _wait_gone(pid: int, timeout: float) -> bool:
    """Wait for process ``pid`` to end (an event: its pidfd turns readable), at most ``timeout`` seconds."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


def test_a_worker_runs_forked_from_the_parent_with_the_clients_world(tmp_path: Path):
    where = tmp_path / "here"
    where.mkdir()
    with _parent(tmp_path) as (parent, path):
        w = _worker(path, {"X": "3"}, where)
        out, err = w.communicate(timeout=60)
        assert w.returncode == 3
        fields = dict(f.split("=", 1) for f in out.split(" ", 3))
        assert int(fields["parent"]) == parent.pid
        assert fields["cwd"] == str(where)
        assert fields["argv"].strip() == "['--flag']"  # --zygote= is the client's, not the harness's
        assert err.strip() == "X=3"
        assert _let_go(parent) == 0  # told to go, with no children left: it ends


def test_sigterm_reaches_the_child_and_a_killed_client_takes_its_child_along(tmp_path: Path):
    with _parent(tmp_path) as (parent, path):
        w, child = _waiting_worker(path, tmp_path)
        w.send_signal(signal.SIGTERM)
        assert w.wait(timeout=60) == 128 + signal.SIGTERM
        assert _wait_gone(child, 60)

        w, child = _waiting_worker(path, tmp_path)
        w.kill()
        w.wait(timeout=60)
        assert _wait_gone(child, 60)
        assert _let_go(parent) == 0


def test_a_sigterm_that_comes_before_the_childs_pid_is_passed_on(tmp_path: Path):
    # a stand-in parent that answers only after the client got SIGTERM: the client holds it, then sends it on
    path = str(tmp_path / "slow.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    w = _worker(path, {}, tmp_path)
    conn, _ = server.accept()
    header, fds, _, _ = socket.recv_fds(conn, 4, 3)
    for fd in fds:
        os.close(fd)
    size, got = struct.unpack("!i", header)[0], b""
    while len(got) < size:
        got += conn.recv(size - len(got))
    target = subprocess.Popen(["sleep", "600"])  # plays the child
    try:
        w.send_signal(signal.SIGTERM)
        conn.sendall(struct.pack("!i", target.pid))
        assert target.wait(timeout=60) == -signal.SIGTERM
        conn.sendall(struct.pack("!i", -signal.SIGTERM))
        assert w.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        target.kill()
        conn.close()
        server.close()


def test_the_parent_waits_for_its_children_before_it_ends(tmp_path: Path):
    with _parent(tmp_path) as (parent, path):
        w, child = _waiting_worker(path, tmp_path)
        assert parent.stdin is not None
        parent.stdin.close()
        with pytest.raises(subprocess.TimeoutExpired):
            parent.wait(timeout=0.5)  # still serving its child
        os.kill(child, signal.SIGTERM)
        assert w.wait(timeout=60) == 128 + signal.SIGTERM
        assert parent.wait(timeout=60) == 0


def test_with_no_parent_the_client_runs_the_harness_itself(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_SERVICE_DESCRIPTOR")}
    r = subprocess.run(
        [sys.executable, "-m", "pipelines.beam.worker", f"--zygote={tmp_path / 'none.sock'}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1
    assert "CONTROL_API_SERVICE_DESCRIPTOR" in r.stderr  # Beam's harness ran here, and failed as it does


def test_the_real_parent_runs_beams_harness(tmp_path: Path):
    from pipelines.beam.zygote import WarmWorkers

    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_SERVICE_DESCRIPTOR")}
    parent = WarmWorkers()
    try:
        assert "--zygote=" in parent.command
        r = subprocess.run(parent.command, shell=True, env=env, capture_output=True, text=True, timeout=120)
    finally:
        parent.close()
    assert r.returncode == 1
    assert "CONTROL_API_SERVICE_DESCRIPTOR" in r.stderr


def test_the_parent_starts_early_only_for_local_worker_processes():
    from pipelines.beam.zygote import wanted

    assert wanted(["--direct_running_mode=multi_processing", "--direct_num_workers=2"])
    assert wanted(["--direct_running_mode", "multi_processing", "--runner=DirectRunner"])
    assert not wanted([])
    assert not wanted(["--direct_running_mode=multi_threading"])
    assert not wanted(["--direct_running_mode=multi_processing", "--runner=DataflowRunner"])


def test_the_launcher_reaches_its_engine_before_it_loads_the_build():
    """The parent starts when the Beam engine is made, right after the flags are parsed; the launcher's own imports
    up to then must stay light, or the workers' stack starts importing that much later (the build's modules,
    imported first, put the parent's start at 0.28 s instead of 0.08 s)."""
    code = (
        "import sys\n"
        "from datapipe.orchestrate.launch import make_engine\n"
        "from datapipe.orchestrate.engines import registered\n"
        "registered()\n"
        "heavy = ('datapipe.orchestrate.run', 'datapipe.config.mixture', 'numpy', 'apache_beam', 'jsonschema')\n"
        "print(sorted(m for m in sys.modules if m in heavy))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr


def test_a_build_stopped_by_bad_input_says_one_line_with_the_parent_started(tmp_path: Path):
    r = subprocess.run(
        [sys.executable, "-m", "pipelines.build_mixture", "--mixture", str(tmp_path / "none.yaml")]
        + [
            "--output",
            str(tmp_path / "out"),
            "--direct_running_mode=multi_processing",
            "--direct_num_workers=2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr  # the parent, left to end, says nothing
    assert "none.yaml" in r.stderr
