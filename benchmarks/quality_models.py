"""Quality scorers beyond one fastText (issue 41): the embedding scorer's speed, and an ensemble against each scorer
alone, on the bundled recipe's real text, in one run.

Data: the fixture quality recipe's examples (``classifiers/fixture_quality.yaml``: reference prose against noisy
crawl text and code, paragraphs of the bundled fixture corpora, the same on any machine), split as ``datapipe
classifier train`` splits them (the recipe's seed; its ``validation`` share held out). Both scorers train on the
training part: fastText (``fixture_quality``) and a linear head on the static token vectors the wordllama wheel
ships (``fixture_quality_embedding``); both are scored on the held-out part.

- ``embedding_docs_per_cpu_s``: the embedding scorer over documents of about 3 KB (the held-out and training
  paragraphs joined in order and cut at a space before each 3,000th character), one thread, CPU seconds of the
  best of ``--tries``, vectors and head included.
- ``ensemble_auc`` against ``best_single_auc``: ROC AUC on the held-out examples of the ensemble (each scorer's score
  as a percentile bucket, ``--buckets`` of them, of its scores over the held-out set; the buckets' mean: the
  quality stage's ``ensemble: {combine: mean}``) and of the better scorer alone.
- ``transformers_max_abs_diff``, ``student_spearman`` and ``student_speedup``: the teacher is a small BERT regressor
  in FineWeb-Edu's layout (one output, 512 tokens), built here as ``tests/hf_classifier.py`` builds one (a
  word-piece vocabulary trained on the recipe's training paragraphs, ``--teacher-layers`` layers of
  ``--teacher-hidden``, random weights fine-tuned on the training paragraphs' labels, ``save_pretrained``), scored by
  the ``transformers`` scorer. ``transformers_max_abs_diff``: the largest difference between its scores (batched,
  padded, sorted) and transformers' forward on each text alone, over the held-out paragraphs and the 3 KB
  documents. Then ``datapipe classifier distill``'s code trains a fastText student (10 bins, its default
  settings) on the teacher's scores of every recipe paragraph; ``student_spearman`` is its Spearman correlation with
  the teacher on the paragraphs it held out, and ``student_speedup`` the ratio of their documents per CPU second on
  the same 200 of the 3 KB documents, each the best of ``--tries`` (torch on one thread, as fastText is; until
  2026-12-06 the teacher was timed once and the student as a best of three). torch and transformers are installed first when missing
  (``pip install '.[transformers]'``, about 5.5 GB).

Timing: every speed is CPU seconds of this process (``process_time``), in process, one scorer after the other (the
teacher, then the student), the best of ``--tries`` calls after one untimed call on the same documents (until
2026-12-07 the student had none, the teacher had scored other texts before).

Run: ``.venv/bin/python benchmarks/quality_models.py``. Last line:
``bench: quality_models embedding_docs_per_cpu_s=A student_spearman=S student_speedup=X ensemble_auc=E
best_single_auc=B transformers_max_abs_diff=D``.
"""

from __future__ import annotations

import os

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one thread: CPU seconds of one core
os.environ.setdefault("RAYON_NUM_THREADS", "1")

import importlib.util  # noqa: E402
import random  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from corpus import bench_parser  # noqa: E402

from datapipe import bucket_boundaries as boundaries  # noqa: E402
from datapipe import (
    bucket_of,
    load_recipe,  # noqa: E402
    load_scorer,  # noqa: E402
    preprocess,  # noqa: E402
    roc_auc,
)
from datapipe import combine_buckets as combine
from datapipe import train_classifier as train
from datapipe import training_examples as examples  # noqa: E402

DOC_CHARS = 3000


def held_out(recipe_name: str) -> tuple[list[str], np.ndarray, list[str]]:
    """The recipe's held-out texts and labels, and its training texts, split as its trainer splits them."""
    recipe = load_recipe(recipe_name)
    pos = [preprocess(t, recipe.lowercase) for t in examples(recipe, "positive")]
    neg = [preprocess(t, recipe.lowercase) for t in examples(recipe, "negative")]
    rows = [(True, t) for t in pos] + [(False, t) for t in neg]
    random.Random(recipe.seed).shuffle(rows)
    n_valid = max(1, round(len(rows) * recipe.validation))
    valid, training = rows[:n_valid], rows[n_valid:]
    return [t for _, t in valid], np.array([y for y, _ in valid]), [t for _, t in training]


def documents(texts: list[str], chars: int = DOC_CHARS) -> list[str]:
    """The paragraphs joined in order and cut into documents of ``chars`` characters (at a space)."""
    joined = " ".join(texts)
    out, start = [], 0
    while start + chars <= len(joined):
        end = joined.rfind(" ", start, start + chars) if joined[start + chars - 1] != " " else start + chars
        end = end if end > start else start + chars
        out.append(joined[start:end])
        start = end + 1
    return out


def ensure_torch() -> None:
    """torch and transformers, installed from the project's own extra when missing."""
    if all(importlib.util.find_spec(m) for m in ("torch", "transformers")):
        return
    print(
        "quality_models: installing torch and transformers (pip install '.[transformers]')", file=sys.stderr
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "-e", f"{REPO}[transformers]"], check=True, cwd=REPO
    )
    importlib.invalidate_caches()


