"""The local runner: the DirectRunner is always Beam's FnApiRunner (never a Prism binary fetched from GitHub), its
worker processes run our harness entry (or are forked from a warm parent, :mod:`pipelines.beam.zygote`), and a
worker that fails still exits with a failure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.beam.quiet import PipelineOptions, beam
from pipelines.beam.runner import pipeline
from pipelines.beam.sampling import PERIOD_MS
from pipelines.beam.zygote import WarmWorkers


def _cmdline(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().replace(b"\0", b" ").decode()


class _Cmdline(beam.DoFn):
    def process(self, x):
        from apache_beam.runners.worker import statesampler

        period = statesampler.get_current_tracker().sampling_period_ms  # the bundle's sampler
        yield x, f"{_cmdline(os.getpid())} | {_cmdline(os.getppid())}", os.getpid(), period


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_direct_runner_runs_on_the_fn_api_runner_with_our_workers(tmp_path: Path, warm: bool):
    flags = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]
    options = PipelineOptions(flags)
    seen = tmp_path / "seen.txt"
    parent = WarmWorkers() if warm else None
    try:
        with pipeline(options, parent) as p:
            assert type(p.runner).__name__ == "FnApiRunner"
            (
                p
                | beam.Create(range(40))
                | beam.Reshuffle()
                | beam.ParDo(_Cmdline())
                | beam.Map(lambda r: f"{r[0]}\t{r[1]}\t{r[2]}\t{r[3]}")
                | beam.combiners.ToList()
                | beam.Map(lambda rows: seen.write_text("\n".join(sorted(rows))))
            )
    finally:
        if parent is not None:
            parent.close()
    rows = [line.split("\t") for line in seen.read_text().splitlines()]
    assert sorted(int(r[0]) for r in rows) == list(range(40))
    own, parents = [r[1].split(" | ")[0] for r in rows], [r[1].split(" | ")[1] for r in rows]
    if parent is None:  # our harness entry, as Beam starts it
        assert all("-m pipelines.beam.worker" in c for c in own), own[:3]
    else:  # forked from the warm parent (a build's launcher starts one before it imports Beam)
        assert all("-m pipelines.beam.zygote" in c for c in parents), parents[:3]
    assert all(int(r[2]) != os.getpid() for r in rows)
    # Beam's sampler wakes every PERIOD_MS in our workers: a bundle's end waits that long at most, not 200 ms
    assert {int(r[3]) for r in rows} == {PERIOD_MS}
    assert len({r[2] for r in rows}) <= 2
    # the caller's options are untouched (a build runs a second pipeline with them when components need rounds)
    assert options.get_all_options()["direct_running_mode"] == "multi_processing"


def test_in_memory_runs_in_this_process(tmp_path: Path):
    seen = tmp_path / "pids.txt"
    with pipeline(PipelineOptions([])) as p:
        assert type(p.runner).__name__ == "FnApiRunner"
        p | beam.Create([1]) | beam.Map(lambda _: seen.write_text(str(os.getpid())))
    assert int(seen.read_text()) == os.getpid()


def test_a_failing_worker_exits_with_a_failure():
    # no control endpoint in the environment: Beam's harness raises, and the fast exit must not hide it
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_SERVICE_DESCRIPTOR")}
    r = subprocess.run(
        [sys.executable, "-m", "pipelines.beam.worker"], env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 1
    assert "CONTROL_API_SERVICE_DESCRIPTOR" in r.stderr


def _program(body: str) -> subprocess.CompletedProcess:
    code = (
        "import atexit, sys\n"
        "from datapipe.runtime.quick_exit import run_then_exit\n"
        "atexit.register(lambda: print('atexit ran'))\n"
        f"def main():\n{body}\n"
        "run_then_exit(main)\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_a_quick_exit_keeps_the_status_the_output_and_the_atexit_handlers():
    r = _program("    print('work done', end='')")
    assert (r.returncode, r.stdout) == (0, "work doneatexit ran\n")
    r = _program("    sys.exit(3)")
    assert (r.returncode, r.stdout) == (3, "atexit ran\n")
    r = _program("    sys.exit('error: bad input')")
    assert (r.returncode, r.stderr) == (1, "error: bad input\n")
    r = _program("    raise ValueError('boom')")
    assert r.returncode == 1 and "ValueError: boom" in r.stderr and "atexit ran" in r.stdout


def test_beam_is_imported_without_pandas_which_stays_importable():
    """The launcher and the warm parent import Beam without pandas (0.13 s less in each); pandas itself still
    imports afterwards, and a process that imported it first keeps it as it was."""
    code = (
        "import sys\n"
        "import pipelines.beam.quiet\n"
        "assert 'pandas' not in sys.modules, 'Beam imported pandas'\n"
        "import pandas\n"
        "assert pandas.DataFrame({'a': [1]}).shape == (1, 1)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1])
    first = "import pandas, sys\nimport pipelines.beam.quiet\nassert sys.modules['pandas'] is pandas\n"
    subprocess.run([sys.executable, "-c", first], check=True, cwd=Path(__file__).resolve().parents[1])
