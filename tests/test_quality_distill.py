"""``datapipe classifier distill`` (issue 41 item 2): a teacher's scores (any scorer, or a user's ``{id, score}``
labels) learned by a fastText or embedding student, reported as the student's Spearman correlation with the
teacher on held-out documents and both speeds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from datapipe import DatapipeError, load_scorer
from datapipe.config.recipe import load_recipe
from datapipe.quality.distill import distill, read_labels, read_sample
from datapipe.quality.scorers import kind_of
from datapipe.quality.train import train
from tests.conftest import CORPORA, REPO

SAMPLE = [str(CORPORA / "prose" / "*.jsonl*"), str(CORPORA / "handbook" / "*.jsonl.zst")]


@pytest.fixture(scope="module")
def teacher(tmp_path_factory):
    trained = train(load_recipe("fixture_quality"), str(tmp_path_factory.mktemp("classifiers")))
    return load_scorer(trained.model_url, "__label__hq")


@pytest.fixture(scope="module")
def sample():
    return read_sample(SAMPLE)


def test_an_embedding_student_follows_a_fasttext_teacher(teacher, sample, tmp_path):
    scores = teacher.scores([t for _, t in sample])
    result = distill(sample, scores, teacher, "embedding", str(tmp_path / "student"))
    r = result.report
    assert r["documents"]["held_out"] >= 40 and r["spearman"] >= 0.7, r
    assert r["student_docs_per_cpu_s"] > 0 and r["teacher_docs_per_cpu_s"] > 0
    student = load_scorer(result.student_url, "__label__hq")
    assert kind_of(result.student_url) == "embedding"
    assert json.loads((tmp_path / "student" / "scorer.json").read_text())["link"] == "identity"
    assert Path(result.student_url + ".report.json").exists() and len(student.scores(["a text"])) == 1


def test_a_fasttext_student_of_binned_scores_ranks_with_its_teacher(teacher, sample, tmp_path):
    scores = teacher.scores([t for _, t in sample])
    result = distill(sample, scores, teacher, "fasttext", str(tmp_path / "student"), bins=3)
    assert kind_of(result.student_url) == "fasttext-bins" and result.report["bins"] == 3
    student = load_scorer(result.student_url, "__label__hq")
    got = student.scores([t for _, t in sample[:50]])
    assert ((got >= 0) & (got <= 1)).all() and len(set(np.round(got, 6))) > 1
    assert result.report["spearman"] > 0.3, result.report  # 445 documents: a weak but real student


def test_labels_from_a_file_and_the_cli(tmp_path, sample):
    """A user's ``{id, score}`` labels: documents they do not name are left out and counted; the command prints
    the student's correlation; a bad labels file and an existing output are one line."""
    labels = tmp_path / "labels.jsonl"
    rows = [{"id": i, "score": min(1.0, len(t) / 5000)} for i, t in sample[::2]]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert len(read_labels(str(labels))) == len(rows)
    cmd = [str(Path(sys.executable).parent / "datapipe"), "classifier", "distill", "--sample", *SAMPLE]
    cmd += ["--labels", str(labels), "--student", "embedding", "--output", str(tmp_path / "s")]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (
        f"{len(rows)} documents of the sample are labelled ({len(sample) - len(rows)} are not" in proc.stdout
    )
    assert "Spearman" in proc.stdout
    again = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert again.returncode == 2 and again.stderr.strip().endswith(
        "already exists; distill writes a new student folder"
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "score": "high"}\n')
    with pytest.raises(DatapipeError, match="record 0: needs an 'id' and a numeric 'score'"):
        read_labels(str(bad))


def test_a_student_takes_fasttext_settings_and_reports_them(tmp_path, fixture_texts):
    """``--fasttext KEY=VALUE`` over the student's defaults (10 epochs at 0.5 over DCLM's): the report records
    what it trained with; a setting fastText does not have is one line."""
    sample = [(str(i), t) for i, t in enumerate(fixture_texts[:300])]
    scores = np.array([len(t) % 7 for _, t in sample], dtype=float)
    result = distill(sample, scores, None, "fasttext", str(tmp_path / "s"), bins=3, settings={"epoch": 2})
    assert result.report["fasttext"]["epoch"] == 2 and result.report["fasttext"]["lr"] == 0.5
    with pytest.raises(DatapipeError, match="no fastText setting epochs"):
        distill(sample, scores, None, "fasttext", str(tmp_path / "t"), bins=3, settings={"epochs": 2})
