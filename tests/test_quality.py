"""Quality classifiers: training from a recipe, scores equal to fastText's own predict, selection by fraction."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import fasttext
import numpy as np
import pytest

from datapipe import DatapipeError, read_records
from datapipe.config.recipe import BUNDLED, load_recipe
from datapipe.quality.model import QualityModel, check_model, preprocess
from datapipe.quality.train import train
from tests.conftest import (
    CORPORA,
    REPO,
    fortunes_training_file,
    one_source_mixture,
    run_build,
    tree_digest,
    write_mixture,
)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("classifiers")
    return train(load_recipe("fixture_quality"), str(out)), out


def test_train_writes_model_and_report_and_reuses_it(trained, tmp_path):
    first, out = trained
    assert not first.reused and Path(first.model_url).is_file()
    report = first.report
    print(f"held-out F1 {report['validation']['f1']}, ROC AUC {report['validation']['roc_auc']}")
    assert report["validation"]["f1"] >= 0.8 and report["validation"]["roc_auc"] >= 0.8
    assert report["examples"]["validation"] == round(
        0.1 * (report["examples"]["train"] + report["examples"]["validation"])
    )
    again = train(load_recipe("fixture_quality"), str(out))
    assert again.reused and again.model_url == first.model_url
    # a changed recipe (another seed) is another model
    text = (BUNDLED / "fixture_quality.yaml").read_text().replace("seed: 0", "seed: 1")
    text = text.replace("data_root: ../tests/fixtures/corpora", f"data_root: {CORPORA}")
    changed = train(load_recipe(str(write_mixture(tmp_path, text, "fq1.yaml"))), str(out))
    assert not changed.reused and changed.model_url != first.model_url


def test_scores_equal_fasttext_predict_on_every_fixture_document(trained, fixture_texts):
    model_url = trained[0].model_url
    ours = QualityModel(model_url, "__label__hq").scores(fixture_texts)
    direct = fasttext.load_model(model_url)
    for text, score in zip(fixture_texts, ours, strict=True):
        labels, probs = direct.predict(preprocess(text), k=2)
        expected = dict(zip(labels, probs, strict=True)).get("__label__hq", 0.0)
        assert score == float(expected)  # the same float: the compiled path computes as fastText does


def mixture_text(model: str, select: str) -> str:
    paths = ["prose/*.jsonl*", "fortunes/*.jsonl.zst", "handbook/*.jsonl.zst"]
    stages = f'quality:\n  classifiers: [{{name: fq, model: "{model}"}}]\n  select: {select}'
    return one_source_mixture("q", "prose", paths, stages)


def _build(tmp_path: Path, model: str, select: str, name: str = "q"):
    mix = write_mixture(tmp_path, mixture_text(model, select), f"{name}.yaml")
    out = tmp_path / f"out-{name}"
    return run_build("--mixture", str(mix), "--output", str(out)), out


KEEP_FIFTH = "{classifier: fq, keep_fraction: 0.2}"


@pytest.fixture(scope="module")
def kept_fifth(trained, tmp_path_factory):
    """A build on Beam that keeps the top fifth by score."""
    tmp_path = tmp_path_factory.mktemp("fifth")
    proc, out = _build(tmp_path, trained[0].model_url, KEEP_FIFTH)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp_path / "q.yaml", out


def test_keep_fraction_and_stage_scores(trained, kept_fifth):
    _, out = kept_fifth
    (stage,) = (out / "prose").glob("quality-*")
    doc = json.loads((stage / "stage.json").read_text())
    n_in, n_kept = doc["counts"]["docs_in"], doc["counts"]["docs_kept"]
    print(f"kept {n_kept} of {n_in} = {n_kept / n_in:.4f}")
    assert n_in >= 2000
    # the cut-off is the exact quantile: every document at or above the key of rank round(0.8 * (n - 1)) is kept
    assert n_kept == n_in - round(0.8 * (n_in - 1))
    assert doc["quality"] == {"keep_fraction": 0.2, "cutoff": doc["quality"]["cutoff"], "documents": n_in}
    assert len(doc["quality"]["cutoff"]) == 2
    # every removal names its score and the cut-off it fell under
    from datapipe import read_removed

    cut = doc["quality"]["cutoff"][0]
    rows = read_removed(str(stage)).to_pylist()
    assert len(rows) == n_in - n_kept and all(r["reason"] == "quality/below_cutoff" for r in rows)
    assert all(r["value"] <= r["threshold"] == cut and r["evidence"].startswith("quality/fq=") for r in rows)
    # the stage's recorded scores are fastText's own
    direct = fasttext.load_model(trained[0].model_url)
    kept = [d for p in sorted(stage.glob("part-*.jsonl.zst")) for d in read_records(str(p))]
    for d in kept:
        labels, probs = direct.predict(preprocess(d["text"]), k=2)
        assert (
            abs(d["metadata"]["quality"]["fq"] - dict(zip(labels, probs, strict=True))["__label__hq"]) <= 1e-6
        )


def test_keep_fraction_on_datatrove_writes_what_beam_writes(kept_fifth, tmp_path):
    """``--engine datatrove`` runs the cut-off as datatrove steps (keys per shard, then one cut-off task) over the
    same pure function: every file of the build, the quality stage's global report included, is Beam's."""
    mixture, beam_out = kept_fifth
    out = tmp_path / "dt"
    proc = run_build(
        "--mixture", str(mixture), "--output", str(out), "--engine", "datatrove", "--workers", "2"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert list(out.glob("_datatrove/prose/quality-*/cutoff/tasks-1/completions/*"))

    def outputs(root: Path) -> dict[str, str]:
        return {
            k: v
            for k, v in tree_digest(root).items()
            if not k.startswith("_datatrove/") and "experiment" not in k
        }

    beam, dt = outputs(beam_out), outputs(out)
    assert sorted(dt) == sorted(beam) and any("/quality-" in k and k.endswith("global.json") for k in beam)
    assert [k for k in beam if dt[k] != beam[k]] == []


def test_recipe_reference_trains_once_and_dclm_preset(tmp_path, trained):
    # a DCLM-style recipe pointing at a ready model (here: the fixture model standing in for DCLM's file)
    recipe = (BUNDLED / "dclm_oh_eli5.yaml").read_text()
    (tmp_path / "dclm.yaml").write_text(recipe.replace("${DCLM_FASTTEXT:-", "${DCLM_MODEL_TEST:-"))
    import os

    os.environ["DCLM_MODEL_TEST"] = trained[0].model_url
    try:
        proc, out = _build(
            tmp_path, f"recipe:{tmp_path / 'dclm.yaml'}", "{classifier: fq, preset: dclm}", "d"
        )
    finally:
        del os.environ["DCLM_MODEL_TEST"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    (stage,) = (out / "prose").glob("quality-*")
    doc = json.loads((stage / "stage.json").read_text())
    assert doc["config"]["select"]["threshold"] == 0.018112
    kept = [d for p in sorted(stage.glob("part-*.jsonl.zst")) for d in read_records(str(p))]
    assert len(kept) == doc["counts"]["docs_kept"] and all(
        d["metadata"]["quality"]["fq"] >= 0.018112 for d in kept
    )


@pytest.mark.parametrize("kind", ["missing", "empty", "not_fasttext", "truncated"])
def test_bad_model_is_a_clear_error_before_work(tmp_path, trained, kind):
    path = tmp_path / "model.bin"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "not_fasttext":
        path.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 100)
    elif kind == "truncated":
        path.write_bytes(Path(trained[0].model_url).read_bytes()[:5000])
    with pytest.raises(DatapipeError, match=str(path)):
        check_model(str(path))
    proc, out = _build(tmp_path, str(path), "{classifier: fq, threshold: 0.5}", kind)
    assert proc.returncode == 2 and str(path) in proc.stderr and "Traceback" not in proc.stderr
    assert not (out / "prose").exists()


def test_check_model_accepts_real_models(trained):
    from datapipe.io.models import bundled_model_path

    check_model(trained[0].model_url)
    check_model(bundled_model_path())  # a quantized .ftz: header checks only


def test_cli_trains_the_bundled_recipe(tmp_path, trained):
    import subprocess
    import sys

    shutil.copytree(Path(trained[0].model_url).parent, tmp_path / Path(trained[0].model_url).parent.name)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "datapipe.cli",
            "classifier",
            "train",
            "fixture_quality",
            "--output",
            str(tmp_path),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "reusing" in proc.stdout and "F1" in proc.stdout
    assert np.isfinite(json.loads(next(tmp_path.glob("*/report.json")).read_text())["validation"]["f1"])


def _fit_on_dirty_heap(conn, byte, train_file, seed, hyper, path):
    """In the training child: leave 8 MB of heap filled with ``byte`` where the next allocations will land (the
    mmap and trim thresholds raised, so the block stays on the heap), then train as the build's child does."""
    import ctypes

    from datapipe.quality.train import _fit_to_file

    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.mallopt(-3, 1 << 30)  # M_MMAP_THRESHOLD: a large block from the heap, not a mapping of its own
    libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: and the heap keeps it once freed
    block = libc.malloc(8 << 20)
    ctypes.memset(block, byte, 8 << 20)
    libc.free(block)
    _fit_to_file(conn, train_file, seed, hyper, path)


