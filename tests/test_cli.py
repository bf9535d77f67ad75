"""The `datapipe` command."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def _datapipe(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "datapipe.cli", *args], cwd=REPO, capture_output=True, text=True, timeout=300
    )


def test_help_lists_subcommands():
    proc = _datapipe("--help")
    assert proc.returncode == 0 and "inspect" in proc.stdout and "build" in proc.stdout


def test_inspect_cache_and_mixture(built_small):
    out, _ = built_small
    cache = next((out / "prose").glob("tokenize-*"))
    proc = _datapipe("inspect", str(cache), "--rows", "2")
    assert proc.returncode == 0, proc.stderr
    assert "rows:" in proc.stdout and "tokens:" in proc.stdout and "builtin:gpt2" in proc.stdout
    assert proc.stdout.count("  row ") == 2
    # the first prose document is a reST source of the Python docs howto section: decoded text, not ids
    assert ".. " in proc.stdout or "===" in proc.stdout
    proc = _datapipe("inspect", str(out), "--rows", "1")
    assert proc.returncode == 0 and "mixture small" in proc.stdout and proc.stdout.count("cache:") == 3


def test_inspect_bad_path_is_one_line(tmp_path):
    proc = _datapipe("inspect", str(tmp_path))
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr


def test_build_runs_the_launcher_and_passes_its_status(built_small, small_mixture, tmp_path):
    """``datapipe build`` is the engines' launcher run as a child: its plan on stdout, its one-line errors and exit
    statuses unchanged."""
    out, _ = built_small
    proc = _datapipe("build", "--mixture", str(small_mixture), "--output", str(out), "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert f"plan for {out}" in proc.stdout and "cached" in proc.stdout and "would run" not in proc.stdout
    proc = _datapipe("build", "--mixture", str(tmp_path / "missing.yaml"), "--output", str(tmp_path / "o"))
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
