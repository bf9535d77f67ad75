"""Shared fixtures: the committed corpora and a small mixture built once per test session."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPORA = REPO / "tests" / "fixtures" / "corpora"

SMALL_MIXTURE = """\
name: small
data_root: {root}
seed: 7
tokenizer:
  path: builtin:gpt2
  add_eos: true
sources:
  web:
    weight: 3
    format: warc
    paths: [crawl/docs-*.warc.gz, crawl/iana.warc.gz]
  code:
    weight: 1
    format: parquet
    paths: [code/stdlib-00000.parquet]
  prose:
    weight: 1.5
    format: jsonl
    paths: [prose/pydoc-howto-*.jsonl.gz, fortunes/fortunes-de.jsonl.zst, prose/pydoc-faq-*.jsonl]
"""


def write_mixture(folder: Path, text: str, name: str = "mix.yaml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def run_build(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipelines.build_mixture", *args],
        cwd=cwd or REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="session")
def small_mixture(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("mixture")
    return write_mixture(folder, SMALL_MIXTURE.format(root=CORPORA))


@pytest.fixture(scope="session")
def built_small(small_mixture, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """The small mixture built once on the in-process DirectRunner."""
    out = tmp_path_factory.mktemp("built") / "out"
    proc = run_build("--mixture", str(small_mixture), "--output", str(out))
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out, proc
