"""Build a mixture: every source through its stages, then the mixture manifest.

    python -m pipelines.build_mixture --mixture dclm_phase3.yaml [--output DIR] [--data-root URL]
        [--only SRC,...] [--dry-run] [Beam flags, e.g. --runner DataflowRunner --project P --region R
        --temp_location gs://...]

Every argument this script does not know is handed to Beam's ``PipelineOptions`` unchanged; with none, the
DirectRunner runs in this process (``--direct_running_mode=multi_processing --direct_num_workers=N`` uses N cores).
Each stage is its own pipeline whose output is materialized under ``<output>/<source>/<stage>-<hash8>/``; a stage
whose ``_SUCCESS`` exists is skipped, and a stage interrupted mid-way resumes from its committed shards.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import sys
import time

from datapipe.config import check_inputs, load_mixture
from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.io.readers import check_shard
from datapipe.lease import OutputLease
from datapipe.plan import SourcePlan, make_stage, plan_mixture
from datapipe.progress import StageProgress
from datapipe.quality.resolve import resolve_models
from datapipe.report.collect import format_source_table, format_token_plan, token_plan
from datapipe.report.lineage import write_experiment
from datapipe.stage import read_stage_json, remove_temporaries
from datapipe.store.cache import LEDGER
from datapipe.store.manifest import Component, read_manifest, write_manifest
from datapipe.tokenize.tokenizer import load_tokenizer

log = logging.getLogger("datapipe.build")


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    ap = argparse.ArgumentParser(
        prog="python -m pipelines.build_mixture",
        description=__doc__,
        epilog="examples:\n  python -m pipelines.build_mixture --mixture dclm_phase3.yaml\n"
        "  python -m pipelines.build_mixture --mixture my_mix.yaml --output gs://bucket/out --runner DataflowRunner "
        "--project P --region us-central1 --temp_location gs://bucket/tmp\n"
        "  python -m pipelines.build_mixture --mixture my_mix.yaml --dry-run",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--mixture", required=True, help="mixture YAML: a path, or a bundled name (dclm_phase3.yaml)"
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
    args, beam_args = parse_args(argv)
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
        return build(mixture, sources, plans, tokenizer, beam_args, args.train_tokens or mixture.train_tokens)


def build(
    mixture, sources, plans: list[SourcePlan], tokenizer, beam_args: list[str], train_tokens: int | None
) -> int:
    """Run every stage that is not done, then write the manifest (the caller holds the output's lease)."""

    from pipelines.beam_dedup import run_global
    from pipelines.beam_quiet import PipelineOptions  # Beam is imported only when something runs
    from pipelines.beam_stage import run_stage

    options = PipelineOptions(beam_args or ["--runner=DirectRunner"])
    fs.makedirs(mixture.output)
    for sp in plans:
        for st in sp.stages:
            label = f"  {sp.source.name:<18} {st.dirname:<18}"
            if st.done:
                counts = read_stage_json(st.out_dir)["counts"]
                print(f"{label} skipped (cached)   in {counts['docs_in']:>6}  kept {counts['docs_kept']:>6}")
                continue
            t0 = time.perf_counter()
            stage = make_stage(mixture, sp, st)
            remove_temporaries(st.out_dir)  # left by a run killed mid-write
            run_global(stage, list(st.shards), options)  # dedup stages: keys -> groups -> removal lists
            with StageProgress(label.rstrip(), st.out_dir, list(st.shards)):
                run_stage(stage, st, options)
            counts = read_stage_json(st.out_dir)["counts"]
            extra = f"  tokens {counts['tokens']:,}" if counts["tokens"] else ""
            print(
                f"{label} ran in {time.perf_counter() - t0:5.1f}s  in {counts['docs_in']:>6}  kept "
                f"{counts['docs_kept']:>6}  removed: {_fmt_removed(counts['removed'])}{extra}"
            )

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
    runner = options.get_all_options().get("runner") or "DirectRunner"
    write_experiment(mixture.output, str(runner), mixture.data_root, fs.local_path(mixture.file))
    print(f"manifest: {url}")
    print()
    print(format_token_plan(token_plan(read_manifest(url), train_tokens), train_tokens))
    return 0


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
    main()
