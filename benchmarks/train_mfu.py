"""Trainer throughput and model FLOPs utilization for a preset on a mesh.

A mixture of real GPT-2 tokens (``--docs`` documents, three components) is written to local disk; the bundled
trainer runs ``--steps`` steps of ``--preset`` at ``--seq-len`` with ``--batch`` sequences per step on a
(data, fsdp, model) mesh, streaming through the real loader. Compilation and the first ``--warmup`` steps are not
timed. MFU = model FLOPs per token (every matmul incl. the LM head, attention at full length, x3 for the backward)
x tokens/s / (peak per device x devices). The peak is the vendor's dense bf16 figure for known accelerators; on a
CPU it is measured (a bf16 matmul), and ``--peak-tflops`` overrides it.

    .venv/bin/python benchmarks/train_mfu.py --preset tiny --devices 8 --mesh 2,2,2            # CPU
    python benchmarks/train_mfu.py --preset 1b --seq-len 4096 --batch 16 --mesh 1,-1,1 --steps 20  # one H200
    python3 benchmarks/train_mfu.py --preset 150m --seq-len 4096 --batch 4 --mesh 1,-1,1 --steps 10  # one TPU v5e

``--data DIR`` keeps the token mixture in DIR (written there when DIR holds none), so a machine that lacks the
HTML the corpus is built from (a GPU host) trains on the one built elsewhere. When the attention kernel is not the
XLA reference (``--attention``; ``auto`` takes cuDNN's fused kernel on a GPU, Pallas's splash kernel on a TPU),
the run first checks the kernel against the reference on the run's own shapes (output and gradients of one
attention layer, relative error) and stops if they differ by more than bf16 rounding.

Last line: ``bench: train preset=P devices=D tokens_per_s=X mfu=Y mfu_causal=Z``: ``mfu`` counts attention over
the full sequence (PaLM's convention, as MaxText and Levanter report it), ``mfu_causal`` over the keys each token
attends to (what causal kernels compute; lower by the attention's share).
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
    ap.add_argument(
        "--attention", default=None, help="auto | xla | cudnn | splash (the model's default: auto)"
    )
    ap.add_argument("--data", help="keep the token mixture here (reused when present)")
    ap.add_argument("--peak-tflops", type=float)
    args = ap.parse_args()
    if args.devices:
        os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.devices}"
        os.environ["JAX_PLATFORMS"] = "cpu"
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "benchmarks"))
    import jax

    from datapipe import Trainer, attention_kernel, load_train_config

    data, fsdp, model = (int(x) for x in args.mesh.split(","))
    with tempfile.TemporaryDirectory() as work:
        manifest, total = _mixture(args.data or work, args.docs, args.seq_len)
        model_spec: dict = {"preset": args.preset}
        model_spec.update({k: v for k, v in (("remat", args.remat), ("attention", args.attention)) if v})
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
        kernel = attention_kernel(trainer.model, seq_len=args.seq_len)
        if kernel != "xla":
            check_attention(trainer.model, args.seq_len)
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
    # the same run under the causal convention: attention counted over the keys each token attends to
    causal_flops = trainer.model.flops_per_token(args.seq_len, causal=True)
    mfu_causal = tps * causal_flops / (peak * 1e12 * devices)
    print(
        f"{jax.devices()[0].device_kind} x {devices}, mesh {dict(trainer.mesh.shape)}, {total:,} tokens on disk"
    )
    print(
        f"{args.preset}: {trainer.model.num_params() / 1e6:.1f}M params, {trainer.flops_per_token / 1e9:.3f} GFLOP/token, "
        f"seq_len {args.seq_len}, batch {args.batch}, attention {kernel}, remat {trainer.model.remat}; "
        f"compile + {args.warmup} steps {warm_s:.1f}s"
    )
    print(
        f"{args.steps} steps in {seconds:.2f}s: {tps:,.0f} tokens/s; peak {peak:.1f} TFLOP/s/device ({source})"
    )
    print(f"last loss {result.losses[max(result.losses)]:.4f}")
    print(
        f"MFU {mfu:.4f} counting attention over the full sequence (PaLM's convention), {mfu_causal:.4f} counting "
        f"the causal half a token attends to ({causal_flops / 1e9:.3f} GFLOP/token)"
    )
    print(
        f"bench: train preset={args.preset} devices={devices} tokens_per_s={tps:.0f} mfu={mfu:.4f} "
        f"mfu_causal={mfu_causal:.4f}"
    )


def _mixture(folder: str, docs: int, seq_len: int) -> tuple[str, int]:
    """(manifest, tokens): the mixture already in ``folder``, or a new one written there."""
    import json

    path = os.path.join(folder, "mixture.json")
    if os.path.exists(path):
        with open(path) as f:
            doc = json.load(f)
        print(f"reusing the mixture in {folder}")
        return path, sum(c["tokens"] for c in doc["components"])
    from corpus import token_mixture

    os.makedirs(folder, exist_ok=True)
    return token_mixture(folder, docs, seq_len, {"web": 0.6, "code": 0.3, "books": 0.1})


def check_attention(cfg, seq_len: int, batch: int = 2, tolerance: float = 2e-2) -> None:
    """One attention layer of ``cfg`` at the run's sequence length, on random inputs with several documents and
    padding per row: the run's kernel against the XLA reference, output and gradients (inputs and weights) by
    relative error. Exits when they differ by more than bf16 rounding: a fast kernel that computes something else
    must not report an MFU."""
    from dataclasses import replace

    import jax
    import jax.numpy as jnp
    import numpy as np

    from datapipe import attention_kernel, attention_mask
    from datapipe import reference_attention as _attention

    rng = np.random.default_rng(0)
    d, h, kv, dh = cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.dh
    dtype = jnp.dtype(cfg.compute_dtype)
    x = jnp.asarray(rng.normal(size=(batch, seq_len, d)), dtype)
    lp = {
        "wq": rng.normal(size=(d, h, dh)) / np.sqrt(d),
        "wk": rng.normal(size=(d, kv, dh)) / np.sqrt(d),
        "wv": rng.normal(size=(d, kv, dh)) / np.sqrt(d),
        "wo": rng.normal(size=(h, dh, d)) / np.sqrt(h * dh),
    }
    lp = {k: jnp.asarray(v, jnp.float32) for k, v in lp.items()}
    lengths = rng.integers(1, max(2, seq_len // 3), size=(batch, seq_len))
    seg = np.full((batch, seq_len), -1, np.int32)  # each row: documents of random lengths, then padding
    for r in range(batch):
        at, doc = 0, 0
        while at < seq_len * 7 // 8:
            seg[r, at : at + lengths[r, doc]] = doc
            at, doc = at + lengths[r, doc], doc + 1
    seg_j = jnp.asarray(seg)
    starts = np.concatenate([np.ones((batch, 1), bool), seg[:, 1:] != seg[:, :-1]], axis=1)
    idx = np.arange(seq_len)[None, :]
    positions = jnp.asarray(idx - np.maximum.accumulate(np.where(starts, idx, 0), axis=1))
    cot = jnp.asarray(rng.normal(size=(batch, seq_len, d)), jnp.float32)

    def run(kernel: str):
        c = replace(cfg, attention=kernel)

        def f(x, lp):
            out = _attention(x, lp, attention_mask(seg_j), positions, c, dtype, seg_j)
            return jnp.sum(out.astype(jnp.float32) * cot), out

        (_, out), grads = jax.jit(jax.value_and_grad(f, argnums=(0, 1), has_aux=True))(x, lp)
        return [out, grads[0], *grads[1].values()]

    names = ["output", "d_x", *(f"d_{k}" for k in lp)]
    worst = 0.0
    kernel = attention_kernel(cfg, seq_len=seq_len)
    for name, got, ref in zip(names, run(kernel), run("xla"), strict=True):
        got32, ref32 = np.asarray(got, np.float32), np.asarray(ref, np.float32)
        err = float(np.linalg.norm(got32 - ref32) / max(np.linalg.norm(ref32), 1e-30))
        if not np.isfinite(got32).all():
            err = float("inf")
        worst = max(worst, err)
        print(f"attention check {name}: relative error {err:.2e}")
    if worst > tolerance:
        sys.exit(f"error: the {kernel} attention kernel differs from the XLA reference ({worst:.2e})")


if __name__ == "__main__":
    main()
