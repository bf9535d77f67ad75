"""A one-node Slurm cluster on localhost for tests: munged, slurmctld and slurmd from Debian's packages.

Everything lives in one temporary folder (generated ``slurm.conf``, a fresh munge key and socket, state, spool and
logs) and the daemons run in the foreground as children of the test, on free ports, so the cluster leaves nothing
behind and does not meet a system Slurm. ``SLURM_CONF`` in the returned environment points the clients (``sbatch``,
``squeue``, and datatrove through them) at it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
BINARIES = ("slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "munged")


def ensure_installed() -> str | None:
    """None when Slurm and munge are (or could be made) available; else why not."""
    if all(shutil.which(b) for b in BINARIES):
        return None
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        return (
            "slurmctld/slurmd/munge are not installed and apt-get is not usable here (needs root and Debian)"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", *PACKAGES]
    if subprocess.run(cmd, capture_output=True, env=env, timeout=600).returncode != 0:
        subprocess.run(["apt-get", "update"], capture_output=True, env=env, timeout=600)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        if proc.returncode != 0:
            return f"apt-get install {' '.join(PACKAGES)} failed: {proc.stderr[-500:]}"
    missing = [b for b in BINARIES if not shutil.which(b)]
    return f"installed, but {missing} are not on PATH" if missing else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _conf(root: Path, host: str) -> str:
    mem_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    return f"""ClusterName=datapipe-test
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={root}/munge/munge.socket
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName={host} CPUs={os.cpu_count()} RealMemory={max(1024, mem_mb - 1024)} State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


@contextlib.contextmanager
def local_cluster(root: Path, timeout_s: float = 60.0) -> Iterator[dict[str, str]]:
    """Start munged, slurmctld and slurmd under ``root``; yield the environment for clients; stop them all."""
    for d in ("munge", "state", "spool"):
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "munge").chmod(0o700)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(128))
    key.chmod(0o400)
    conf = root / "slurm.conf"
    conf.write_text(_conf(root, socket.gethostname()))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    m = root / "munge"
    procs: list[subprocess.Popen] = []
    try:
        procs.append(
            subprocess.Popen(
                ["munged", "--foreground", "--force", f"--key-file={key}", f"--socket={m}/munge.socket",
                 f"--pid-file={m}/munged.pid", f"--log-file={m}/munged.log", f"--seed-file={m}/seed"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
        )  # fmt: skip
        _wait(lambda: (m / "munge.socket").exists(), timeout_s, "munged did not create its socket", root)
        for daemon in ("slurmctld", "slurmd"):
            log = open(root / f"{daemon}.out", "wb")  # noqa: SIM115 - closed with the daemon
            procs.append(subprocess.Popen([daemon, "-D", "-f", str(conf)], stdout=log, stderr=log, env=env))
        _wait(lambda: _idle(env), timeout_s, "the node did not come up idle", root)
        yield env
    finally:
        if procs and all(p.poll() is None for p in procs[1:]):
            subprocess.run(["scancel", "--full", "--quiet", "-u", "root"], env=env, capture_output=True)
            # a job step still ending reports to slurmd: stop slurmd first and its slurmstepd stays behind for good
            deadline = time.monotonic() + 30
            while _steps(conf) and time.monotonic() < deadline:
                time.sleep(0.2)
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for pid in _steps(conf):  # whatever did not end: not left running after the test
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)


def _steps(conf: Path) -> list[int]:
    """Running ``slurmstepd`` processes of this cluster (slurmd detaches them; their environment names the conf)."""
    mine = f"SLURM_CONF={conf}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "comm").read_text().strip() != "slurmstepd":
                continue
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            if state != "Z" and mine in (proc / "environ").read_bytes().split(b"\0"):
                found.append(int(proc.name))
        except OSError:  # gone meanwhile
            continue
    return found


def _idle(env: dict[str, str]) -> bool:
    proc = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True)
    return proc.returncode == 0 and proc.stdout.strip() == "idle"


def _wait(ready, timeout_s: float, what: str, root: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            logs = {p.name: p.read_text(errors="replace")[-800:] for p in root.glob("*.log")}
            raise RuntimeError(f"{what} within {timeout_s:.0f} s; logs: {logs}")
        time.sleep(0.2)
