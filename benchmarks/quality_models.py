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
- ``student_spearman``, ``student_speedup`` and ``transformers_max_abs_diff`` are the distillation and transformers
  parts of issue 41, not built yet: printed as ``nan``.

Run: ``.venv/bin/python benchmarks/quality_models.py``. Last line:
``bench: quality_models embedding_docs_per_cpu_s=A student_spearman=S student_speedup=X ensemble_auc=E
best_single_auc=B transformers_max_abs_diff=D``.
"""

from __future__ import annotations

import os

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one thread: CPU seconds of one core
os.environ.setdefault("RAYON_NUM_THREADS", "1")

import argparse  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from datapipe.config.recipe import load_recipe  # noqa: E402
from datapipe.quality.ensemble import boundaries, bucket_of, combine  # noqa: E402
from datapipe.quality.model import preprocess  # noqa: E402
from datapipe.quality.scorers import load_scorer  # noqa: E402
from datapipe.quality.train import examples, roc_auc, train  # noqa: E402

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
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tries", type=int, default=3)
    ap.add_argument("--buckets", type=int, default=100)
    args = ap.parse_args()

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
        best = float("inf")
        for _ in range(args.tries):
            t0 = time.process_time()
            scorers["embedding"].scores(docs)
            best = min(best, time.process_time() - t0)
        speed = len(docs) / best

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
        f"bench: quality_models embedding_docs_per_cpu_s={speed:.0f} student_spearman=nan student_speedup=nan"
        f" ensemble_auc={ensemble_auc:.4f} best_single_auc={max(aucs.values()):.4f} transformers_max_abs_diff=nan"
    )


if __name__ == "__main__":
    main()
