"""The ``datapipe`` command.

    datapipe inspect PATH [--rows N] [--chars N]   a token cache or a mixture output folder: rows, tokens,
                                                   tokenizer, and the first rows decoded
    datapipe build ...                             same as ``python -m pipelines.build_mixture ...``
    datapipe classifier train RECIPE [--output U]  train a quality classifier (reuses one already trained)
    datapipe classifier distill --sample S ...     a fast student of a teacher's (or an LLM's) scores
    datapipe verify PATH                           check caches: monotone offsets, counts, token ids
    datapipe train --mixture M --model P --steps N train the bundled JAX model (resumes automatically)
    datapipe report OUT [--html F]                 one HTML file: funnels, score and length plots, samples
    datapipe lineage RUN_OR_OUTPUT                 run -> manifest -> stages -> input files
    datapipe browse OUT [--port N]                 a local web app: documents, decisions, clusters, runs

Errors a user can fix print one line (``error: ...``) and exit 2.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Callable

from datapipe import __version__
from datapipe.errors import DatapipeError, error_lines
from datapipe.io import fs
from datapipe.report import BROWSE_PORT
from datapipe.runtime.stage import STAGE_JSON
from datapipe.store.cache import LEDGER, TokenCache
from datapipe.store.manifest import MANIFEST, open_component, read_manifest
from datapipe.tokenize.decode import decoder_for


def _shorten(text: str, n: int) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= n else text[:n] + f"... (+{len(text) - n} chars)"


def _print_cache(
    cache: TokenCache, rows: int, chars: int, decoder: Callable[[list[int]], str] | None
) -> None:
    tok = cache.tokenizer
    print(f"cache:     {cache.path}")
    print(f"rows:      {cache.num_rows:,}")
    print(f"tokens:    {cache.num_tokens:,}")
    print(
        f"tokenizer: {tok.name} (vocab {tok.vocab_size:,}, sha256 {tok.sha256[:12]}, bos={tok.add_bos}, eos={tok.add_eos})"
    )
    print(f"shards:    {len(cache.ledger['shard_rows'])}")
    if decoder is None:
        print("(tokenizer not loadable here; rows shown as ids)")
    for i in range(min(rows, cache.num_rows)):
        ids = cache.row(i).tolist()
        shown = decoder(ids) if decoder else " ".join(map(str, ids[:64]))
        print(f"  row {i} ({len(ids)} tokens): {_shorten(shown, chars)}")


def cmd_inspect(args: argparse.Namespace) -> int:
    path = args.path.rstrip("/")
    if args.cluster is not None:
        return _print_cluster(path, args.cluster, args.chars)
    if fs.exists(fs.join(path, STAGE_JSON)) and not fs.exists(fs.join(path, LEDGER)):
        from datapipe.report.inspect_stage import inspect_stage

        return inspect_stage(path, args.rows, args.chars, args.removed_by, args.json)
    if args.json:
        from datapipe.report.inspect_stage import inspect_json

        print(json.dumps(inspect_json(path, args.rows), indent=2))
        return 0
    if fs.exists(fs.join(path, LEDGER)):
        cache = TokenCache.open(path)
        _print_cache(cache, args.rows, args.chars, decoder_for(cache))
        return 0
    if path.endswith(".json") or fs.exists(fs.join(path, MANIFEST)):
        doc = read_manifest(path)
        manifest_dir = fs.parent(path) if path.endswith(".json") else path
        print(f"mixture {doc['name']} (seed {doc['seed']}, tokenizer {doc['tokenizer']['name']})")
        print(f"{'component':<18} {'weight':>9} {'share':>7} {'rows':>8} {'tokens':>12}")
        for c in doc["components"]:
            print(
                f"{c['name']:<18} {c['weight']:>9.4g} {c['normalized_weight']:>7.2%} {c['rows']:>8,} {c['tokens']:>12,}"
            )
        total = sum(c["tokens"] for c in doc["components"])
        print(f"{'total':<18} {'':>9} {'':>7} {sum(c['rows'] for c in doc['components']):>8,} {total:>12,}")
        for c in doc["components"]:
            print()
            cache = open_component(path, doc, c["name"])
            _print_cache(cache, args.rows, args.chars, decoder_for(cache, output=manifest_dir))
        return 0
    raise DatapipeError(f"{path}: neither a token cache ({LEDGER}) nor a mixture output ({MANIFEST})")


def _print_cluster(path: str, doc_id: str, chars: int) -> int:
    from datapipe.report.clusters import cluster_of, kept_text

    kept, removed = cluster_of(path, doc_id)
    print(f"cluster of {kept}: {len(removed) + 1} copies, {len(removed)} removed")
    text = kept_text(path, kept)
    print(f"  kept     {kept}: {_shorten(text, chars) if text is not None else '(not among the kept parts)'}")
    for r in removed:
        print(f"  removed  {r['id']} {r['url']} [{r['reason']}, jaccard {r['jaccard']:.4g}] ({r['ref']})")
    return 0


def cmd_export_clusters(args: argparse.Namespace) -> int:
    from datapipe.report.clusters import export_edges, export_lines

    stage = args.stage.rstrip("/")
    lines = list(export_edges(stage) if args.edges else export_lines(stage))
    if args.out:
        fs.write_text_atomic(args.out, "".join(line + "\n" for line in lines))
        print(f"{len(lines)} {'edge' if args.edges else 'cluster'}(s) -> {args.out}")
    else:
        for line in lines:
            print(line)
    return 0


def cmd_browse(args: argparse.Namespace) -> int:
    from datapipe.browse.app import create_app, default_index_dir, listen, serve

    output = args.output.rstrip("/")
    index_dir = args.index_dir or default_index_dir(output)
    fs.check_writable(index_dir, "browser index")
    sock = listen(args.host, args.port)  # first: a taken port is said before the index is built
    serve(create_app(output, index_dir, args.run), sock)
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from datapipe.store.verify import verify_cache

    path = args.path.rstrip("/")
    if fs.exists(fs.join(path, LEDGER)):
        caches = [path]
    else:
        doc = read_manifest(path)
        base = path[: -len(MANIFEST) - 1] if path.endswith(MANIFEST) else path
        caches = [
            c["cache"] if fs.has_protocol(c["cache"]) else fs.join(base, c["cache"])
            for c in doc["components"]
        ]
    failed = 0
    for cache in caches:
        problems = verify_cache(cache)
        if problems:
            failed += 1
            for p in problems:
                print(f"BAD {p}")
        else:
            print(f"ok  {cache}")
    return 1 if failed else 0


def cmd_report(args: argparse.Namespace) -> int:
    from datapipe.report.collect import format_source_table, mixture_chains
    from datapipe.report.html import render_report

    target = args.html or fs.join(args.output, "report.html")
    fs.check_writable(fs.parent(target), "report")  # before the minutes of rendering, not after
    page = render_report(
        args.output, train_tokens=args.train_tokens, browse_url=args.browse_url, runs=args.run
    )
    fs.write_text_atomic(target, page)
    _, chains = mixture_chains(args.output)
    print(format_source_table({name: [r.counts for r in chain] for name, chain in chains.items()}))
    print(f"report: {target} ({len(page) / 1e6:.1f} MB, {page.count('<img')} plots)")
    return 0


def cmd_lineage(args: argparse.Namespace) -> int:
    from datapipe.report.lineage import lineage

    print("\n".join(lineage(args.path.rstrip("/"))))
    return 0


def cmd_classifier_train(args: argparse.Namespace) -> int:
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


def cmd_classifier_distill(args: argparse.Namespace) -> int:
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


def cmd_build(args: argparse.Namespace, rest: list[str]) -> int:
    """``datapipe build ARGS`` becomes the engines' launcher, ``python -m pipelines.build_mixture ARGS`` (exec, so
    the same process: signals, exit status and the output lease behave as when it is run directly), and the
    ``datapipe`` package itself imports no engine (Beam, datatrove)."""
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-m", "pipelines.build_mixture", *rest])
    return 2  # not reached: exec replaces this process


def _sub(sub, name: str, help: str, example: str, **kw) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with examples."""
    return sub.add_parser(
        name, help=help, epilog=example, formatter_class=argparse.RawDescriptionHelpFormatter, **kw
    )


