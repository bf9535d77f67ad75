"""Held-out rows and ``datapipe eval``: training never reads a held-out sequence, every run of a manifest holds out
the same ones, evaluation reads each once and is deterministic, bits per byte count the target tokens' bytes, and
the report and the browser show the result."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from datapipe import DatapipeError, MixtureLoader, Trainer, load_train_config, parse_overrides
from datapipe.data.loader import held_out
from datapipe.train.evaluate import evaluate_run, target_bytes, target_runs
from datapipe.train.metrics import read_evals
from tests.conftest import REPO


def test_target_runs_are_the_tokens_the_loss_predicts():
    seg = np.array([[0, 0, 0, 1, 1, -1, -1], [3, 4, 4, 4, 5, 5, 5]])
    assert target_runs(seg) == [(0, 1, 3), (0, 4, 5), (1, 2, 4), (1, 5, 7)]
    ids = np.array([[10, 11, 12, 13, 14, 0, 0], [1, 2, 3, 4, 5, 6, 7]])
    table = np.arange(20) * 10  # token i is i*10 bytes
    assert target_bytes(ids, seg, table) == 110 + 120 + 140 + 30 + 40 + 60 + 70
    seen = []
    # without a table: each run decoded after the token before it, less that token's own bytes
    assert target_bytes(ids, seg, lambda runs: seen.extend(runs) or ["é" * len(r) for r in runs]) == 2 * 7
    assert seen[:4] == [[10, 11, 12], [13, 14], [2, 3, 4], [5, 6, 7]] and seen[4:] == [[10], [13], [2], [5]]


def test_byte_lengths_of_a_byte_level_bpe_are_its_decoded_bytes(built_small):
    """GPT-2's table against decoding: for whole texts the bytes are the same, in any script, and a token that
    cuts a character in two still counts its own byte (decoding alone would make it a 3-byte U+FFFD)."""
    from tokenizers import Tokenizer

    from datapipe.train.evaluate import byte_lengths

    path = built_small[0] / "tokenizer.json"
    tok = Tokenizer.from_file(str(path))
    table = byte_lengths(path.read_text())
    assert table is not None and table[tok.token_to_id("<|endoftext|>")] == 0
    for text in ("Hello world", "naïve café — 東京 💡", "def f(x):\n    return x\t# ok"):
        ids = tok.encode(text).ids
        assert int(table[ids].sum()) == len(text.encode("utf-8")), text
    emoji = tok.encode("💡").ids
    assert len(emoji) > 1 and int(table[emoji[:1]].sum()) < 3


@pytest.fixture(scope="module")
def manifest(built_small) -> str:
    return str(built_small[0] / "mixture.json")


def test_training_never_reads_a_held_out_sequence(manifest):
    base = MixtureLoader(manifest, 64, 8, seed=3, prefetch=0)
    train = MixtureLoader(manifest, 64, 8, seed=3, prefetch=0, holdout=16)
    other_seed = MixtureLoader(manifest, 64, 8, seed=9, prefetch=0, holdout=16, split="heldout")
    for i, name in enumerate(train.components):
        total = base.describe()[i]["sequences"]
        heldout = set(train.heldout_sequences(name).tolist())
        assert len(heldout) == held_out(total, 16) == min(16, total // 10) and len(heldout) > 0, name
        assert (
            set(other_seed.heldout_sequences(name).tolist()) == heldout
        )  # the manifest's choice, not the run's
        assert train.describe()[i]["sequences"] == total - len(heldout)
        drawn = set()
        for step in range(5000):  # until one epoch of this component has gone by
            comp, seq = train.plan(step)
            drawn.update(seq[comp == i].tolist())
            if len(drawn) >= total - len(heldout):
                break
        assert not drawn & heldout, name
        assert drawn == set(range(total)) - heldout, name
    # no holdout: the loader draws exactly what it drew before held-out rows existed
    zero = MixtureLoader(manifest, 64, 8, seed=3, prefetch=0, holdout=0)
    for step in range(5):
        assert all(np.array_equal(a, b) for a, b in zip(base.plan(step), zero.plan(step), strict=True))


BASE = ["seq_len=64", "global_batch=8", "mesh.data=8", "checkpoint.every=4", "optimizer.lr.lr=0.003"]


def _cfg(manifest: str, run_dir: Path, steps: int, *extra: str):
    over = parse_overrides([*BASE, *extra])
    over.update(mixture=manifest, model="tiny", steps=steps, run_dir=str(run_dir))
    return load_train_config(None, over)


@pytest.fixture(scope="module")
def trained(manifest, tmp_path_factory):
    """8 steps of the tiny model with the trainer's validation on held-out rows, checkpoints at 4 and 8."""
    run = tmp_path_factory.mktemp("eval-run")
    cfg = _cfg(
        manifest, run, 8, "validation.holdout=16", "validation.every=4", "validation.components=[prose]"
    )
    Trainer(cfg, verbose=False).train()
    return run