def test_training_does_not_depend_on_what_the_heap_held(tmp_path):
    """fastText reads memory it never initialized (``FASTTEXT_CHILD_ENV``): without the child's allocations zeroed,
    these heaps made this training stop with "Encountered NaN" or give other models (which heap did which varied
    with what else the child had allocated); with them zeroed, every heap gives the model of a fresh process."""
    from datapipe.quality.train import FASTTEXT_CHILD_ENV, train_in_fresh_process
    from datapipe.runtime.child import Child

    train = fortunes_training_file(tmp_path)
    hyper = {"loss": "softmax", "dim": 8, "epoch": 1, "lr": 0.05}
    clean = train_in_fresh_process(str(train), 0, hyper)
    assert clean is not None
    clean.save_model(str(tmp_path / "clean.bin"))
    for byte in (0x00, 0x7F, 0xFF):
        out = tmp_path / f"dirty-{byte}.bin"
        child = Child(_fit_on_dirty_heap, (byte, str(train), 0, hyper, str(out)), env=FASTTEXT_CHILD_ENV)
        child.join()
        child.close()
        assert child.exitcode == 0 and out.exists(), f"diverged on a heap of {byte:#04x} bytes"
        assert out.read_bytes() == (tmp_path / "clean.bin").read_bytes(), f"another model on {byte:#04x}"


