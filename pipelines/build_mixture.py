"""Build a mixture: every source through its stages, then the mixture manifest.

    python -m pipelines.build_mixture --mixture dclm_phase3.yaml [--output DIR] [--data-root URL]
        [--only SRC,...] [--dry-run] [Beam flags, e.g. --runner DataflowRunner --project P --region R
        --temp_location gs://...]

Every argument this script does not know is handed to Beam's ``PipelineOptions`` unchanged; with none, the
DirectRunner runs in this process (``--direct_running_mode=multi_processing --direct_num_workers=N`` uses N cores).
Each stage's output is materialized under ``<output>/<source>/<stage>-<hash8>/``; a stage whose ``_SUCCESS`` exists
is skipped, and a stage interrupted mid-way resumes from its committed shards. On Beam the whole build is one
pipeline: every source's stages in order, a stage's global phase (dedup groups, a quality quantile) between the
stage before it and its own shards.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import sys
from dataclasses import fields

from datapipe.config import check_inputs, load_mixture
from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.io.readers import check_shard
from datapipe.lease import OutputLease
from datapipe.plan import SourcePlan, StagePlan, make_stage, plan_mixture
from datapipe.progress import WaveProgress
from datapipe.quality.resolve import resolve_models
from datapipe.report.collect import format_source_table, format_token_plan, token_plan
from datapipe.report.lineage import write_experiment
from datapipe.stage import Stage, TwoPhaseStage, is_done, read_stage_json, remove_temporaries
from datapipe.store.cache import LEDGER
from datapipe.store.manifest import Component, read_manifest, write_manifest
from datapipe.tokenize.tokenizer import load_tokenizer
from pipelines.datatrove_engine import EXECUTORS, DatatroveOptions

log = logging.getLogger("datapipe.build")


def command(mixture: str, output: str, *extra: str) -> list[str]:
    """This launcher's command line for a mixture and an output folder (tests and benchmarks run it this way)."""
    return [sys.executable, "-m", "pipelines.build_mixture", "--mixture", mixture, "--output", output, *extra]


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
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
        help="beam (default; runner chosen by Beam flags) or datatrove (--executor local|slurm)",
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
    dt.add_argument("--cpus-per-task", type=int, default=1, help="slurm: CPUs per task (default 1)")
    dt.add_argument("--mem-per-cpu-gb", type=int, default=2, help="slurm: memory per CPU in GB (default 2)")
    return ap.parse_known_args(argv)


def _fmt_removed(removed: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(removed.items())) or "none"


def print_plan(plans: list[SourcePlan], output: str) -> None:
    print(f"plan for {output}:")
    for sp in plans:
        for st in sp.stages:
            status = "cached" if st.done else "would run"
            print(f"  {sp.source.name:<18} {st.dirname:<18} {status:<10} {len(st.shards)} shard(s)")


def run(argv: list[str] | None = None) -> int:
    args, extra = parse_args(argv)
    engine = make_engine(args, extra)  # flags are checked before any work
    only = [s.strip() for s in args.only.split(",") if s.strip()] if args.only else None
    mixture = load_mixture(args.mixture, data_root=args.data_root, output=args.output)
    sources = mixture.select(only)
    files = check_inputs(mixture, sources)
    for src in sources:  # a file that is not its format at all stops the build here, with one line naming it
        for url in files[src.name]:
            check_shard(url, src.format, src.text_field)
    tokenizer = load_tokenizer(mixture.tokenizer)
    print(f"mixture {mixture.name}: {len(sources)} source(s) -> {mixture.output}")
    with OutputLease(mixture.output, wait_s=args.wait_lease):  # one build per output folder at a time
        sources = resolve_models(mixture, sources)  # classifiers: trained if needed, checked before any work
        plans = plan_mixture(mixture, sources, files, tokenizer.identity)
        if args.dry_run:
            print_plan(plans, mixture.output)
            return 0
        return build(mixture, sources, plans, tokenizer, engine, args.train_tokens or mixture.train_tokens)


def build(
    mixture, sources, plans: list[SourcePlan], tokenizer, engine: Engine, train_tokens: int | None
) -> int:
    """Run every stage that is not done on the chosen engine, then write the manifest (the caller holds the
    output's lease)."""
    fs.makedirs(mixture.output)
    for sp in plans:
        for st in sp.stages:
            if st.done:
                counts = read_stage_json(st.out_dir)["counts"]
                print(
                    f"{_label(sp, st)} skipped (cached)   in {counts['docs_in']:>6}  kept {counts['docs_kept']:>6}"
                )
    engine.run(mixture, plans)

    print_summary(plans)
    if len(sources) < len(mixture.sources):
        print("manifest not written: --only built a subset of the sources")
        return 0
    components = []
    for sp in plans:
        tok = sp.stage("tokenize")
        cache = read_stage_json(tok.out_dir)["cache"]
        ledger = hashlib.sha256(fs.read_bytes(fs.join(tok.out_dir, LEDGER))).hexdigest()
        components.append(
            Component(
                sp.source.name,
                sp.source.weight,
                f"{sp.source.name}/{tok.dirname}",
                cache["rows"],
                cache["tokens"],
                ledger,
            )
        )
    extra = {"weights_unit": mixture.weights_unit, "source_mixture_file": fs.local_path(mixture.file)}
    if mixture.schedule:
        extra["schedule"] = list(mixture.schedule)
    if mixture.train_tokens:
        extra["train_tokens"] = mixture.train_tokens
    url = write_manifest(
        mixture.output, mixture.name, mixture.seed, mixture.seq_len, tokenizer.identity, components, extra
    )
    write_experiment(mixture.output, engine.runner, mixture.data_root, fs.local_path(mixture.file))
    print(f"manifest: {url}")
    print()
    print(format_token_plan(token_plan(read_manifest(url), train_tokens), train_tokens))
    return 0


