"""Shared fixtures: the committed corpora and a small mixture built once per test session."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# The trainer tests build (data 2, fsdp 2, model 2) meshes in this process: jax must see 8 CPU devices, which
# XLA_FLAGS sets only before jax is first imported.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
    ).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

REPO = Path(__file__).resolve().parents[1]

# Every trainer test, in this process or in a `datapipe train` it starts, compiles the same few programs of the
# tiny model; XLA's persistent cache keeps each compiled program on disk for the next process (a 3-step run:
# 22 s cold, 6 s from the cache, 2026-12-07). JAX keys an entry by the program, the flags and its own version, so
# an entry is only ever reused for the very same compilation. Beside the test cache, which `make clean` removes.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(REPO / ".pytest_cache" / "jax-compilation"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
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
    langid: {{languages: [en], min_score: 0.65}}
    filters: {{preset: refinedweb}}
  code:
    weight: 1
    format: parquet
    paths: [code/stdlib-00000.parquet]
  prose:
    weight: 1.5
    format: jsonl
    paths: [prose/pydoc-howto-*.jsonl.gz, fortunes/fortunes-de.jsonl.zst, prose/pydoc-faq-*.jsonl,
            prose/pydoc-library-*.jsonl.zst]
    dedup: {{exact: true, minhash: {{preset: fineweb}}, paragraphs: {{min_chars: 50}}}}
"""


def fortunes_training_file(folder: Path) -> Path:
    """fastText training lines (``__label__<language> text``) from the fixture fortunes, written to ``folder``."""
    from datapipe import read_records

    lines = []
    for path in sorted((CORPORA / "fortunes").glob("fortunes-*.jsonl.zst")):
        for d in read_records(str(path)):
            lines.append(f"__label__{d['metadata']['language']} {' '.join(d['text'].split())}\n")
    train = folder / "train.txt"
    train.write_text("".join(lines), encoding="utf-8")
    return train


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file under root, except wall-clock records: timings and the builds' log files."""
    import hashlib

    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(".timing.json") and "_logs" not in p.relative_to(root).parts
    }


def build_small_on(
    small_mixture: Path, folder: Path, *engine: str
) -> tuple[Path, subprocess.CompletedProcess]:
    """The small mixture built into ``folder/out`` with the engine flags ``engine``; its output and the process."""
    out = folder / "out"
    proc = run_build("--mixture", str(small_mixture), "--output", str(out), *engine)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out, proc


