"""The ``datapipe`` command.

    datapipe build ...                             build a mixture (the launcher; see its --help)
    datapipe inspect PATH [--rows N] [--chars N]   a token cache or a mixture output folder: rows, tokens,
                                                   tokenizer, and the first rows decoded
    datapipe export-clusters STAGE                 a dedup stage's clusters as JSON lines
    datapipe verify PATH                           check caches: monotone offsets, counts, token ids
    datapipe report OUT [--html F]                 one HTML file: funnels, score and length plots, samples
    datapipe browse OUT [--port N]                 a local web app: documents, decisions, clusters, runs
    datapipe lineage RUN_OR_OUTPUT                 run -> manifest -> stages -> input files
    datapipe classifier train RECIPE [--output U]  train a quality classifier (reuses one already trained)
    datapipe classifier distill --sample S ...     a fast student of a teacher's (or an LLM's) scores
    datapipe train --mixture M --model P --steps N train the bundled JAX model (resumes automatically)
    datapipe export-hf RUN --out DIR               a run's checkpoint as a Hugging Face Llama folder
    datapipe eval RUN                              held-out loss per component

Each command is a module of this package (:mod:`datapipe.cli.command` says what it provides); :data:`COMMANDS`
is the registry. Errors a user can fix print one line (``error: ...``) and exit 2.
"""

from __future__ import annotations

import argparse
import gc
import sys
from types import ModuleType

from datapipe import __version__
from datapipe.cli import browse, build, classifier, clusters, inspect, lineage, report, train, verify
from datapipe.errors import DatapipeError, error_lines

# the commands in --help order (train adds train, export-hf and eval)
COMMANDS: tuple[ModuleType, ...] = (
    build,
    inspect,
    clusters,
    verify,
    report,
    browse,
    lineage,
    classifier,
    train,
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
    for command in COMMANDS:
        command.add_parser(sub)
    return ap


def main(argv: list[str] | None = None) -> None:
    """Run a command and exit with its status. From the command line (``argv`` None), the process ends without
    tearing the interpreter down (:mod:`datapipe.runtime.quick_exit`), as a build's launcher does: a build is spared
    freeing its heaps, and a command that read Parquet is spared Arrow's thread pool being destroyed under a
    running thread at teardown, which aborted ``inspect --cluster`` with "terminate called without an active
    exception" (status 134) in 1 run of 50 on a busy machine (2026-12-05; apache/arrow#34314)."""
    if argv is None:
        from datapipe.runtime.quick_exit import run_then_exit

        run_then_exit(lambda: _run(sys.argv[1:]))
    _run(argv)


def _run(argv: list[str]) -> None:
    raw = {c.NAME: c for c in COMMANDS if hasattr(c, "run_raw")}
    if argv[:1] and argv[0] in raw:
        sys.exit(raw[argv[0]].run_raw(argv[1:]))
    ap = make_parser()
    try:
        args = ap.parse_args(argv)
        if getattr(args, "handler", None) is None:
            ap.print_help()
            sys.exit(0 if not argv else 2)
        sys.exit(args.handler(args))
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
