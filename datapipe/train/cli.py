"""``datapipe train``: arguments, overrides and process set-up (fake CPU devices, ``jax.distributed``)."""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil

from datapipe.io import fs
from datapipe.train.lock import RunLock

EXAMPLE = """\
examples:
  datapipe train --mixture out/dclm_phase3/mixture.json --model tiny --steps 20 seq_len=256
  datapipe train --mixture out/mix --model 150m --steps 5000 --config train.yaml optimizer.lr.lr=6e-4 mesh.fsdp=-1
  datapipe train ... --coordinator host0:1234 --num-processes 4 --process-id $RANK   # several hosts
  datapipe train --mixture out/mix --init-from hf:/models/Llama-3.2-1B --steps 1000   # continued pretraining
"""
EXPORT_EXAMPLE = """\
examples:
  datapipe export-hf out/dclm_phase3/runs/tiny --out /tmp/tiny-hf
  datapipe export-hf runs/mix-1b-1a2b3c4d --step 5000 --out /models/mix-1b --dtype bfloat16
"""


def add_train_parser(sub) -> argparse.ArgumentParser:
    t = sub.add_parser(
        "train",
        help="train the bundled JAX model on a mixture manifest (resumes from the latest checkpoint)",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    t.add_argument("--mixture", help="mixture.json (or its folder) from build_mixture")
    t.add_argument("--model", help="preset: tiny, 150m, 850m, 1b, marin_8b")
    t.add_argument("--steps", type=int, help="total steps of the run")
    t.add_argument("--config", help="a train YAML (schemas/train.schema.json); flags and overrides win")
    t.add_argument(
        "--run-dir",
        help="checkpoints, metrics.jsonl, run.json (default runs/<mixture>-<model>-<manifest sha256 8>)",
    )
    t.add_argument(
        "--fresh",
        action="store_true",
        help="start the run anew in its folder: its checkpoints and metrics are deleted first",
    )
    t.add_argument("--until", type=int, help="stop after this step (checkpointed), to continue later")
    t.add_argument("--devices", type=int, help="fake this many CPU devices (tests, laptops)")
    t.add_argument("--peak-tflops", type=float, help="per-device peak for MFU (default: spec or measured)")
    t.add_argument("--coordinator", help="host:port of process 0, for a multi-process run")
    t.add_argument("--num-processes", type=int)
    t.add_argument("--process-id", type=int)
    t.add_argument(
        "--distributed",
        action="store_true",
        help="jax.distributed.initialize() from the environment (TPU, Slurm)",
    )
    t.add_argument(
        "--init-from",
        metavar="SOURCE",
        help="start a new run from these weights (new optimizer, step 0): hf:DIR (a Hugging Face Llama folder, "
        "whose config.json gives the model's shape) or run:DIR[@STEP] (another run's checkpoint)",
    )
    t.add_argument(
        "overrides", nargs="*", help="dotted.key=value (YAML values): optimizer.lr.lr=1e-3 mesh.model=2"
    )
    return t


def _checkpoint_parser(sub, name: str, help: str, epilog: str) -> argparse.ArgumentParser:
    """A command that reads one checkpoint of a run: the run folder and ``--step``."""
    p = sub.add_parser(name, help=help, epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", help="a training run folder (with run.json and checkpoints/)")
    p.add_argument("--step", type=int, help="the checkpoint's step (default: the latest)")
    return p


def add_export_parser(sub) -> argparse.ArgumentParser:
    e = _checkpoint_parser(
        sub,
        "export-hf",
        "write a run's checkpoint as a Hugging Face Llama folder (config, safetensors, tokenizer)",
        EXPORT_EXAMPLE,
    )
    e.add_argument(
        "--out", required=True, help="the folder to write (AutoModelForCausalLM.from_pretrained(OUT))"
    )
    e.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"), help="weights' dtype")
    e.add_argument(
        "--max-shard-size", default="5GB", help="split model.safetensors above this size (default 5GB)"
    )
    return e


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be >= 1")
    return value


def add_evaluate_parser(sub) -> argparse.ArgumentParser:
    e = _checkpoint_parser(
        sub,
        "eval",
        "loss, perplexity and bits per byte of a run's model on each component's held-out rows",
        "examples:\n  datapipe eval out/dclm_phase3/runs/tiny\n"
        "  datapipe eval runs/mix-1b-1a2b3c4d --step 5000 --components wiki,web\n",
    )
    e.add_argument("--components", help="comma-separated components (default: all)")
    e.add_argument("--batch", type=_positive, default=8, help="rows per forward pass (default 8)")
    e.add_argument("--json", action="store_true", help="print the record as JSON")
    e.add_argument(
        "--force",
        action="store_true",
        help="evaluate even when eval.jsonl holds this evaluation (same checkpoint, manifest and options), "
        "which is otherwise printed again with `eval: skipped (cached)`",
    )
    return e


def cmd_evaluate(args: argparse.Namespace) -> int:
    import json
    import sys

    from datapipe.train.evaluate import evaluate_or_reuse, format_record

    components = [c.strip() for c in args.components.split(",") if c.strip()] if args.components else None
    record, cached = evaluate_or_reuse(args.run_dir, args.step, components, args.batch, args.force)
    if cached:  # on stderr under --json: stdout stays one JSON record
        print(f"eval: skipped (cached): {cached}", file=sys.stderr if args.json else sys.stdout, flush=True)
    print(json.dumps(record, sort_keys=True) if args.json else format_record(record))
    return 0


def cmd_export_hf(args: argparse.Namespace) -> int:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")  # the gather happens on the host
    from datapipe.train.export import export_run
    from datapipe.train.hf import parse_size

    done = export_run(args.run_dir, args.out, args.step, args.dtype, parse_size(args.max_shard_size))
    print(
        f"exported step {done['step']} of {args.run_dir} to {args.out} ({args.dtype}, {', '.join(done['files'])}); "
        f"load it with AutoModelForCausalLM.from_pretrained({args.out!r})"
    )
    return 0


def default_run_dir(mixture: str, model: str) -> str:
    """``<build>/runs/<model>-<8 hex of the manifest's sha256>``, beside the manifest: where ``datapipe report`` and
    ``datapipe browse`` look for a build's runs; two builds (or two manifests of one folder) never share a run
    folder, and the same manifest and model resume in theirs."""
    from datapipe.train.trainer import manifest_url

    url = manifest_url(mixture or "out/x")
    digest = hashlib.sha256(fs.read_bytes(url)).hexdigest()[:8] if fs.exists(url) else "none"
    build = fs.parent(url) if fs.has_protocol(url) else os.path.dirname(os.path.abspath(url))
    return fs.join(build, "runs", f"{model}-{digest}")


def cmd_train(args: argparse.Namespace) -> int:
    if args.devices:
        os.environ["XLA_FLAGS"] = (
            os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={args.devices}"
        ).strip()
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    if args.coordinator:
        jax.distributed.initialize(args.coordinator, args.num_processes, args.process_id)
    elif args.distributed:
        jax.distributed.initialize()

    from datapipe.train.config import load_train_config, parse_overrides
    from datapipe.train.trainer import Trainer

    over = parse_overrides(args.overrides)
    if args.init_from:
        over["init_from"] = args.init_from
    for key, value in (("mixture", args.mixture), ("model", args.model), ("steps", args.steps)):
        if value is not None:
            over[key] = value
    if args.run_dir:
        over["run_dir"] = args.run_dir
    elif "run_dir" not in over and args.config is None:
        model = over.get("model") or (args.init_from or "model").split(":", 1)[-1].rstrip("/").split("/")[-1]
        over["run_dir"] = default_run_dir(str(over.get("mixture", "")), str(model))
    cfg = load_train_config(args.config, over)
    lock: RunLock | None = None
    main = jax.process_index() == 0
    if main:
        print(f"run folder: {cfg.run_dir}", flush=True)
        if cfg.mixture:  # a mistyped manifest is one line, and leaves no empty run folder behind
            from datapipe.store.manifest import load_manifest

            load_manifest(cfg.mixture)
        fs.check_writable(cfg.run_dir, "run folder")
        if fs.is_local(cfg.run_dir):  # one trainer per run folder (before --fresh deletes anything)
            lock = RunLock(fs.local_path(cfg.run_dir))
            lock.acquire()
    try:
        if main and args.fresh:
            for old in ("checkpoints", "metrics.jsonl", "run.json"):
                path = os.path.join(cfg.run_dir, old)
                if os.path.isdir(path):
                    shutil.rmtree(path)
                elif os.path.exists(path):
                    os.remove(path)
            if cfg.init_from:  # the shape came from the deleted run.json: take it from the source now
                cfg = load_train_config(args.config, over)
        result = Trainer(cfg, peak_tflops=args.peak_tflops).train(until=args.until)
        if args.coordinator or args.distributed:
            jax.distributed.shutdown()
    finally:
        if lock is not None:
            lock.release()
    if result.status == "interrupted":
        return 130  # a checkpoint was written: the same command resumes
    return 0 if result.status in ("finished", "stopped", "preempted") else 1
