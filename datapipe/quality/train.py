"""Train a fastText quality classifier from a recipe, versioned by the hash of the recipe and its inputs.

``datapipe classifier train RECIPE [--output URL]``: reads the positive and negative sources with the pipeline's own
readers (HTML extracted as the mixture would), samples each deterministically, shuffles with the recipe's seed,
holds out ``validation`` of the examples, trains with the real ``fasttext`` library (one thread, fixed seed, so the
same recipe gives the same model), optionally quantizes, and writes ``<output>/<name>-<hash8>/model.bin`` (or
``model.ftz``) and ``report.json`` (precision, recall, F1 and ROC AUC on the held-out split, counts,
hyperparameters). A second run with the same recipe and inputs finds the model and does not retrain.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from datapipe.config.recipe import Recipe
from datapipe.errors import ConfigError
from datapipe.extract.html import HtmlExtractor
from datapipe.extract.spaces import as_written
from datapipe.io import fs
from datapipe.io.readers import read_shard
from datapipe.io.shards import make_shards
from datapipe.io.tally import ReadTally
from datapipe.quality.model import preprocess
from datapipe.runtime.child import Child


def _files(recipe: Recipe, side: str) -> list[list[str]]:
    out = []
    for i, src in enumerate(getattr(recipe, side)):
        files: list[str] = []
        for j, pattern in enumerate(src.paths):
            matched = fs.glob(pattern)
            if not matched:
                raise ConfigError(recipe.file, f"{side}[{i}].paths[{j}]", f"no file matches {pattern!r}")
            files.extend(m for m in matched if m not in files)
        out.append(files)
    return out


def recipe_hash(recipe: Recipe) -> str:
    inputs = {
        side: [
            [{"name": os.path.basename(f), "size": fs.size(f)} for f in files]
            for files in _files(recipe, side)
        ]
        for side in ("positive", "negative")
    }
    blob = json.dumps({"recipe": recipe.config(), "inputs": inputs}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _units(text: str, recipe: Recipe) -> list[str]:
    if recipe.unit == "document":
        return [text]
    return [p for p in (q.strip() for q in text.split("\n\n")) if len(p) >= recipe.min_chars]


def examples(recipe: Recipe, side: str) -> list[str]:
    """Each source's texts (or paragraphs), sampled deterministically, in source order."""
    out: list[str] = []
    for i, (src, files) in enumerate(zip(getattr(recipe, side), _files(recipe, side), strict=True)):
        extractor = HtmlExtractor.from_config(src.extract)
        texts: list[str] = []
        for shard in make_shards(files, recipe.data_root):
            for rec in read_shard(
                shard,
                recipe.name,
                src.format,
                src.text_field,
                "id",
                ReadTally(),
                max_record_bytes=src.extract.max_record_bytes,
                max_html_bytes=src.extract.max_bytes,
            ):
                text = extractor((rec["html"], rec["charset"])) if "html" in rec else rec["text"]
                text = as_written(text, extracted="html" in rec, normalize=src.extract.normalize_spaces)
                texts.extend(u for u in _units(text, recipe) if u.strip())
        if src.sample is not None and src.sample < len(texts):
            picked = sorted(random.Random(f"{recipe.seed}/{side}/{i}").sample(range(len(texts)), src.sample))
            texts = [texts[k] for k in picked]
        out.extend(texts)
    return out


def roc_auc(scores: np.ndarray, truth: np.ndarray) -> float:
    """Area under the ROC curve by the rank-sum statistic (ties get their average rank)."""
    pos, neg = int(truth.sum()), int((~truth).sum())
    if not pos or not neg:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    i = 0
    while i < len(scores):
        j = i
        while j + 1 < len(scores) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[truth].sum() - pos * (pos + 1) / 2) / (pos * neg))


@dataclass(frozen=True)
class Trained:
    model_url: str
    report: dict[str, Any]
    reused: bool