def test_eval_measures_every_held_out_row_once_and_repeats_exactly(manifest, trained):
    first = evaluate_run(str(trained), step=4)
    again = evaluate_run(str(trained), step=4, force=True)
    last = evaluate_run(str(trained))
    assert last["step"] == 8 and first["step"] == 4
    assert [r["step"] for r in read_evals(str(trained))] == [4, 4, 8]
    loader = MixtureLoader(manifest, 64, 8, seed=0, prefetch=0, holdout=16, split="heldout")
    for name, entry in first["components"].items():
        assert entry == again["components"][name]  # same rows, same numbers
        sequences = loader.heldout_sequences(name)
        assert entry["sequences"] == len(sequences) > 0
        ids, seg = loader.read_sequences(name, sequences)
        targets = sum(b - a for _, a, b in target_runs(seg))
        assert entry["tokens"] == targets
        assert math.isclose(entry["perplexity"], math.exp(entry["loss"]), rel_tol=1e-12)
        bits = entry["loss"] * entry["tokens"] / math.log(2)
        assert math.isclose(entry["bits_per_byte"], bits / entry["bytes"], rel_tol=1e-12)
        assert entry["tokens"] > 1 and 2 * entry["tokens"] < entry["bytes"] < 10 * entry["tokens"]
        assert last["components"][name]["loss"] < entry["loss"], name  # four more steps of training show


def test_the_trainers_validation_reads_the_held_out_rows(manifest, trained):
    """val_loss at step 8 is the loss of the step-8 model on the validation batches drawn from the held-out split
    (seed + 1, two batches of 8), recomputed here; the same batches drawn from the training split give another
    loss."""
    import jax

    from datapipe.data.mixing import Phase
    from datapipe.train.checkpoint import restore_run_params
    from datapipe.train.init import model_from_dict, read_run
    from datapipe.train.model import loss_sums

    val = {
        r["step"]: r["val_loss"]["prose"]
        for r in map(json.loads, (trained / "metrics.jsonl").read_text().splitlines())
        if "val_loss" in r
    }
    assert sorted(val) == [4, 8]
    model = model_from_dict(read_run(str(trained))["model"])
    _, params = restore_run_params(str(trained), 8, model)
    losses = jax.jit(lambda p, b: loss_sums(p, b, model)[1])

    def mean_loss(split: str) -> float:
        loader = MixtureLoader(
            manifest, 64, 8, seed=1, prefetch=0, phases=[Phase(0, {"prose": 1.0}, 8)], holdout=16, split=split
        )
        ce = n = 0.0
        for i in range(2):
            b = loader.batch(i)
            c, k = losses(params, {"input_ids": b["input_ids"], "segment_ids": b["segment_ids"]})
            ce, n = ce + float(c), n + float(k)
        return ce / n

    held, train = mean_loss("heldout"), mean_loss("train")
    assert math.isclose(val[8], held, rel_tol=1e-5)  # bf16 matmuls on 8 devices against one
    assert not math.isclose(val[8], train, rel_tol=1e-3)


