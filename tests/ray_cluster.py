"""A real Ray cluster on this machine for the Ray executor's tests: a head and worker nodes, each its own
``ray start --block`` process, every address on loopback, each node stopped by its process id (never ``ray stop``,
which ends every Ray process on the machine).

Loopback, measured with Ray 2.60: ``--node-ip-address 127.0.0.1`` (or an address ``127.0.0.1:P``) is replaced by
the machine's own address (Ray resolves "localhost" to the address it would use to reach 8.8.8.8), which the tests'
sandbox cannot reach; any other loopback address is kept as given. So the head is ``127.0.0.2``, worker ``i`` is
``127.0.0.(3+i)``, and a driver joins at ``127.0.0.2:PORT``. Token authentication (Ray's default) with a token made
for the cluster and handed to every process through ``RAY_AUTH_TOKEN``.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

HEAD_IP = "127.0.0.2"
START_S = 120.0  # a node's start-up on a busy 2-core machine


def ray_bin() -> str:
    return os.path.join(os.path.dirname(sys.executable), "ray")


def free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Node:
    name: str
    process: subprocess.Popen
    log: Path

    def ip(self) -> str:
        found = re.search(r"Local node IP: (\S+)", self.log.read_text(errors="replace"))
        return found.group(1) if found else ""

    def kill(self, sig: int = signal.SIGKILL, wait_s: float = 5.0) -> None:
        """The node's process and every process under it (raylet, its workers, agents), by process id."""
        import psutil

        try:
            root = psutil.Process(self.process.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        for p in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.send_signal(sig)
        psutil.wait_procs(procs, timeout=wait_s)


@dataclass
class Cluster:
    port: int
    env: dict[str, str]
    nodes: list[Node] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"{HEAD_IP}:{self.port}"


def _start(args: list[str], env: dict[str, str], log: Path, name: str) -> Node:
    out = open(log, "w")  # noqa: SIM115 - the node writes to it until it is stopped
    proc = subprocess.Popen(
        [ray_bin(), "start", "--block", *args],
        stdout=out,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    node = Node(name, proc, log)
    deadline = time.monotonic() + START_S
    while "Ray runtime started" not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            node.kill()
            raise RuntimeError(f"ray node {name} did not start: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.2)
    return node


@contextlib.contextmanager
def loopback_cluster(folder: Path, workers: int = 2, cpus: int = 1) -> Iterator[Cluster]:
    """A head (no CPUs: tasks run on the workers) and ``workers`` nodes of ``cpus`` CPUs each, one after another."""
    env = {
        **os.environ,
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(16),
    }
    cluster = Cluster(free_port(), env)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        cluster.nodes.append(
            _start(
                [
                    "--head",
                    f"--port={cluster.port}",
                    f"--node-ip-address={HEAD_IP}",
                    "--num-cpus=0",
                    "--include-dashboard=false",
                    "--disable-usage-stats",
                ],
                env,
                folder / "head.log",
                "head",
            )
        )
        for i in range(workers):
            cluster.nodes.append(
                _start(
                    [
                        f"--address={cluster.address}",
                        f"--node-ip-address=127.0.0.{3 + i}",
                        f"--num-cpus={cpus}",
                    ],
                    env,
                    folder / f"worker{i}.log",
                    f"worker{i}",
                )
            )
        yield cluster
    finally:
        for node in reversed(cluster.nodes):
            node.kill(signal.SIGTERM)
            node.kill(signal.SIGKILL)
