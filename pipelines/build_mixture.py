"""Build a mixture: every source through its stages, then the mixture manifest (the launcher: flags -> engine).

    python -m pipelines.build_mixture --mixture dclm_phase3.yaml [--output DIR] [--data-root URL]
        [--only SRC,...] [--dry-run] [Beam flags, e.g. --runner DataflowRunner --project P --region R
        --temp_location gs://...]

Every argument this script does not know is handed to Beam's ``PipelineOptions`` unchanged; with none, the
DirectRunner runs in this process (``--direct_running_mode=multi_processing --direct_num_workers=N`` uses N cores).
Each stage's output is materialized under ``<output>/<source>/<stage>-<hash8>/``; a stage whose ``_SUCCESS`` exists
is skipped, and a stage interrupted mid-way resumes from its committed shards. On Beam the whole build is one
pipeline: every source's stages in order, a stage's global phase (dedup groups, a quality quantile) between the
stage before it and its own shards.

This file only turns flags into a :class:`datapipe.build.run.BuildRequest` and an engine; the build itself (checks,
plan, manifest) is ``datapipe.build.run``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import fields

from datapipe.build.run import BuildRequest, Engine, Interrupted, run_build
from datapipe.errors import DatapipeError, error_lines
from pipelines.datatrove.engine import EXECUTORS, DatatroveEngine, DatatroveOptions
from pipelines.mixtures import BUNDLED

log = logging.getLogger("datapipe.build")


def command(mixture: str, output: str, *extra: str) -> list[str]:
    """This launcher's command line for a mixture and an output folder (tests and benchmarks run it this way)."""
    return [sys.executable, "-m", "pipelines.build_mixture", "--mixture", mixture, "--output", output, *extra]


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    ap = parser()
    return ap.parse_known_args(argv)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m pipelines.build_mixture",
        description=__doc__,
        epilog="examples:\n  python -m pipelines.build_mixture --mixture dclm_phase3.yaml\n"
        "  python -m pipelines.build_mixture --mixture my_mix.yaml --output gs://bucket/out --runner DataflowRunner "
        "--project P --region us-central1 --temp_location gs://bucket/tmp\n"
        "  python -m pipelines.build_mixture --mixture my_mix.yaml --dry-run\n"
        "  python -m pipelines.build_mixture --mixture dclm_phase3.yaml --engine datatrove --executor local --workers 2\n"
        "  python -m pipelines.build_mixture --mixture my_mix.yaml --engine datatrove --executor slurm --partition cpu",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--mixture", required=True, help="mixture YAML: a path, or a bundled name (dclm_phase3.yaml)"
    )
    ap.add_argument(
        "--engine",
        choices=("beam", "datatrove"),
        default="beam",
        help="beam (default; runner chosen by Beam flags) or datatrove (--executor local|slurm|ray)",
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
    bm = ap.add_argument_group("Beam engine (--engine beam)")
    bm.add_argument(
        "--global-shuffle",
        choices=("auto", "files", "beam"),
        default="auto",
        help="how the dedup and paragraph global phases group keys: through partitioned files on disk (bounded "
        "memory) or Beam's GroupByKey; auto (default): files on the DirectRunner, which holds a GroupByKey in "
        "memory, else beam",
    )
    dt = ap.add_argument_group("datatrove engine (--engine datatrove)")
    dt.add_argument(
        "--executor", choices=EXECUTORS, default="local", help="datatrove executor (default local)"
    )
    dt.add_argument("--tasks", type=int, help="tasks per stage (default: one per shard)")
    dt.add_argument("--workers", type=int, help="local: tasks at once (default: the CPU count)")
    dt.add_argument("--buckets", type=int, default=4, help="tasks of the dedup bucket phases (default 4)")
    dt.add_argument("--partition", help="slurm: partition to submit to")
    dt.add_argument("--qos", help="slurm: quality of service (default: the partition's)")
    dt.add_argument("--time", default="01:00:00", help="slurm: time limit per job (default 01:00:00)")
    dt.add_argument("--cpus-per-task", type=int, default=1, help="slurm, ray: CPUs per task (default 1)")
    dt.add_argument(
        "--mem-per-cpu-gb", type=int, default=2, help="slurm, ray: memory per CPU in GB (default 2)"
    )
    dt.add_argument(
        "--ray-address",
        help="ray: an existing cluster's head (HOST:PORT, or auto); default: a cluster of this machine, for the build",
    )
    return ap


OWN_FLAGS = [s for s in parser()._option_string_actions if s.startswith("--")]


def request(args: argparse.Namespace) -> BuildRequest:
    only = tuple(s.strip() for s in args.only.split(",") if s.strip()) if args.only else ()
    return BuildRequest(
        mixture=args.mixture,
        output=args.output,
        data_root=args.data_root,
        only=only,
        dry_run=args.dry_run,
        train_tokens=args.train_tokens,
        wait_lease=args.wait_lease,
        search=(BUNDLED,),
    )


def run(argv: list[str] | None = None) -> int:
    args, extra = parse_args(argv)
    engine = make_engine(args, extra)  # flags are checked before any work
    return run_build(request(args), engine)


def make_engine(args: argparse.Namespace, extra: list[str]) -> Engine:
    """The engine the flags ask for; with datatrove, a flag neither knows is an error (not a Beam option)."""
    if args.engine == "beam":
        from pipelines.beam.engine import BeamEngine, check_beam_flags  # Beam is imported only when it runs

        check_beam_flags(extra, OWN_FLAGS)
        return BeamEngine(extra, args.global_shuffle)
    if args.global_shuffle != "auto":
        raise DatapipeError(
            "--global-shuffle is a Beam engine flag: the datatrove engine always shuffles through files"
        )
    if extra:
        raise DatapipeError(f"unknown argument(s) with --engine datatrove: {' '.join(extra)}")
    flags = vars(args)  # the datatrove flags are named as DatatroveOptions' fields
    names = [f.name for f in fields(DatatroveOptions)]
    return DatatroveEngine(DatatroveOptions(**{n: flags[n] for n in names if n in flags}))


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        sys.exit(run(argv))
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


if __name__ == "__main__":
    from pipelines.quick_exit import run_then_exit

    run_then_exit(main)
