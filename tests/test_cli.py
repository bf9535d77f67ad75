"""The `datapipe` command."""

from __future__ import annotations

import subprocess
import sys

import pytest

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
    """``datapipe build`` is the launcher: its plan on stdout, its one-line errors and exit statuses."""
    out, _ = built_small
    proc = _datapipe("build", "--mixture", str(small_mixture), "--output", str(out), "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert f"plan for {out}" in proc.stdout and "cached" in proc.stdout and "would run" not in proc.stdout
    proc = _datapipe("build", "--mixture", str(tmp_path / "missing.yaml"), "--output", str(tmp_path / "o"))
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr


def test_inspect_decodes_with_the_copy_beside_the_manifest(tmp_path):
    """A build whose tokenizer was a local file that is gone since (moved, another machine): ``inspect`` decodes
    the rows with the copy the build wrote beside its manifest (the hash the manifest records), for the mixture
    and for a cache given alone; without the copy it falls back to ids and says so."""
    from datapipe import TokenizerConfig, load_tokenizer
    from tests.conftest import CORPORA, run_build, write_mixture

    tok_file = tmp_path / "tok" / "my-tokenizer.json"
    tok_file.parent.mkdir()
    load_tokenizer(TokenizerConfig(path="builtin:gpt2")).save(str(tok_file))
    mixture = write_mixture(
        tmp_path,
        f"name: moved\ndata_root: {CORPORA}\ntokenizer: {{path: {tok_file}}}\n"
        "sources:\n  prose:\n    weight: 1\n    format: jsonl\n    paths: [prose/pydoc-faq-*.jsonl]\n",
    )
    out = tmp_path / "out"
    proc = run_build("--mixture", str(mixture), "--output", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    manifest = (out / "mixture.json").read_text()
    assert '"tokenizer_file": "tokenizer.json"' in manifest
    tok_file.unlink()
    cache = next((out / "prose").glob("tokenize-*"))
    for path in (out, out / "mixture.json", cache):
        shown = _datapipe("inspect", str(path), "--rows", "1")
        assert shown.returncode == 0, shown.stderr
        assert "not loadable" not in shown.stdout and "Python" in shown.stdout, shown.stdout
    (out / "tokenizer.json").unlink()
    shown = _datapipe("inspect", str(cache), "--rows", "1")
    assert shown.returncode == 0 and "(tokenizer not loadable here; rows shown as ids)" in shown.stdout


def test_train_on_a_missing_manifest_is_one_line_and_leaves_no_run_folder(tmp_path):
    run = tmp_path / "runs" / "tiny"
    proc = _datapipe(
        "train", "--mixture", str(tmp_path / "nowhere" / "mixture.json"), "--model", "tiny", "--steps", "1",
        "--run-dir", str(run),
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == f"error: {tmp_path / 'nowhere' / 'mixture.json'}: no mixture manifest there"
    assert not run.exists() and not (tmp_path / "runs").exists()


def test_lineage_of_a_missing_folder_says_so(tmp_path):
    proc = _datapipe("lineage", str(tmp_path / "nowhere"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: {tmp_path / 'nowhere'}: no such build folder (give a build's output folder or a run folder)"  # fmt: skip


def test_build_runs_in_this_process_through_the_engine_registry(built_small, small_mixture, capsys):
    """No exec and no child: the CLI calls the launcher, which finds the engines by entry point."""
    from datapipe.cli import main
    from datapipe.orchestrate.engines import registered

    assert list(registered()) == ["beam", "datatrove", "local"]  # the default first
    out, _ = built_small
    with pytest.raises(SystemExit) as done:
        main(["build", "--mixture", str(small_mixture), "--output", str(out), "--dry-run"])
    assert done.value.code == 0
    assert f"plan for {out}" in capsys.readouterr().out


@pytest.mark.parametrize(
    "flags, line",
    [
        (
            ["--engine", "datatrove", "--global-shuffle", "files"],
            "--global-shuffle is a flag of --engine beam",
        ),
        (
            ["--executor", "ray"],
            "--executor is a flag of --engine datatrove; this build runs on --engine beam",
        ),
        (["--engine", "datatrove", "--runner=X"], "unknown argument(s) with --engine datatrove: --runner=X"),
    ],
)
def test_a_flag_of_another_engine_is_one_line(flags, line, capsys):
    from datapipe.cli import main

    with pytest.raises(SystemExit) as done:
        main(["build", "--mixture", "dclm_phase3.yaml", *flags])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and line in err and err.count("\n") == 1


def test_every_command_has_a_handler_no_flag_overwrites():
    """The registry dispatches on ``args.handler``; a flag with that dest would replace it (as ``--run`` did)."""
    import argparse

    from datapipe.cli import make_parser

    def subparsers(ap):
        for action in ap._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield name, sub
                    yield from subparsers(sub)

    found = dict(subparsers(make_parser()))
    assert {"build", "inspect", "report", "browse", "train", "eval", "export-hf", "distill"} <= set(found)
    for name, sub in found.items():
        assert all(a.dest != "handler" for a in sub._actions), name
        has_children = any(isinstance(a, argparse._SubParsersAction) for a in sub._actions)
        assert name == "build" or has_children or sub.get_default("handler") is not None, name