def model_dir(recipe: Recipe, output: str) -> str:
    return fs.join(output, f"{recipe.name}-{recipe_hash(recipe)[:8]}")


# fastText 0.9.2 and 0.9.3 (the wheel we install and PyPI's own build alike) leave most of the input matrix
# uninitialized when training on fewer than ten threads: ``DenseMatrix::uniform`` fills blocks of a tenth of the
# matrix, one per thread, into memory ``new`` did not clear (valgrind: "Use of uninitialised value" in
# ``dotRow`` <- ``SoftmaxLoss::computeOutput``, allocated by ``createRandomMatrix``). On fresh pages those rows are
# zeros; on reused heap they are whatever was there, so the same data, seed and single thread gave different
# models from process to process (a child that had imported other modules first, or a second training in one
# process) and now and then "Encountered NaN", at any learning rate (lr 0.001 too). glibc's malloc perturbation
# with byte 0xff fills every allocation with zeros (``alloc_perturb`` writes ``byte ^ 0xff``): the model is then
# the one fastText trains on fresh memory, whatever ran before: each of 6 seeds gave the same file in 5 processes
# and both builds, where without it 3 of 8 seeds diverged. C libraries other than glibc ignore the variable.
FASTTEXT_CHILD_ENV = {"MALLOC_PERTURB_": "255"}


def _fit_to_file(_conn: object, train_file: str, seed: int, hyper: dict[str, object], path: str) -> None:
    """fastText training in a child process (see ``_train_supervised``); the model is handed back as a file."""
    import fasttext

    fasttext.train_supervised(input=train_file, thread=1, seed=seed, verbose=0, **hyper).save_model(path)


def _train_supervised(recipe: Recipe, train_file: str, hyper: dict[str, object]):
    """fastText training, always in a fresh spawned process whose malloc hands out zeroed memory, so that the
    model depends on the recipe alone (see :data:`FASTTEXT_CHILD_ENV`). A NaN there is the recipe's problem."""
    model = train_in_fresh_process(train_file, recipe.seed, hyper)
    if model is None:
        raise ConfigError(
            recipe.file, "fasttext", "training diverged (fastText: Encountered NaN); try a lower lr"
        )
    return model


def train_in_fresh_process(train_file: str, seed: int, hyper: dict[str, object]):
    """fastText trained in a fresh child process (its allocations zeroed: :data:`FASTTEXT_CHILD_ENV`) and loaded
    here; None when the child fails (a NaN loss)."""
    import fasttext

    with tempfile.TemporaryDirectory(prefix="datapipe-fasttext-") as tmp:
        path = os.path.join(tmp, "model.bin")
        # its own process group: a Ctrl-C is the build's to handle, and ends the child here (datapipe.runtime.child)
        child = Child(_fit_to_file, (train_file, seed, hyper, path), env=FASTTEXT_CHILD_ENV)
        try:
            child.join()
        finally:
            child.kill()
            child.join()
            child.close()
        if child.exitcode != 0 or not os.path.exists(path):
            return None
        return fasttext.load_model(path)


def model_url(recipe: Recipe, output: str) -> str:
    """Where :func:`train` writes (or finds) the recipe's model under ``output``: a fastText file, or the scorer
    folder of an ``embedding`` recipe."""
    if recipe.kind == "embedding":
        return model_dir(recipe, output)
    return fs.join(model_dir(recipe, output), "model.ftz" if recipe.quantize else "model.bin")


def _fit_fasttext(recipe: Recipe, training: list[tuple[str, str]], url: str) -> dict[str, object]:
    """fastText on the training rows, written to ``url``; the hyperparameters it used."""
    import fasttext

    hyper = dict(recipe.hyperparameters)
    with tempfile.TemporaryDirectory() as tmp:
        train_file = os.path.join(tmp, "train.txt")
        with open(train_file, "w", encoding="utf-8") as f:
            f.writelines(f"{label} {text}\n" for label, text in training)
        fasttext.FastText.eprint = lambda *a, **k: None
        model = _train_supervised(recipe, train_file, hyper)
        if recipe.quantize:
            model.quantize(input=train_file, retrain=False)
        local = os.path.join(tmp, url.rsplit("/", 1)[-1])
        model.save_model(local)
        data = Path(local).read_bytes()
    fs.write_bytes_atomic(url, data)
    return hyper