def small_build_fixture(engine: str, *flags: str) -> Callable[..., object]:
    """A module fixture: the small mixture built on ``engine`` with ``flags``, (its output, the process)."""

    @pytest.fixture(scope="module")
    def built(small_mixture, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
        return build_small_on(small_mixture, tmp_path_factory.mktemp(engine), "--engine", engine, *flags)

    return built


def build_on_both_engines(mixture: Path, folder: Path) -> Path:
    """Build ``mixture`` on Beam into ``folder/beam`` and on datatrove into ``folder/datatrove``; assert that both
    wrote the same bytes (datatrove's own bookkeeping and the code's commit aside); the Beam output."""
    outs = {}
    for engine in ("beam", "datatrove"):
        out = folder / engine
        proc = run_build("--mixture", str(mixture), "--output", str(out), "--engine", engine)
        assert proc.returncode == 0, proc.stderr[-3000:]
        outs[engine] = {
            k: v
            for k, v in tree_digest(out).items()
            if not k.startswith("_datatrove/") and "experiment" not in k
        }
    assert outs["beam"] == outs["datatrove"]
    return folder / "beam"


def write_mixture(folder: Path, text: str, name: str = "mix.yaml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def warc_response(i: int, http: bytes, compressed: bool, short_by: int = 0) -> bytes:
    """One response record for ``https://x/{i}`` written by hand (so a test can make its ``Content-Length`` short
    by ``short_by`` bytes), in a gzip member of its own when ``compressed`` (as Common Crawl writes them)."""
    head = (
        f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: https://x/{i}\r\n"
        f"WARC-Record-ID: <urn:uuid:{i}>\r\nContent-Type: application/http; msgtype=response\r\n"
        f"Content-Length: {len(http) - short_by}\r\n\r\n"
    ).encode()
    raw = head + http + b"\r\n\r\n"
    return gzip.compress(raw, mtime=0) if compressed else raw


def mixture_head(name: str, seed: int | None = None, eos: bool = False) -> str:
    """A mixture's lines up to ``sources:`` as a ``str.format`` template (``{root}``; braces doubled), GPT-2's
    tokenizer."""
    seed_line = f"seed: {seed}\n" if seed is not None else ""
    eos_part = ", add_eos: true" if eos else ""
    return f'name: {name}\ndata_root: {{root}}\n{seed_line}tokenizer: {{{{path: "builtin:gpt2"{eos_part}}}}}\nsources:\n'


def one_source_mixture(name: str, source: str, paths: list[str], stages: str, root: str = "") -> str:
    """A mixture of one jsonl source over the test corpora (GPT-2 tokenizer), its stages given as YAML lines."""
    head = f"name: {name}\ndata_root: {root or CORPORA}\ntokenizer: {{path: builtin:gpt2}}\nsources:\n"
    body = f"  {source}:\n    weight: 1\n    format: jsonl\n    paths: [{', '.join(paths)}]\n"
    return head + body + "".join(f"    {line}\n" for line in stages.strip("\n").splitlines())


def engine_cmd(engine: str) -> Callable[..., list[str]]:
    """``build_cmd`` on one engine: ``engine_cmd("local")(mixture, out, *extra)``."""
    return lambda mixture, out, *extra: build_cmd(mixture, out, "--engine", engine, *extra)


def build_cmd(mixture: Path, out: Path, *extra: str) -> list[str]:
    """The ``build_mixture`` command line for a mixture and an output folder."""
    from pipelines.build_mixture import command

    return command(str(mixture), str(out), *extra)


def run_build(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipelines.build_mixture", *args],
        cwd=cwd or REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )


def build_ok(folder: Path, mixture_text: str, *extra: str) -> Path:
    """Write a mixture into ``folder``, build it into ``folder/out`` and return that folder, failing the test with
    the build's last lines when it does not succeed."""
    mixture = write_mixture(folder, mixture_text)
    out = folder / "out"
    proc = run_build("--mixture", str(mixture), "--output", str(out), *extra)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


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


@pytest.fixture(scope="session")
def demo(tmp_path_factory) -> tuple[Path, str]:
    """The bundled demo mixture (what `make demo` builds) on the Beam engine, built once; its output and stdout."""
    out = tmp_path_factory.mktemp("demo") / "out"
    proc = run_build("--mixture", "dclm_phase3.yaml", "--output", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc.stdout


@pytest.fixture(scope="session")
def fixture_texts() -> list[str]:
    """The text of every document in the fixture corpora (HTML extracted with the default extractor)."""
    from datapipe import HtmlExtractor, ReadTally, make_shards, read_shard

    extractor = HtmlExtractor()
    formats = {".parquet": ("parquet", "content"), ".jsonl": ("jsonl", "text"), ".warc": ("warc", "")}
    texts = []
    for path in sorted(p for p in CORPORA.rglob("*") if p.is_file() and not p.name.endswith(".json")):
        fmt, field = next(v for k, v in formats.items() if k in path.name)
        shard = make_shards([str(path)], str(CORPORA))[0]
        for rec in read_shard(shard, "s", fmt, field, "id", ReadTally()):
            text = extractor((rec["html"], rec["charset"])) if "html" in rec else rec["text"]
            if text.strip():
                texts.append(text)
    return texts


def pytest_sessionfinish(session) -> None:
    """In a pytest-xdist worker: hand this worker's reliability tally to the controller."""
    from tests.reliability import TALLY

    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["tally"] = dict(TALLY)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """On the pytest-xdist controller: add a finished worker's tally to the run's."""
    from tests.reliability import TALLY

    TALLY.update(getattr(node, "workeroutput", {}).get("tally", {}))


def pytest_unconfigure(config) -> None:
    """After pytest's own summary: the reliability tally, when reliability tests ran (the line is the run's last;
    with workers, only the controller prints it, the sum of theirs)."""
    from tests.reliability import TALLY, summary_line

    if TALLY and not hasattr(config, "workeroutput"):
        print(summary_line(), flush=True)