def _label(sp: SourcePlan, st: StagePlan) -> str:
    return f"  {sp.source.name:<18} {st.dirname:<18}"


def report_stage(sp: SourcePlan, st: StagePlan, seconds: float) -> None:
    """The line a finished stage prints: time, documents in and kept, removals by reason, tokens."""
    counts = read_stage_json(st.out_dir)["counts"]
    extra = f"  tokens {counts['tokens']:,}" if counts["tokens"] else ""
    print(
        f"{_label(sp, st)} ran in {seconds:5.1f}s  in {counts['docs_in']:>6}  kept "
        f"{counts['docs_kept']:>6}  removed: {_fmt_removed(counts['removed'])}{extra}",
        flush=True,
    )


class BeamEngine:
    """The whole build as one pipeline: every source's remaining stages chained in order, a stage's global phase
    (dedup groups, a quality quantile) inside it between the stage before and the stage's own shards. When a dedup
    stage's components need more large-star/small-star rounds than it ran, that stage and those after it do not
    finish; the engine runs what is left again with twice the rounds (a wave)."""

    def __init__(self, beam_args: list[str]) -> None:
        from pipelines.beam_quiet import PipelineOptions  # Beam is imported only when something runs

        self.options = PipelineOptions(beam_args or ["--runner=DirectRunner"])
        self.runner = str(self.options.get_all_options().get("runner") or "DirectRunner")

    def run(self, mixture, plans: list[SourcePlan]) -> None:
        from pipelines.beam_dedup import CC_ROUNDS, next_cc_rounds

        rounds: dict[str, int] = {}
        pending = [(sp, [st for st in sp.stages if not st.done]) for sp in plans]
        while pending := [(sp, q) for sp, q in pending if q]:
            chains = [(sp, [(make_stage(mixture, sp, st), st) for st in q]) for sp, q in pending]
            self.run_wave(chains, rounds)
            pending = [(sp, [st for st in q if not is_done(st.out_dir)]) for sp, q in pending]
            for sp, chain in chains:
                for stage, st in chain:
                    if not is_done(st.out_dir):  # a global phase that did not converge stopped its chain here
                        if not isinstance(stage, TwoPhaseStage) or stage.global_done():
                            raise DatapipeError(
                                f"{st.out_dir}: the pipeline ended without finishing this stage"
                            )
                        rounds[st.out_dir] = next_cc_rounds(stage, rounds.get(st.out_dir, CC_ROUNDS))
                        print(
                            f"{_label(sp, st)} components need more rounds: again with {rounds[st.out_dir]}"
                        )
                        break

    def run_wave(
        self, chains: list[tuple[SourcePlan, list[tuple[Stage, StagePlan]]]], rounds: dict[str, int]
    ) -> None:
        """One pipeline for all the chains; a line per stage as it finishes (its time: since the stage before it
        finished, its global phase included)."""
        from pipelines.beam_stage import run_chains

        watched: list[tuple[SourcePlan, StagePlan]] = []
        for sp, chain in chains:
            for stage, st in chain:
                remove_temporaries(st.out_dir)  # left by a run killed mid-write
                if isinstance(stage, TwoPhaseStage):
                    stage.reset_global()
                watched.append((sp, st))

        def done(i: int, seconds: float) -> None:
            sp, st = watched[i]
            report_stage(sp, st, seconds)

        labels = [(_label(sp, st).strip(), st.out_dir, list(st.shards)) for sp, st in watched]
        with WaveProgress(labels, done):
            run_chains([chain for _, chain in chains], self.options, rounds)


class DatatroveEngine:
    """``--engine datatrove``: the same stages on datatrove's local or Slurm executor."""

    def __init__(self, opts: DatatroveOptions) -> None:
        self.opts = opts
        self.runner = f"datatrove-{opts.executor}"

    def run(self, mixture, plans: list[SourcePlan]) -> None:
        from pipelines.datatrove_engine import run_datatrove  # datatrove is imported only when something runs

        run_datatrove(mixture, plans, self.opts, report_stage)


Engine = BeamEngine | DatatroveEngine


def make_engine(args: argparse.Namespace, extra: list[str]) -> Engine:
    """The engine the flags ask for; with datatrove, a flag neither knows is an error (not a Beam option)."""
    if args.engine == "beam":
        return BeamEngine(extra)
    if extra:
        raise DatapipeError(f"unknown argument(s) with --engine datatrove: {' '.join(extra)}")
    flags = vars(args)  # the datatrove flags are named as DatatroveOptions' fields
    names = [f.name for f in fields(DatatroveOptions)]
    return DatatroveEngine(DatatroveOptions(**{n: flags[n] for n in names if n in flags}))


def print_summary(plans: list[SourcePlan]) -> None:
    print()
    print(
        format_source_table(
            {sp.source.name: [read_stage_json(st.out_dir)["counts"] for st in sp.stages] for sp in plans}
        )
    )


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        sys.exit(run(argv))
    except DatapipeError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except BrokenPipeError:  # output piped into `head`
        sys.stderr.close()
        sys.exit(0)


if __name__ == "__main__":
    from pipelines.quick_exit import run_then_exit

    run_then_exit(main)