def make_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="datapipe",
        description="Reproducible LM data pipelines.",
        epilog="example:\n  datapipe build --mixture dclm_phase3.yaml && datapipe report out/dclm_phase3",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--version", action="version", version=f"datapipe {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    p = _sub(
        sub,
        "inspect",
        "show a mixture output, a token cache, or a stage folder's documents (kept, or removed by a rule)",
        "examples:\n  datapipe inspect out/dclm_phase3\n  datapipe inspect out/dclm_phase3/wiki/tokenize-fd312c96 --rows 3\n"
        "  datapipe inspect out/dclm_phase3/dolmino_dclm/filter-525fad46 --removed-by filter/gopher_short_doc\n"
        "  datapipe inspect out/dclm_phase3 --json",
    )
    p.add_argument("path", help="a mixture output folder / mixture.json, a cache folder, or a stage folder")
    p.add_argument("--rows", type=int, default=3, help="rows or documents to show (default 3)")
    p.add_argument(
        "--chars", type=int, default=240, help="characters of each decoded row to show (default 240)"
    )
    p.add_argument("--removed-by", metavar="RULE", help="stage folder: documents removed by this reason")
    p.add_argument(
        "--cluster", metavar="ID", help="dedup stage folder: the duplicate cluster of this document (its id)"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    _sub(
        sub,
        "build",
        "build a mixture (python -m pipelines.build_mixture; see its --help)",
        "example:\n  datapipe build --mixture dclm_phase3.yaml --output out/dclm_phase3",
        add_help=False,
    )
    ec = _sub(
        sub,
        "export-clusters",
        "a dedup stage's duplicate clusters as JSON lines: each kept copy and the copies removed for it",
        "examples:\n  datapipe export-clusters out/dclm_phase3/dolmino_dclm/dedup-306c07fa\n"
        "  datapipe export-clusters out/dclm_phase3/dolmino_dclm/dedup-306c07fa --out /tmp/clusters.jsonl",
    )
    ec.add_argument("stage", help="a dedup stage folder")
    ec.add_argument("--out", help="write the lines there instead of to stdout")
    ec.add_argument(
        "--edges",
        action="store_true",
        help="the verified MinHash edges instead (a stage with keep_edges: true)",
    )
    v = _sub(
        sub,
        "verify",
        "check a token cache (or every cache of a mixture): offsets, counts, ids",
        "examples:\n  datapipe verify out/dclm_phase3\n  datapipe verify out/dclm_phase3/wiki/tokenize-fd312c96",
    )
    v.add_argument("path", help="a cache folder or a mixture output folder / mixture.json")
    r = _sub(
        sub,
        "report",
        "write one self-contained HTML report of a build (funnels, scores, lengths, duplicates, samples)",
        "examples:\n  datapipe report out/dclm_phase3\n  datapipe report out/dclm_phase3 --html /tmp/r.html "
        "--train-tokens 2000000000",
    )
    r.add_argument("output", help="a mixture output folder (with mixture.json)")
    r.add_argument("--html", help="where to write the report (default OUTPUT/report.html)")
    r.add_argument("--train-tokens", type=int, help="planned training length: planned tokens and epochs")
    r.add_argument(
        "--run", action="append", default=[], help="a training run folder outside OUTPUT/runs (repeatable)"
    )
    r.add_argument(
        "--browse-url",
        default=f"http://127.0.0.1:{BROWSE_PORT}",
        help="where the report's links find datapipe browse (default: its default address)",
    )
    b = _sub(
        sub,
        "browse",
        "a local web app over a build: funnels, documents by outcome and reason, decisions, clusters, runs",
        "examples:\n  datapipe browse out/dclm_phase3\n  datapipe browse out/dclm_phase3 --port 0 --run runs/llama",
    )
    b.add_argument("output", help="a mixture output folder (with mixture.json)")
    b.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    b.add_argument(
        "--port", type=int, default=BROWSE_PORT, help=f"port (default {BROWSE_PORT}; 0 picks a free one)"
    )
    b.add_argument("--index-dir", help="where the browser's index goes (default OUTPUT/.browse)")
    b.add_argument(
        "--run", action="append", default=[], help="a training run folder outside OUTPUT/runs (repeatable)"
    )
    lg = _sub(
        sub,
        "lineage",
        "print the chain from a training run or a build to its manifest, stages and input files",
        "examples:\n  datapipe lineage out/dclm_phase3/runs/tiny\n  datapipe lineage out/dclm_phase3",
    )
    lg.add_argument("path", help="a training run folder (run.json) or a mixture output folder")
    c = _sub(
        sub,
        "classifier",
        "quality classifiers: train a recipe, or distill a teacher into a student",
        "example:\n  datapipe classifier train fixture_quality --output out/classifiers",
    )
    csub = c.add_subparsers(dest="classifier_command", metavar="ACTION", required=True)
    t = _sub(
        csub,
        "train",
        "train a recipe (classifiers/NAME.yaml or a path); reuses a trained model",
        "example:\n  datapipe classifier train fixture_quality --output out/classifiers",
    )
    t.add_argument("recipe", help="a recipe name (fixture_quality) or path")
    t.add_argument(
        "--output", default="out/classifiers", help="where <name>-<hash8>/ goes (default out/classifiers)"
    )
    d = _sub(
        csub,
        "distill",
        "train a fast student (fastText or embedding) on a teacher's scores of a sample",
        "examples:\n  datapipe classifier distill --sample 'out/x/web/dedup-*/part-*.jsonl.zst' "
        "--teacher out/classifiers/edu --student fasttext --output out/classifiers/edu-student\n"
        "  datapipe classifier distill --sample docs.jsonl --labels llm_scores.jsonl --student embedding "
        "--output out/classifiers/llm-student",
    )
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
    from datapipe.train.cli import add_evaluate_parser, add_export_parser, add_train_parser

    add_train_parser(sub)
    add_export_parser(sub)
    add_evaluate_parser(sub)
    return ap


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    ap = make_parser()
    try:
        if argv[:1] == ["build"]:
            sys.exit(cmd_build(argparse.Namespace(), argv[1:]))
        args = ap.parse_args(argv)
        if args.command == "inspect":
            sys.exit(cmd_inspect(args))
        if args.command == "verify":
            sys.exit(cmd_verify(args))
        if args.command == "export-clusters":
            sys.exit(cmd_export_clusters(args))
        if args.command == "browse":
            sys.exit(cmd_browse(args))
        if args.command == "classifier":
            if args.classifier_command == "distill":
                sys.exit(cmd_classifier_distill(args))
            sys.exit(cmd_classifier_train(args))
        if args.command == "report":
            sys.exit(cmd_report(args))
        if args.command == "lineage":
            sys.exit(cmd_lineage(args))
        if args.command == "train":
            from datapipe.train.cli import cmd_train

            sys.exit(cmd_train(args))
        if args.command == "eval":
            from datapipe.train.cli import cmd_evaluate

            sys.exit(cmd_evaluate(args))
        if args.command == "export-hf":
            from datapipe.train.cli import cmd_export_hf

            sys.exit(cmd_export_hf(args))
        ap.print_help()
        sys.exit(0 if not argv else 2)
    except DatapipeError as e:
        failure = error_lines(e)
    except BrokenPipeError:  # `datapipe inspect ... | head`
        sys.stderr.close()
        sys.exit(0)
    print(failure, file=sys.stderr)
    # the error's traceback sat in a reference cycle with Arrow objects; left to the collector at shutdown (after
    # Arrow's thread pool is gone) they aborted the process ("terminate called", status 134): collect them now
    gc.collect()
    sys.exit(2)


if __name__ == "__main__":
    main()
