"""Teacher to student: an expensive scorer's (or an LLM's) scores on a sample, learned by a fast student.

Why: a transformer scorer costs about 1,000 times fastText per document on a CPU, so the peers (Marin, Dolma 3,
FineWeb-Edu) label a sample with the expensive teacher and train a fast student on those labels, which then scores
everything. ``datapipe classifier distill``:

1. the sample: JSONL documents (``{id, text}``; a build's part files are such), read in order;
2. the teacher's score for each: any scorer (:mod:`datapipe.quality.scorers`), or a JSONL of ``{id, score}`` (an
   LLM's labels); a document the labels do not name is left out, and counted;
3. a held-out share (the seed decides which documents), the rest trains the student:
   - ``fasttext``: the teacher's scores cut into ``bins`` classes at its training quantiles (``__label__b0`` ..),
     fastText on them; the student's score is the expected class over ``bins - 1``, in 0..1 (a scorer folder of
     kind ``fasttext-bins``). Its settings are DCLM's but 10 epochs at a learning rate of 0.5
     (:data:`STUDENT_FASTTEXT`): DCLM's 5 epochs at 0.1 suit its 400,000 examples, and on a sample of thousands
     underfit (measured on the fixture recipe's 5,516 paragraphs and the benchmark's BERT teacher, 10 bins:
     Spearman 0.39 with DCLM's settings, 0.80 with these, 0.79 at 25 epochs);
   - ``embedding``: a ridge regression of the teacher's score on the document's static embedding (kind
     ``embedding``, a linear head);
4. the report: the student's Spearman correlation with the teacher on the held-out documents, and both speeds
   (documents per CPU second on them).
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.io.jsonl import read_records
from datapipe.quality.binned import BINS_MODEL
from datapipe.quality.embedding import SCORER_FILE, WORDLLAMA, LinearHead, StaticEmbeddings, save_scorer
from datapipe.quality.model import preprocess

STUDENT_FASTTEXT = {"epoch": 10, "lr": 0.5}  # over DCLM's settings: see the module's docstring
# fastText's train_supervised settings (a misspelt one is one line, not fastText's TypeError)
FASTTEXT_SETTINGS = (
    "lr", "dim", "ws", "epoch", "minCount", "minCountLabel", "minn", "maxn", "neg", "wordNgrams", "loss", "bucket",
    "thread", "lrUpdateRate", "t",
)  # fmt: skip


def read_sample(paths: Iterable[str], limit: int | None = None) -> list[tuple[str, str]]:
    """``(id, text)`` of the JSONL documents in ``paths`` (files or globs), in order, at most ``limit``."""
    out: list[tuple[str, str]] = []
    for pattern in paths:
        files = sorted(fs.glob(pattern)) if any(c in pattern for c in "*?[") else [pattern]
        if not files:
            raise DatapipeError(f"{pattern}: no file matches the sample")
        for url in files:
            for i, doc in enumerate(read_records(url)):
                if "text" not in doc:
                    raise DatapipeError(f"{url}: record {i} has no 'text' field")
                out.append((str(doc.get("id", f"{url}:{i}")), doc["text"]))
                if limit is not None and len(out) >= limit:
                    return out
    return out


def read_labels(url: str) -> dict[str, float]:
    """A user's ``{id, score}`` JSONL (an LLM's labels), by id."""
    out: dict[str, float] = {}
    for i, row in enumerate(read_records(url)):
        try:
            out[str(row["id"])] = float(row["score"])
        except (KeyError, TypeError, ValueError):
            raise DatapipeError(f"{url}: record {i}: needs an 'id' and a numeric 'score'") from None
    return out


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def _cpu_speed(scorer: Any, texts: list[str]) -> float:
    t0 = time.process_time()
    scorer.scores(texts)
    return len(texts) / max(1e-9, time.process_time() - t0)


@dataclass(frozen=True)
class Distilled:
    student_url: str
    report: dict[str, Any]


def fit_fasttext_student(
    texts: list[str],
    teacher: np.ndarray,
    bins: int,
    seed: int,
    folder: str,
    settings: dict[str, object] | None = None,
) -> dict[str, object]:
    """fastText on the teacher's scores cut at their quantiles into ``bins`` classes, saved as a scorer folder;
    the settings it trained with (:data:`STUDENT_FASTTEXT` and ``settings`` over DCLM's)."""
    from datapipe.config.recipe import DCLM_HYPERPARAMETERS
    from datapipe.quality.train import train_in_fresh_process

    edges = np.quantile(teacher, np.linspace(0, 1, bins + 1)[1:-1])
    classes = np.searchsorted(edges, teacher, side="right")
    with tempfile.TemporaryDirectory(prefix="datapipe-distill-") as tmp:
        train_file = os.path.join(tmp, "train.txt")
        with open(train_file, "w", encoding="utf-8") as f:
            f.writelines(f"__label__b{c} {preprocess(t)}\n" for c, t in zip(classes, texts, strict=True))
        hyper = {**DCLM_HYPERPARAMETERS, **STUDENT_FASTTEXT, **(settings or {})}
        unknown = sorted(set(hyper) - set(FASTTEXT_SETTINGS))
        if unknown:
            raise DatapipeError(
                f"distill: no fastText setting {', '.join(unknown)} (settings: {', '.join(FASTTEXT_SETTINGS)})"
            )
        model = train_in_fresh_process(train_file, seed, hyper)
        if model is None:
            raise DatapipeError("distill: fastText diverged on the student's data (Encountered NaN)")
        os.makedirs(folder, exist_ok=True)
        model.save_model(os.path.join(folder, BINS_MODEL))
    meta = {"kind": "fasttext-bins", "model": BINS_MODEL, "bins": bins, "edges": [float(e) for e in edges]}
    Path(folder, SCORER_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return hyper


def fit_embedding_student(texts: list[str], teacher: np.ndarray, folder: str, l2: float = 1e-3) -> None:
    """A ridge regression of the teacher's score on the static embeddings, saved as an embedding scorer whose head
    is linear (no sigmoid)."""
    x = StaticEmbeddings(WORDLLAMA).embed(texts).astype(np.float64)
    xm, ym = x.mean(axis=0), float(teacher.mean())
    xc = x - xm
    w = np.linalg.solve(xc.T @ xc + l2 * len(texts) * np.eye(x.shape[1]), xc.T @ (teacher - ym))
    head = LinearHead(w.astype(np.float32), float(ym - xm @ w), link="identity")
    save_scorer(folder, WORDLLAMA, head, "__label__hq")


def distill(
    sample: list[tuple[str, str]],
    teacher_scores: np.ndarray,
    teacher: object | None,
    student: str,
    output: str,
    bins: int = 5,
    holdout: float = 0.1,
    seed: int = 0,
    settings: dict[str, object] | None = None,
) -> Distilled:
    """Train a ``student`` ("fasttext" or "embedding") on the teacher's scores of ``sample``; report its Spearman
    correlation with the teacher and both speeds on the held-out documents."""
    from datapipe.quality.scorers import load_scorer

    if len(sample) < 20:
        raise DatapipeError(f"distill: {len(sample)} labelled documents; at least 20 are needed")
    order = list(range(len(sample)))
    random.Random(seed).shuffle(order)
    n_held = max(10, round(holdout * len(sample)))
    held, train_ix = order[:n_held], order[n_held:]
    texts = [t for _, t in sample]
    folder = fs.local_path(output)
    if os.path.exists(folder):
        raise DatapipeError(f"{output}: already exists; distill writes a new student folder")
    tmp = folder + ".tmp"
    fit_texts, fit_scores = [texts[i] for i in train_ix], teacher_scores[train_ix]
    hyper: dict[str, object] = {}
    if student == "fasttext":
        hyper = fit_fasttext_student(fit_texts, fit_scores, bins, seed, tmp, settings)
    elif student == "embedding":
        fit_embedding_student(fit_texts, fit_scores, tmp)
    else:
        raise DatapipeError(f"distill: no student kind {student!r} (fasttext, embedding)")
    os.replace(tmp, folder)
    scorer = load_scorer(folder, "__label__hq")
    held_texts = [texts[i] for i in held]
    predicted = scorer.scores(held_texts)
    report: dict[str, Any] = {
        "student": student,
        "documents": {"sample": len(sample), "train": len(train_ix), "held_out": len(held)},
        "spearman": round(spearman(predicted, teacher_scores[held]), 4),
        "student_docs_per_cpu_s": round(_cpu_speed(scorer, held_texts), 1),
    }
    if teacher is not None:
        report["teacher_docs_per_cpu_s"] = round(_cpu_speed(teacher, held_texts), 1)
        report["speedup"] = round(
            report["student_docs_per_cpu_s"] / max(1e-9, report["teacher_docs_per_cpu_s"]), 1
        )
    if student == "fasttext":
        report["bins"] = bins
        report["fasttext"] = hyper
    Path(folder + ".report.json").write_text(
        json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return Distilled(folder, report)
