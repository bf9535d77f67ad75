"""The build launcher: flags -> a :class:`datapipe.orchestrate.run.BuildRequest` and an engine from the registry.

    datapipe build --mixture dclm_phase3.yaml [--output DIR] [--data-root URL] [--only SRC,...] [--dry-run]
        [--engine beam|datatrove] [the engine's flags]
    python -m pipelines.build_mixture ...        (the same launcher)

With ``--engine beam`` (the default) every argument the launcher does not know is handed to Beam's
``PipelineOptions`` unchanged (``--runner DataflowRunner --project P --region R --temp_location gs://...``); with
none, the DirectRunner runs in this process (``--direct_running_mode=multi_processing --direct_num_workers=N`` uses
N cores). ``--engine datatrove --executor local|slurm|ray`` runs the same stages on datatrove's executors.
Each stage's output is materialized under ``<output>/<source>/<stage>-<hash8>/``; a stage whose ``_SUCCESS`` exists
is skipped, and a stage interrupted mid-way resumes from its committed shards.

This module only parses; the engines come from :mod:`datapipe.orchestrate.engines` (entry points), the build itself
(checks, plan, manifest) is :func:`datapipe.orchestrate.run.run_build`. ``datapipe build`` calls :func:`main` in its own
process.
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys
from typing import TYPE_CHECKING

from datapipe.errors import DatapipeError, Interrupted, error_lines
from datapipe.orchestrate.engines import DEFAULT_ENGINE, EngineEntry, bundled_mixture_folders, registered

if TYPE_CHECKING:
    from datapipe.orchestrate.run import BuildRequest, Engine

PROG = "datapipe build"


def command(mixture: str, output: str, *extra: str) -> list[str]:
    """The launcher's command line for a mixture and an output folder (tests and benchmarks run it this way)."""
    return [sys.executable, "-m", "pipelines.build_mixture", "--mixture", mixture, "--output", output, *extra]


def parser(engines: dict[str, EngineEntry] | None = None, prog: str = PROG) -> argparse.ArgumentParser:
    return _parser(registered() if engines is None else engines, prog)[0]


def _parser(
    engines: dict[str, EngineEntry], prog: str
) -> tuple[argparse.ArgumentParser, dict[str, list[argparse.Action]]]:
    """The launcher's parser, and each engine's own flags (the actions its ``add_flags`` added)."""
    ap = argparse.ArgumentParser(
        prog=prog,
        description=__doc__,
        epilog=f"examples:\n  {prog} --mixture dclm_phase3.yaml\n"
        f"  {prog} --mixture my_mix.yaml --output gs://bucket/out --runner DataflowRunner "
        "--project P --region us-central1 --temp_location gs://bucket/tmp\n"
        f"  {prog} --mixture my_mix.yaml --dry-run\n"
        f"  {prog} --mixture dclm_phase3.yaml --engine datatrove --executor local --workers 2\n"
        f"  {prog} --mixture my_mix.yaml --engine datatrove --executor slurm --partition cpu",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--mixture", required=True, help="mixture YAML: a path, or a bundled name (dclm_phase3.yaml)"
    )
    ap.add_argument(
        "--engine",
        choices=tuple(engines),
        default=DEFAULT_ENGINE,
        help="; ".join(f"{name}: {e.summary}" for name, e in engines.items()),
    )
    ap.add_argument("--output", help="output folder or URL (default: the YAML's `output`, else out/<name>)")
    ap.add_argument("--data-root", help="where relative input paths point (default: the YAML's `data_root`)")
    ap.add_argument("--only", help="comma-separated source names to build (the manifest needs all of them)")
    ap.add_argument(
        "--dry-run", action="store_true", help="print the plan (which stages run, which are cached)"
    )
    ap.add_argument(
        "--train-tokens",
        type=int,
        help="planned training length for the summary's epochs per component (default: the YAML's train_tokens)",
    )
    ap.add_argument(
        "--wait-lease",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="when another build holds the output folder, wait this long for it (default: refuse at once)",
    )
    flags: dict[str, list[argparse.Action]] = {}
    for name, entry in engines.items():
        group = ap.add_argument_group(f"{name} engine (--engine {name})")
        entry.add_flags(group)
        flags[name] = list(group._group_actions)
    return ap, flags


def request(args: argparse.Namespace) -> BuildRequest:
    from datapipe.orchestrate.run import BuildRequest

    only = tuple(s.strip() for s in args.only.split(",") if s.strip()) if args.only else ()
    return BuildRequest(
        mixture=args.mixture,
        output=args.output,
        data_root=args.data_root,
        only=only,
        dry_run=args.dry_run,
        train_tokens=args.train_tokens,
        wait_lease=args.wait_lease,
        search=bundled_mixture_folders(),
    )


def make_engine(argv: list[str] | None, prog: str = PROG) -> tuple[argparse.Namespace, Engine]:
    """The parsed flags and the engine they ask for. A flag of another engine than the chosen one is refused (it
    would be silently ignored), before any work."""
    engines = registered()
    ap, flags = _parser(engines, prog)
    args, extra = ap.parse_known_args(argv)
    for other, actions in flags.items():
        if other == args.engine:
            continue
        for action in actions:
            if getattr(args, action.dest) != action.default:
                raise DatapipeError(
                    f"{action.option_strings[0]} is a flag of --engine {other}; this build runs on --engine {args.engine}"
                )
    known = [s for s in ap._option_string_actions if s.startswith("--")]
    return args, engines[args.engine].make(args, extra, known)


def build_mixture(mixture: str, output: str | None = None, *flags: str) -> int:
    """Build a mixture in this process, as ``datapipe build --mixture MIXTURE [--output OUTPUT] FLAGS`` does, and
    return its status (0: built; a :class:`DatapipeError` is raised as it is, for the caller to show)."""
    argv = ["--mixture", mixture, *(["--output", output] if output else []), *flags]
    return run(argv)


def run(argv: list[str] | None = None, prog: str = PROG, own_process: bool = False) -> int:
    """Build as the flags say; ``own_process``: this process exists for the build (:func:`main`), so what its
    start-up imports may be frozen out of the garbage collector's reach."""
    # Flags are checked before any work, and the engine starts before the build's own modules load: the Beam
    # engine's warm worker parent then imports the workers' stack while this process imports the rest. Those
    # imports (Beam's, the build's) make many objects and almost no garbage, and the workers wait for them: with
    # the collector off they take 0.65 s instead of 0.83 (2026-12-05), and frozen after them, the collections
    # while the graph is built do not walk them again. A build run inside another program (build_mixture) leaves
    # that program's collector as it found it.
    if own_process:
        gc.disable()
    try:
        args, engine = make_engine(argv, prog)
        from datapipe.orchestrate.run import run_build
    finally:
        if own_process:
            gc.freeze()
            gc.enable()
    return run_build(request(args), engine)


def main(argv: list[str] | None = None, prog: str = PROG) -> None:
    """Run a build; exit with its status. Errors a user can fix are one line (status 2), Ctrl-C is one line (130)."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        sys.exit(run(argv, prog, own_process=True))
    except DatapipeError as e:
        print(error_lines(e), file=sys.stderr)
        sys.exit(2)
    except Interrupted as e:  # Ctrl-C: one line, the shell's status for SIGINT
        print(e, file=sys.stderr)
        sys.exit(130)
    except KeyboardInterrupt:
        print("interrupted before any stage ran; nothing to resume", file=sys.stderr)
        sys.exit(130)
    except BrokenPipeError:  # output piped into `head`
        sys.stderr.close()
        sys.exit(0)