def test_training_runs_in_a_fresh_process_and_is_reproducible(tmp_path, fixture_texts):
    """fastText trains in a spawned process (this test process has loaded JAX, Beam and more, which changed
    in-process results): two trainings give the same model file byte for byte and the same scores; a learning
    rate that diverges is one ConfigError naming the recipe's fasttext field."""
    from datapipe import ConfigError
    from datapipe.quality.train import train_in_fresh_process

    data = tmp_path / "train.txt"
    prose = [t for t in fixture_texts if "def " not in t and "import " not in t][:300]
    code = [t for t in fixture_texts if "def " in t and "import " in t][:300]
    lines = [
        f"__label__{k} {' '.join(t.split()[:200])}" for k, ts in (("hq", prose), ("lq", code)) for t in ts
    ]
    data.write_text("\n".join(lines) + "\n")
    hyper = {
        "wordNgrams": 2,
        "lr": 0.1,
        "dim": 100,
        "epoch": 5,
        "minCount": 1,
        "bucket": 50000,
    }  # the recipe's
    models = [train_in_fresh_process(str(data), 3, hyper) for _ in range(2)]
    assert all(m is not None for m in models)
    for k, m in enumerate(models):
        m.save_model(str(tmp_path / f"m{k}.bin"))
    assert (tmp_path / "m0.bin").read_bytes() == (tmp_path / "m1.bin").read_bytes()
    for text in fixture_texts[:50]:
        assert (
            models[0].predict(preprocess(text), k=2)[1].tolist()
            == models[1].predict(preprocess(text), k=2)[1].tolist()
        )
    text = (BUNDLED / "fixture_quality.yaml").read_text().replace("lr: 0.1", "lr: 1.0e+30")
    text = text.replace("data_root: ../tests/fixtures/corpora", f"data_root: {CORPORA}")
    with pytest.raises(ConfigError, match="fasttext: training diverged"):
        train(load_recipe(str(write_mixture(tmp_path, text, "diverge.yaml"))), str(tmp_path / "out"))
