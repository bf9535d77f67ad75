"""Trainer throughput and model FLOPs utilization for a preset on a mesh.

A mixture of real GPT-2 tokens (``--docs`` documents, three components) is written to local disk; the bundled
trainer runs ``--steps`` steps of ``--preset`` at ``--seq-len`` with ``--batch`` sequences per step on a
(data, fsdp, model) mesh, streaming through the real loader. Compilation and the first ``--warmup`` steps are not
timed. MFU = model FLOPs per token (every matmul incl. the LM head, attention at full length, x3 for the backward)
x tokens/s / (peak per device x devices). The peak is the vendor's dense bf16 figure for known accelerators; on a
CPU it is measured (a bf16 matmul), and ``--peak-tflops`` overrides it.

    .venv/bin/python benchmarks/train_mfu.py --preset tiny --devices 8 --mesh 2,2,2            # CPU
    python benchmarks/train_mfu.py --preset 1b --seq-len 4096 --batch 16 --mesh 1,-1,1 --steps 20  # one H200

Last line: ``bench: train preset=P devices=D tokens_per_s=X mfu=Y``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--devices", type=int, help="fake CPU devices")
    ap.add_argument("--mesh", default="-1,1,1", help="data,fsdp,model sizes (-1: the rest)")
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--microbatch", type=int)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--docs", type=int, default=3000)
    ap.add_argument("--remat", default=None, help="none | full | dots | dots_no_batch")
    ap.add_argument("--peak-tflops", type=float)
    args = ap.parse_args()
    if args.devices:
        os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.devices}"
        os.environ["JAX_PLATFORMS"] = "cpu"
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "benchmarks"))
    import jax
    from corpus import token_mixture

    from datapipe.train.config import load_train_config
    from datapipe.train.trainer import Trainer

    data, fsdp, model = (int(x) for x in args.mesh.split(","))
    with tempfile.TemporaryDirectory() as work:
        manifest, total = token_mixture(
            work, args.docs, args.seq_len, {"web": 0.6, "code": 0.3, "books": 0.1}
        )
        model_spec = {"preset": args.preset, **({"remat": args.remat} if args.remat else {})}
        cfg = load_train_config(
            None,
            {
                "mixture": manifest,
                "model": model_spec,
                "steps": args.warmup + args.steps,
                "run_dir": os.path.join(work, "run"),
                "seq_len": args.seq_len,
                "global_batch": args.batch,
                "microbatch": args.microbatch,
                "mesh": {"data": data, "fsdp": fsdp, "model": model},
                "checkpoint": {"every": 0, "at_exit": False},
                "log_every": 1,
            },
        )
        trainer = Trainer(cfg, peak_tflops=args.peak_tflops, verbose=False)
        t0 = time.perf_counter()
        trainer.train(until=args.warmup)  # compiles, and the first steps
        warm_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        result = trainer.train()
        seconds = time.perf_counter() - t0
    tokens = args.steps * args.batch * args.seq_len
    tps = tokens / seconds
    devices = trainer.mesh.devices.size
    peak, source = trainer.peak
    mfu = tps * trainer.flops_per_token / (peak * 1e12 * devices)
    print(
        f"{jax.devices()[0].device_kind} x {devices}, mesh {dict(trainer.mesh.shape)}, {total:,} tokens on disk"
    )
    print(
        f"{args.preset}: {trainer.model.num_params() / 1e6:.1f}M params, {trainer.flops_per_token / 1e9:.3f} GFLOP/token, "
        f"seq_len {args.seq_len}, batch {args.batch}; compile + {args.warmup} steps {warm_s:.1f}s"
    )
    print(
        f"{args.steps} steps in {seconds:.2f}s: {tps:,.0f} tokens/s; peak {peak:.1f} TFLOP/s/device ({source})"
    )
    print(f"last loss {result.losses[max(result.losses)]:.4f}")
    print(f"bench: train preset={args.preset} devices={devices} tokens_per_s={tps:.0f} mfu={mfu:.4f}")


if __name__ == "__main__":
    main()