def cpu_speed(scorer, docs: list[str], tries: int) -> float:
    """Documents per CPU second of the best of ``tries``, after one untimed call on the same documents."""
    scorer.scores(docs)
    best = float("inf")
    for _ in range(tries):
        t0 = time.process_time()
        scorer.scores(docs)
        best = min(best, time.process_time() - t0)
    return len(docs) / best


def teacher_and_student(args, texts, truth, training, docs, tmp) -> dict[str, float]:
    """Build and fine-tune the BERT teacher, check it against transformers, distil a fastText student from it."""
    import torch

    from datapipe import distill
    from tests.hf_classifier import bert_classifier, fine_tune

    torch.set_num_threads(1)
    recipe = load_recipe("fixture_quality")
    pos = [preprocess(t, recipe.lowercase) for t in examples(recipe, "positive")]
    neg = [preprocess(t, recipe.lowercase) for t in examples(recipe, "negative")]
    labels = {t: 1.0 for t in pos} | {t: 0.0 for t in neg}
    folder = Path(tmp, "teacher")
    t0 = time.perf_counter()
    model = bert_classifier(folder, training, hidden=args.teacher_hidden, layers=args.teacher_layers)
    fine_tune(model, folder, training, [labels[t] for t in training], epochs=1)
    built = time.perf_counter() - t0
    teacher = load_scorer(str(folder), "__label__hq")

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    check = texts + docs[:100]
    with torch.inference_mode():
        theirs = np.array(
            [model(**tokenizer(t, return_tensors="pt", truncation=True)).logits[0, 0].item() for t in check]
        )
    diff = float(np.abs(teacher.scores(check) - theirs).max())

    sample = [(str(i), t) for i, t in enumerate(training + texts)]
    scores = teacher.scores([t for _, t in sample])
    result = distill(sample, scores, None, "fasttext", str(Path(tmp, "student")), bins=10, seed=0)
    student = load_scorer(result.student_url, "__label__hq")
    # both timed the same way: the same 200 documents, the best of the same number of tries
    teacher_speed = cpu_speed(teacher, docs[:200], args.tries)
    student_speed = cpu_speed(student, docs[:200], args.tries)
    print(
        f"teacher: BERT {args.teacher_layers} layers x {args.teacher_hidden}, built and fine-tuned in {built:.0f} s;"
        f" held-out ROC AUC {roc_auc(teacher.scores(texts), truth):.4f}; {teacher_speed:,.1f} documents of 3 KB per"
        f" CPU second; largest difference from transformers' forward {diff:.2e}"
    )
    print(
        f"student: fastText on {result.report['documents']['train']:,} teacher scores, Spearman"
        f" {result.report['spearman']} on {result.report['documents']['held_out']:,} held-out paragraphs;"
        f" {student_speed:,.0f} documents per CPU second"
    )
    return {"diff": diff, "spearman": result.report["spearman"], "speedup": student_speed / teacher_speed}


def ensemble_scores(scores: dict[str, np.ndarray], buckets: int) -> np.ndarray:
    bounds = {name: boundaries(s, buckets) for name, s in scores.items()}
    weights = {name: 1.0 for name in scores}
    n = len(next(iter(scores.values())))
    return np.array(
        [
            combine({k: bucket_of(float(scores[k][i]), bounds[k]) for k in scores}, weights, "mean")
            for i in range(n)
        ]
    )


def main() -> None:
    ap = bench_parser(__doc__, tries=3, buckets=100, teacher_layers=2, teacher_hidden=128)
    args = ap.parse_args()
    ensure_torch()

    texts, truth, training = held_out("fixture_quality")
    with tempfile.TemporaryDirectory(prefix="datapipe-quality-models-") as tmp:
        scorers = {}
        for name, recipe in (("fasttext", "fixture_quality"), ("embedding", "fixture_quality_embedding")):
            trained = train(load_recipe(recipe), tmp)
            scorers[name] = load_scorer(trained.model_url, "__label__hq")
        scores = {name: s.scores(texts) for name, s in scorers.items()}
        aucs = {name: roc_auc(s, truth) for name, s in scores.items()}
        ensemble_auc = roc_auc(ensemble_scores(scores, args.buckets), truth)

        docs = documents(texts + training)
        speed = cpu_speed(scorers["embedding"], docs, args.tries)
        distilled = teacher_and_student(args, texts, truth, training, docs, tmp)

    mean_chars = sum(len(d) for d in docs) / len(docs)
    print(
        f"held-out examples: {len(texts)} ({int(truth.sum())} positive); training examples: {len(training)}"
    )
    for name, auc in aucs.items():
        print(f"  {name:<10} ROC AUC {auc:.4f}")
    print(f"  ensemble   ROC AUC {ensemble_auc:.4f}  (mean of {args.buckets} percentile buckets)")
    print(
        f"embedding scorer: {len(docs)} documents of {mean_chars:,.0f} characters, {speed:,.0f} per CPU second"
    )
    print(
        f"bench: quality_models embedding_docs_per_cpu_s={speed:.0f} student_spearman={distilled['spearman']:.3f}"
        f" student_speedup={distilled['speedup']:.0f} ensemble_auc={ensemble_auc:.4f}"
        f" best_single_auc={max(aucs.values()):.4f} transformers_max_abs_diff={distilled['diff']:.2e}"
    )


if __name__ == "__main__":
    main()
