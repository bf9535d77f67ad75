"""``datapipe browse`` as a child process, for scripts, benchmarks and tests: started on a free port, and its
address read from the line it prints once its socket listens (an event to wait on, not a time)."""

from __future__ import annotations

import re
import selectors
import subprocess
import sys
from collections.abc import Callable


def spawn(
    output: str,
    index_dir: str,
    cwd: str | None = None,
    wait_s: float = 3600,
    echo: Callable[[str], None] | None = None,
) -> tuple[subprocess.Popen, str]:
    """(the process, its base URL). Raises RuntimeError with what it printed if it exits or stays silent for
    ``wait_s`` seconds (building the index of a large build takes minutes)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "datapipe.cli", "browse", output, "--port", "0", "--index-dir", index_dir],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    said: list[str] = []
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while True:
            if not sel.select(timeout=wait_s):
                proc.kill()
                raise RuntimeError(f"datapipe browse said nothing for {wait_s:.0f} s: {''.join(said)}")
            line = proc.stdout.readline()
            if not line:
                proc.wait()
                raise RuntimeError(f"datapipe browse exited ({proc.returncode}): {''.join(said)}")
            said.append(line)
            if echo is not None:
                echo(line.rstrip())
            found = re.match(r"browse: (http://\S+)", line)
            if found:
                return proc, found.group(1)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