def _fit_embedding(recipe: Recipe, training: list[tuple[str, str]], url: str) -> dict[str, object]:
    """A logistic-regression head on the training rows' static embeddings (:mod:`datapipe.quality.embedding`),
    written as a scorer folder at ``url`` (local); its settings."""
    from datapipe.quality.embedding import StaticEmbeddings, fit_linear_head, save_scorer

    settings = dict(recipe.scorer)
    embeddings = StaticEmbeddings(settings["embeddings"])
    x = embeddings.embed([text for _, text in training])
    y = np.array([label == recipe.positive_label for label, _ in training])
    head = fit_linear_head(x, y, settings["l2"])
    folder = fs.local_path(url)
    tmp = folder + ".tmp"
    save_scorer(tmp, settings["embeddings"], head, recipe.positive_label)
    os.replace(tmp, folder)  # whole, or not there
    return settings


FITS = {"fasttext": _fit_fasttext, "embedding": _fit_embedding}  # a recipe's scorer kind -> how it is trained


def train(recipe: Recipe, output: str) -> Trained:
    if recipe.model_url is not None:
        raise ConfigError(
            recipe.file, "model_url", "this recipe describes a ready model; point a mixture at it"
        )
    out = model_dir(recipe, output)
    url, report_url = model_url(recipe, output), fs.join(out, "report.json")
    if recipe.kind == "embedding":  # its folder is the model: the report goes beside it
        report_url = out + ".report.json"
    name = url.rsplit("/", 1)[-1]
    if fs.exists(url) and fs.exists(report_url):
        return Trained(url, json.loads(fs.read_text(report_url)), reused=True)

    pos = [preprocess(t, recipe.lowercase) for t in examples(recipe, "positive")]
    neg = [preprocess(t, recipe.lowercase) for t in examples(recipe, "negative")]
    rows = [(recipe.positive_label, t) for t in pos] + [(recipe.negative_label, t) for t in neg]
    random.Random(recipe.seed).shuffle(rows)
    n_valid = max(1, round(len(rows) * recipe.validation))
    valid, training = rows[:n_valid], rows[n_valid:]
    hyper = FITS[recipe.kind](recipe, training, url)

    from datapipe.quality.scorers import load_scorer

    scorer = load_scorer(url, recipe.positive_label, recipe.lowercase)
    scores = scorer.scores([t for _, t in valid])
    truth = np.array([label == recipe.positive_label for label, _ in valid])
    predicted = scores >= 0.5
    tp = int((predicted & truth).sum())
    precision = tp / max(1, int(predicted.sum()))
    recall = tp / max(1, int(truth.sum()))
    report = {
        "recipe": recipe.name,
        "recipe_hash": recipe_hash(recipe),
        "model": name,
        "kind": recipe.kind,
        "examples": {
            "positive": len(pos),
            "negative": len(neg),
            "train": len(training),
            "validation": len(valid),
        },
        "validation": {
            "precision": round(precision, 4),
            "recall": round(recall, 4),
            "f1": round(2 * precision * recall / max(1e-12, precision + recall), 4),
            "roc_auc": round(roc_auc(scores, truth), 4),
            "threshold": 0.5,
        },
        "hyperparameters": hyper,
        "labels": {"positive": recipe.positive_label, "negative": recipe.negative_label},
        "unit": recipe.unit,
        "seed": recipe.seed,
    }
    if recipe.kind == "fasttext":
        del report["kind"]  # as its reports were before kinds: the demo's bytes stay
    fs.write_text_atomic(report_url, json.dumps(report, indent=2, sort_keys=True) + "\n")
    return Trained(url, report, reused=False)
