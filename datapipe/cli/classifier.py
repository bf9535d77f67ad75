"""``datapipe classifier train|distill``: train a quality classifier recipe, or distill a teacher into a student."""

from __future__ import annotations

import argparse

from datapipe.cli.command import subcommand
from datapipe.errors import DatapipeError

NAME = "classifier"


def run_train(args: argparse.Namespace) -> int:
    from datapipe.config.recipe import load_recipe
    from datapipe.quality.train import train

    recipe = load_recipe(args.recipe)
    result = train(recipe, args.output)
    v = result.report["validation"]
    verb = "reusing" if result.reused else "trained"
    print(f"{verb} {result.model_url}")
    print(
        f"held-out ({result.report['examples']['validation']} examples): F1 {v['f1']}  precision {v['precision']}  "
        f"recall {v['recall']}  ROC AUC {v['roc_auc']}"
    )
    return 0


def run_distill(args: argparse.Namespace) -> int:
    import numpy as np
    import yaml

    from datapipe.quality.distill import distill, read_labels, read_sample
    from datapipe.quality.scorers import load_scorer

    sample = read_sample(args.sample, args.limit)
    teacher = None
    if args.labels:
        labels = read_labels(args.labels)
        missing = sum(1 for i, _ in sample if i not in labels)
        sample = [(i, t) for i, t in sample if i in labels]
        scores = np.array([labels[i] for i, _ in sample])
        print(f"labels: {len(sample):,} documents of the sample are labelled ({missing:,} are not, left out)")
    else:
        teacher = load_scorer(args.teacher, args.teacher_label)
        scores = teacher.scores([t for _, t in sample])
        print(f"teacher {args.teacher}: scored {len(sample):,} documents")
    settings = {}
    for item in args.fasttext:
        key, sep, value = item.partition("=")
        if not sep:
            raise DatapipeError(f"--fasttext {item}: expected KEY=VALUE (epoch=10, lr=0.5, ...)")
        settings[key] = yaml.safe_load(value)
    result = distill(
        sample, scores, teacher, args.student, args.output, args.bins, args.holdout, args.seed, settings
    )
    r = result.report
    speeds = f"student {r['student_docs_per_cpu_s']:,.0f} documents per CPU second"
    if "speedup" in r:
        speeds += f", teacher {r['teacher_docs_per_cpu_s']:,.0f} ({r['speedup']}x)"
    print(
        f"student {result.student_url}: Spearman {r['spearman']} with the teacher on {r['documents']['held_out']:,}"
    )
    print(f"held-out documents; {speeds}")
    return 0


CLASSIFIER_HELP = "quality classifiers: train a recipe, or distill a teacher into a student"
CLASSIFIER_EXAMPLES = "example:\n  datapipe classifier train fixture_quality --output out/classifiers"

TRAIN_HELP = "train a recipe (classifiers/NAME.yaml or a path); reuses a trained model"
TRAIN_OPERAND = ("recipe", "a recipe name (fixture_quality) or path")
TRAIN_EXAMPLES = "example:\n  datapipe classifier train fixture_quality --output out/classifiers"

DISTILL_HELP = "train a fast student (fastText or embedding) on a teacher's scores of a sample"
DISTILL_EXAMPLES = (
    "examples:\n  datapipe classifier distill --sample 'out/x/web/dedup-*/part-*.jsonl.zst' "
    "--teacher out/classifiers/edu --student fasttext --output out/classifiers/edu-student\n"
    "  datapipe classifier distill --sample docs.jsonl --labels llm_scores.jsonl --student embedding "
    "--output out/classifiers/llm-student"
)


def add_parser(sub) -> None:
    c = subcommand(sub, "classifier", CLASSIFIER_HELP, CLASSIFIER_EXAMPLES)
    csub = c.add_subparsers(dest="classifier_command", metavar="ACTION", required=True)
    t = subcommand(csub, "train", TRAIN_HELP, TRAIN_EXAMPLES, operand=TRAIN_OPERAND, handler=run_train)
    t.add_argument(
        "--output", default="out/classifiers", help="where <name>-<hash8>/ goes (default out/classifiers)"
    )
    d = subcommand(csub, "distill", DISTILL_HELP, DISTILL_EXAMPLES)
    d.add_argument("--sample", nargs="+", required=True, help="JSONL documents ({id, text}), files or globs")
    who = d.add_mutually_exclusive_group(required=True)
    who.add_argument(
        "--teacher", help="a scorer: a fastText model, a scorer folder or a Hugging Face classifier folder"
    )
    who.add_argument("--labels", help="a JSONL of {id, score} (an LLM's labels, say)")
    d.add_argument(
        "--teacher-label", default="__label__hq", help="the teacher's positive label (default __label__hq)"
    )
    d.add_argument("--student", choices=["fasttext", "embedding"], default="fasttext")
    d.add_argument(
        "--bins", type=int, default=10, help="fastText student: classes the scores are cut into (10)"
    )
    d.add_argument(
        "--fasttext",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="fastText student: a training setting over the defaults (epoch=10 lr=0.5, DCLM's others)",
    )
    d.add_argument("--holdout", type=float, default=0.1, help="share of the sample held out (0.1)")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--limit", type=int, default=None, help="at most this many sample documents")
    d.add_argument("--output", required=True, help="the student's folder (must not exist)")
    d.set_defaults(handler=run_distill)