def test_eval_command_prints_a_table_and_the_report_and_browser_show_it(built_small, trained, tmp_path):
    out = built_small[0]
    done = subprocess.run(
        [sys.executable, "-m", "datapipe.cli", "eval", str(trained), "--components", "prose"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "bits/byte" in done.stdout and "\nprose " in done.stdout
    page = tmp_path / "r.html"
    report = subprocess.run(
        [sys.executable, "-m", "datapipe.cli", "report", str(out), "--html", str(page), "--run", str(trained)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    html = page.read_text()
    section = html[html.index('<section id="runs">') :]
    assert "Held-out rows at step 8" in section and "<td>prose</td>" in section
    from starlette.testclient import TestClient

    from datapipe.browse.app import create_app

    app = create_app(str(out), str(tmp_path / "index"), [str(trained)], say=lambda _: None)
    runs = TestClient(app).get("/runs")
    assert runs.status_code == 200
    assert "Held-out rows at step 8" in runs.text and "<td>prose</td>" in runs.text


def _eval_cli(capsys, *args: str) -> str:
    """``datapipe eval ARGS`` in this process (one JIT cache for all of them): its stdout."""
    from datapipe.cli import main

    with pytest.raises(SystemExit) as done:
        main(["eval", *args])
    assert done.value.code == 0, capsys.readouterr().err
    return capsys.readouterr().out


def test_eval_of_an_evaluated_checkpoint_is_cached(trained, tmp_path, capsys):
    """The same checkpoint, manifest and options a second time (a second `make demo`): one line saying where the
    record is, the same table, nothing appended. Another option, step or checkpoint, or --force, evaluates."""
    run = tmp_path / "run"
    shutil.copytree(trained, run, ignore=shutil.ignore_patterns("eval.jsonl"))
    first = _eval_cli(capsys, str(run), "--components", "prose")
    assert "skipped (cached)" not in first and "\nprose " in first
    again = _eval_cli(capsys, str(run), "--components", "prose")
    head, _, table = again.partition("\n")
    assert head == f"eval: skipped (cached): {run / 'eval.jsonl'} line 1"
    assert table == first
    assert len(read_evals(str(run))) == 1
    as_json = _eval_cli(capsys, str(run), "--components", "prose", "--json")  # stdout stays one JSON record
    assert json.loads(as_json) == read_evals(str(run))[0]
    for other in (["--batch", "4"], ["--step", "4"], ["--force"]):
        assert "skipped" not in _eval_cli(capsys, str(run), "--components", "prose", *other), other
    assert "skipped" not in _eval_cli(capsys, str(run))  # every component
    assert len(read_evals(str(run))) == 5
    assert "skipped (cached)" in _eval_cli(capsys, str(run), "--components", "prose", "--batch", "4")
    # the checkpoint saved anew at step 8 (a run started again with --fresh): evaluated again
    meta = run / "checkpoints" / "8" / "_CHECKPOINT_METADATA"
    meta.write_text(meta.read_text().replace('"commit_timestamp_nsecs": ', '"commit_timestamp_nsecs": 1'))
    assert "skipped" not in _eval_cli(capsys, str(run), "--components", "prose")
    assert len(read_evals(str(run))) == 6


def test_eval_refuses_a_run_that_held_out_nothing_or_an_unknown_component(manifest, trained, tmp_path):
    Trainer(_cfg(manifest, tmp_path, 4, "validation.holdout=0"), verbose=False).train()
    with pytest.raises(DatapipeError, match="held out no rows"):
        evaluate_run(str(tmp_path))
    with pytest.raises(DatapipeError, match="no component nope"):
        evaluate_run(str(trained), components=["nope"])


def test_eval_reads_the_rows_of_the_runs_own_packing(manifest, tmp_path):
    """With ``loader.packing=document`` the sequences are other spans than with ``concat``: eval measures the
    ones the run held out (those of its own layout), never spans that training read."""
    cfg = _cfg(manifest, tmp_path, 2, "validation.holdout=16", "loader.packing=document")
    Trainer(cfg, verbose=False).train()
    record = evaluate_run(str(tmp_path))
    layout = MixtureLoader(manifest, 64, 8, seed=0, prefetch=0, packing="document", holdout=16)
    concat = MixtureLoader(manifest, 64, 8, seed=0, prefetch=0, holdout=16)
    assert any(
        layout.describe()[i]["sequences"] != concat.describe()[i]["sequences"]
        for i in range(len(layout.components))
    )
    for i, name in enumerate(layout.components):
        held = layout.heldout_sequences(name)
        _, seg = layout.read_sequences(name, held)
        assert record["components"][name]["tokens"] == sum(b - a for _, a, b in target_runs(seg)), name
        starts, lengths = layout._comps[i].layout.spans(held)
        held_tokens = {t for s, n in zip(starts, lengths, strict=True) for t in range(int(s), int(s + n))}
        trained = set()
        for step in range(50):
            comp, seq = layout.plan(step)
            s2, n2 = layout._comps[i].layout.spans(seq[comp == i])
            trained.update(t for s, n in zip(s2, n2, strict=True) for t in range(int(s), int(s + n)))
        assert not held_tokens & trained, name


def test_resuming_with_other_held_out_rows_is_refused(manifest, tmp_path):
    """Another holdout changes which rows train: a resumed run would go on with other data, and rows it trained
    on could be counted as held out. One line, before any step."""
    Trainer(_cfg(manifest, tmp_path, 2, "validation.holdout=16"), verbose=False).train()
    with pytest.raises(DatapipeError, match="held-out rows"):
        Trainer(_cfg(manifest, tmp_path, 4, "validation.holdout=8"), verbose=False).train()
