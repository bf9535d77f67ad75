"""Trainer throughput and model FLOPs utilization for a preset on a mesh.

A mixture of real GPT-2 tokens (``--docs`` documents, three components) is written to local disk; the bundled
trainer runs ``--steps`` steps of ``--preset`` at ``--seq-len`` with ``--batch`` sequences per step on a
(data, fsdp, model) mesh, streaming through the real loader. Compilation and the first ``--warmup`` steps are not
timed; the ``--steps`` steps after them are timed once, as one wall-clock span in this process (the loader's
iterator started inside it; it ends when the last step's metrics reach the host). MFU = model FLOPs per token
(every matmul incl. the LM head, attention at full length, x3 for the backward) x tokens/s / (peak per device x
devices). The peak is the vendor's dense bf16 figure for known accelerators; on a CPU it is measured (a bf16
matmul), and ``--peak-tflops`` overrides it.

    .venv/bin/python benchmarks/train_mfu.py --preset tiny --devices 8 --mesh 2,2,2            # CPU
    python benchmarks/train_mfu.py --preset 1b --seq-len 4096 --batch 16 --mesh 1,-1,1 --steps 20  # one H200
    python3 benchmarks/train_mfu.py --preset 850m --seq-len 4096 --batch 4 --mesh 1,-1,1 --moments bfloat16  # v5e

``--data DIR`` keeps the token mixture in DIR (written there when DIR holds none), so a machine that lacks the
HTML the corpus is built from (a GPU host) trains on the one built elsewhere. When the attention kernel is not the
XLA reference (``--attention``; ``auto`` takes cuDNN's fused kernel on a GPU, Pallas's splash kernel on a TPU),
the run first checks the kernel against the reference on the run's own shapes (output and gradients of one
attention layer, relative error) and stops if they differ by more than bf16 rounding (``--no-check`` skips it).

The memory options (docs/training.md, "Memory"): ``--remat`` (``attention``: keep the attention's inputs and
output, run the MLP again; ``attention_offload``: its MLP projections in host memory), ``--loss-chunk`` (the LM
head's loss a chunk of positions at a time), ``--moments bfloat16`` (AdamW's moments in bf16), ``--opt-offload``
(the moments in host memory). Before the first step the run prints what XLA plans for the step
(``memory: ...``: its arguments, the temporaries beside them, what lives in host memory).

``--check-restore N``: the state after the warmup steps is checkpointed (untimed); after the timed steps the run
restores that checkpoint and trains N steps again, and prints whether each loss equals the uninterrupted run's.
``--profile DIR``: two more steps under JAX's profiler (a Perfetto trace, and the step's HLO, in DIR), and the
device's time per kind of operation. ``--splash-sweep``: instead of training, time splash attention's forward and
backward at the preset's shapes for several block sizes (each the same way: one untimed compiling call, then the
best of 3 wall-clock means of 5 calls), and print the fastest (``DATAPIPE_SPLASH_BLOCKS`` or
``--splash-blocks`` sets them for a run). ``--variants FILE``: one run per line of FILE (``NAME ARGS...``, ARGS
over this command's), all in this process (a TPU program's start costs seconds; compiles are the runs' own), each
appended to ``--results FILE`` as JSON; a name already there is skipped, so a crashed list resumes.

After the timed steps: ``bench: train preset=P devices=D tokens_per_s=X mfu=Y mfu_causal=Z``: ``mfu`` counts attention
over the full sequence (PaLM's convention, as MaxText and Levanter report it), ``mfu_causal`` over the keys each
token attends to (what causal kernels compute; lower by the attention's share).
"""

from __future__ import annotations

import argparse
import gc
import glob
import gzip
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GIB = 2**30


def parser() -> argparse.ArgumentParser:
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
    ap.add_argument(
        "--remat", default=None, help="none | full | dots | dots_no_batch | dots_attention | attention | ..."
    )
    ap.add_argument(
        "--attention", default=None, help="auto | xla | cudnn | splash (the model's default: auto)"
    )
    ap.add_argument("--loss-chunk", type=int, help="LM-head loss chunk (positions); 0: whole")
    ap.add_argument("--moments", help="AdamW's moment dtype: float32 (default) | bfloat16")
    ap.add_argument("--opt-offload", action="store_true", help="the optimizer's moments in host memory")
    ap.add_argument("--lr", type=float, help="peak learning rate (default: the trainer's)")
    ap.add_argument("--data", help="keep the token mixture here (reused when present)")
    ap.add_argument("--peak-tflops", type=float)
    ap.add_argument("--no-check", action="store_true", help="skip the attention kernel's check")
    ap.add_argument("--check-restore", type=int, default=0, metavar="N")
    ap.add_argument("--profile", metavar="DIR")
    ap.add_argument("--splash-sweep", action="store_true")
    ap.add_argument("--splash-blocks", help="six block sizes (q,kv,kv_compute,q_dkv,kv_dkv,kv_dkv_compute)")
    ap.add_argument("--variants", metavar="FILE")
    ap.add_argument("--results", metavar="FILE", help="append each run's figures here (JSON lines)")
    ap.add_argument(
        "--batch-of",
        metavar="NAMES",
        help="the batch of the fastest run of NAMES (comma-separated) in --results",
    )
    ap.add_argument("--name", default="run")
    return ap


def main() -> None:
    args = parser().parse_args()
    if args.devices:
        os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.devices}"
        os.environ["JAX_PLATFORMS"] = "cpu"
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "benchmarks"))
    if args.variants:
        run_variants(args, [a for a in _without_variants(sys.argv[1:])])
    elif args.splash_sweep:
        splash_sweep(args)
    else:
        record = run(args)
        _append(args.results, record)


def _without_variants(argv: list[str]) -> list[str]:
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--variants":
            skip = True
        elif not a.startswith("--variants="):
            out.append(a)
    return out


def _append(path: str | None, record: dict) -> None:
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")


def run_variants(args: argparse.Namespace, base: list[str]) -> None:
    """Each line of ``args.variants`` (``NAME ARGS...``; ``#`` comments) as its own run in this process."""
    done = set()
    if args.results and os.path.exists(args.results):
        with open(args.results) as f:
            done = {json.loads(line)["name"] for line in f if line.strip()}
    with open(args.variants) as f:
        lines = [shlex.split(line, comments=True) for line in f]
    summary = []
    for words in (w for w in lines if w):
        name, rest = words[0], words[1:]
        if name in done:
            print(f"== {name}: done before (in {args.results})")
            continue
        vargs = parser().parse_args([*base, *rest, "--name", name])
        print(f"== {name}: {' '.join(rest)}", flush=True)
        t0 = time.perf_counter()
        try:
            record = splash_sweep(vargs) if vargs.splash_sweep else run(vargs)
        except SystemExit as e:  # a kernel that differs from the reference
            record = {"name": name, "error": str(e.code)}
        except Exception as e:  # noqa: BLE001 - out of memory, a compile error: the next variant still runs
            text = str(e)
            oom = "RESOURCE_EXHAUSTED" in text or "out of memory" in text.lower()
            first = next((line for line in text.splitlines() if line.strip()), type(e).__name__)
            record = {"name": name, "error": ("out of memory: " if oom else "") + first[:400]}
            print(f"error: {record['error']}\n{text[:6000]}", flush=True)  # XLA's largest allocations, if any
        record["wall_s"] = round(time.perf_counter() - t0, 1)
        _append(args.results, record)
        summary.append(record)
        _free()
    print("== summary")
    for r in summary:
        figures = r.get("bench") or r.get("best") or r.get("error")
        print(f"{r['name']}: {figures} ({r['wall_s']}s)")


def _free() -> None:
    """Drop what a run left on the device before the next: its arrays and compiled programs."""
    import jax

    gc.collect()
    for a in jax.live_arrays():
        a.delete()
    jax.clear_caches()
    gc.collect()


def _config(args: argparse.Namespace, manifest: str, work: str, steps: int, checkpoint: dict):
    from datapipe import load_train_config

    data, fsdp, model = (int(x) for x in args.mesh.split(","))
    model_spec: dict[str, object] = {"preset": args.preset}
    options = (("remat", args.remat), ("attention", args.attention), ("loss_chunk", args.loss_chunk))
    model_spec.update({k: v for k, v in options if v is not None})
    optimizer: dict[str, object] = {}
    if args.moments:
        optimizer["moment_dtype"] = args.moments
    if args.opt_offload:
        optimizer["offload"] = True
    if args.lr:
        optimizer["lr"] = {"lr": args.lr}
    return load_train_config(
        None,
        {
            "mixture": manifest,
            "model": model_spec,
            "steps": steps,
            "run_dir": os.path.join(work, "run"),
            "seq_len": args.seq_len,
            "global_batch": args.batch,
            "microbatch": args.microbatch,
            "mesh": {"data": data, "fsdp": fsdp, "model": model},
            "checkpoint": checkpoint,
            "optimizer": optimizer,
            "log_every": 1,
        },
    )


def _blocks(args: argparse.Namespace) -> str | None:
    """``--splash-blocks``: six sizes, or ``best:NAME``, the fastest of the sweep NAME in ``--results``."""
    given = args.splash_blocks
    if not given or not given.startswith("best:"):
        return given
    found = None
    if args.results and os.path.exists(args.results):
        with open(args.results) as f:
            for line in f:
                record = json.loads(line)
                if record.get("name") == given[5:] and record.get("best"):
                    found = record["best"]
    print(f"splash blocks: {found or 'the defaults'} (the sweep {given[5:]}'s best)")
    return found


def _batch_of(args: argparse.Namespace) -> int:
    """``--batch-of NAMES``: the batch of the run among NAMES with the highest MFU in ``--results``."""
    if not args.batch_of:
        return args.batch
    runs = []
    if args.results and os.path.exists(args.results):
        with open(args.results) as f:
            runs = [json.loads(line) for line in f if line.strip()]
    names = args.batch_of.split(",")
    done = [r for r in runs if r.get("name") in names and r.get("mfu")]
    best = max(done, key=lambda r: r["mfu"], default=None)
    print(f"batch: {best['batch'] if best else args.batch} (of {best['name'] if best else 'none done'})")
    return int(best["batch"]) if best else args.batch


def run(args: argparse.Namespace) -> dict:
    from datapipe import Trainer, attention_kernel

    args.batch = _batch_of(args)

    blocks = _blocks(args)
    if blocks:
        os.environ["DATAPIPE_SPLASH_BLOCKS"] = blocks
    else:
        os.environ.pop("DATAPIPE_SPLASH_BLOCKS", None)
    profile_steps = 2 if args.profile else 0
    last = args.warmup + args.steps
    record: dict = {"name": args.name, "preset": args.preset, "batch": args.batch, "splash_blocks": blocks}
    with tempfile.TemporaryDirectory() as work:
        manifest, total = _mixture(args.data or work, args.docs, args.seq_len)
        restore = args.check_restore > 0
        # with --check-restore the state after the warmup is checkpointed, outside the timed steps
        checkpoint = {"every": 0, "at_exit": restore, "async_save": False}
        cfg = _config(args, manifest, work, last + profile_steps, checkpoint)
        trainer = Trainer(cfg, peak_tflops=args.peak_tflops, verbose=False)
        model_cfg = trainer.model
        kernel = attention_kernel(model_cfg, seq_len=args.seq_len)
        if kernel != "xla" and not args.no_check:
            check_attention(model_cfg, args.seq_len)
        t0 = time.perf_counter()
        plan = trainer.memory_analysis(args.batch)
        compile_s = time.perf_counter() - t0
        host_bytes = plan["host_argument_bytes"] + plan["host_temp_bytes"]
        print(
            f"memory: XLA's plan for a step: arguments {plan['argument_bytes'] / GIB:.2f} GiB, temporaries "
            f"{plan['temp_bytes'] / GIB:.2f} GiB, in host memory {host_bytes / GIB:.2f} GiB; compile {compile_s:.1f}s",
            flush=True,
        )
        record.update(memory_plan=plan)
        t0 = time.perf_counter()
        first = trainer.train(until=args.warmup)  # the first steps, untimed (on a TPU, compiled again)
        warm_s = time.perf_counter() - t0
        trainer.cfg = replace(cfg, checkpoint=replace(cfg.checkpoint, at_exit=False))
        t0 = time.perf_counter()
        result = trainer.train(until=last)
        seconds = time.perf_counter() - t0
        losses = {**first.losses, **result.losses}
        record.update(_figures(args, trainer, kernel, seconds, warm_s, total, losses))
        if args.profile:
            try:
                record["hlo"] = _profile(trainer, args, losses)
            except Exception as e:  # noqa: BLE001 - the figures above stand without it
                print(f"profile failed: {str(e).splitlines()[0][:300]}")
        if restore:
            try:
                trainer.drop_state()  # only the checkpoint's state from here on
                gc.collect()
                again = trainer.train(until=min(args.warmup + args.check_restore, last))
                equal = all(again.losses[s] == losses[s] for s in again.losses)
                pairs = ", ".join(
                    f"step {s}: {again.losses[s]:.6f} vs {losses[s]:.6f}" for s in sorted(again.losses)
                )
                print(f"restore check: from the checkpoint of step {args.warmup}, {pairs}: equal={equal}")
                record.update(restore_equal=equal, restored={str(k): v for k, v in again.losses.items()})
            except Exception as e:  # noqa: BLE001
                print(f"restore check failed: {str(e).splitlines()[0][:300]}")
        record["losses"] = {str(k): v for k, v in losses.items()}
        del trainer, first, result
    return record


def _figures(args, trainer, kernel: str, seconds: float, warm_s: float, total: int, losses: dict) -> dict:
    """Print the timed steps' figures, ending with the ``bench:`` line; return them."""
    import jax

    model_cfg = trainer.model
    tokens = args.steps * args.batch * args.seq_len
    tps = tokens / seconds
    devices = trainer.mesh.devices.size
    peak, source = trainer.peak
    flops = trainer.flops_per_token
    mfu = tps * flops / (peak * 1e12 * devices)
    # the same run under the causal convention: attention counted over the keys each token attends to
    causal_flops = model_cfg.flops_per_token(args.seq_len, causal=True)
    mfu_causal = tps * causal_flops / (peak * 1e12 * devices)
    peak_bytes = _peak_bytes()
    print(f"{jax.devices()[0].device_kind} x {devices}, {total:,} tokens on disk")
    print(
        f"{args.preset}: {model_cfg.num_params() / 1e6:.1f}M params, {flops / 1e9:.3f} GFLOP/token, "
        f"seq_len {args.seq_len}, batch {args.batch}, attention {kernel}, remat {model_cfg.remat}, "
        f"loss_chunk {model_cfg.loss_chunk}, moments {args.moments or 'float32'}"
        f"{', offloaded' if args.opt_offload else ''}; first {args.warmup} steps {warm_s:.1f}s"
    )
    print(
        f"{args.steps} steps in {seconds:.2f}s: {tps:,.0f} tokens/s; peak {peak:.1f} TFLOP/s/device ({source})"
        + (f"; peak memory in use {peak_bytes / GIB:.2f} GiB (this process)" if peak_bytes else "")
    )
    print("losses: " + " ".join(f"{s}:{losses[s]:.4f}" for s in sorted(losses)))
    print(
        f"MFU {mfu:.4f} counting attention over the full sequence (PaLM's convention), {mfu_causal:.4f} counting "
        f"the causal half a token attends to ({causal_flops / 1e9:.3f} GFLOP/token)"
    )
    bench = (
        f"bench: train preset={args.preset} devices={devices} tokens_per_s={tps:.0f} mfu={mfu:.4f} "
        f"mfu_causal={mfu_causal:.4f}"
    )
    print(bench, flush=True)
    return {
        "bench": bench,
        "params": model_cfg.num_params(),
        "remat": model_cfg.remat,
        "loss_chunk": model_cfg.loss_chunk,
        "moments": args.moments or "float32",
        "opt_offload": args.opt_offload,
        "tokens_per_s": round(tps),
        "mfu": round(mfu, 4),
        "mfu_causal": round(mfu_causal, 4),
        "peak_bytes_in_use": peak_bytes,
    }


def _peak_bytes() -> int:
    import jax

    stats = jax.devices()[0].memory_stats() or {}
    return int(stats.get("peak_bytes_in_use", 0))


def _profile(trainer, args: argparse.Namespace, losses: dict[int, float]) -> str:
    """Two steps under the profiler: the trace and the step's HLO into ``args.profile``, and the device's time by
    kind of operation printed (matmul fusions, the attention kernel, the rest)."""
    import jax

    os.makedirs(args.profile, exist_ok=True)
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0  # the device's operations, not Python's calls
    raw = tempfile.mkdtemp()  # the profiler's own folders; only the trace is kept, in args.profile
    with jax.profiler.trace(raw, create_perfetto_trace=True, profiler_options=options):
        result = trainer.train()
    losses.update(result.losses)
    hlo_text = trainer.compile_step(args.batch).as_text()
    hlo_path = os.path.join(args.profile, f"{args.name}.hlo.txt.gz")
    with gzip.open(hlo_path, "wt") as f:
        f.write(hlo_text)
    traces = glob.glob(os.path.join(raw, "**", "*.json.gz"), recursive=True)
    if not traces:
        print("profile: no trace written")
        return hlo_path
    trace = os.path.join(args.profile, f"{args.name}.trace.json.gz")
    shutil.copy(traces[0], trace)
    shutil.rmtree(raw, ignore_errors=True)
    print(profile_summary(trace, hlo_text, steps=2))
    return hlo_path


def profile_summary(trace_path: str, hlo_text: str, steps: int) -> str:
    """The device's busy time per step by kind: matmul (fusions holding a dot or convolution), the attention
    kernel (Pallas custom calls), collectives, copies, and the rest (elementwise and reduction fusions)."""
    import re

    with gzip.open(trace_path, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    pids = {
        e["pid"]: e["args"].get("name", "")
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    tids = {
        (e["pid"], e["tid"]): e["args"].get("name", "")
        for e in events
        if e.get("ph") == "M" and e.get("name") == "thread_name"
    }
    # the computation each fusion calls, and whether it (or what it calls) holds a matmul
    calls = dict(re.findall(r"%?([\w.-]+) = [^\n]*? fusion\([^\n]*calls=%?([\w.-]+)", hlo_text))
    bodies: dict[str, str] = {}
    for m in re.finditer(r"\n(?:%?)([\w.-]+) [^\n]*\{\n(.*?)\n\}", hlo_text, re.S):
        bodies[m.group(1)] = m.group(2)

    def kind(name: str) -> str:
        base = name.split(" ")[0]
        if "custom-call" in base or "pallas" in base or "splash" in base:
            return "attention kernel (custom call)"
        if base.startswith(("all-reduce", "all-gather", "reduce-scatter", "collective", "all-to-all")):
            return "collectives"
        if base.startswith(("copy", "transpose")):
            return "copies and transposes"
        if base.startswith(("convolution", "dot")):
            return "matmul"
        body = bodies.get(calls.get(base, ""), "")
        if " convolution(" in body or " dot(" in body:
            return "matmul fusion"
        if "custom-call" in body:
            return "attention kernel (custom call)"
        return "other fusions (elementwise, reductions)"

    device_pids = [p for p, n in pids.items() if "TPU" in n or "/device:" in n]
    busy: dict[str, float] = defaultdict(float)
    ops: dict[str, float] = defaultdict(float)
    for e in events:
        if e.get("ph") != "X" or e.get("pid") not in device_pids:
            continue
        thread = tids.get((e["pid"], e.get("tid")), "")
        if "XLA Ops" not in thread:
            continue
        busy[kind(e.get("name", ""))] += float(e.get("dur", 0)) / 1e3 / steps
        ops[e.get("name", "")] += float(e.get("dur", 0)) / 1e3 / steps
    if not busy:
        names = sorted({f"{pids.get(p, p)} / {t}" for (p, _), t in tids.items()})[:20]
        return "profile: no device ops found; processes/threads: " + "; ".join(names)
    total = sum(busy.values())
    lines = [f"profile: device busy {total:.1f} ms per step"]
    lines += [f"  {k}: {v:.1f} ms ({v / total:.1%})" for k, v in sorted(busy.items(), key=lambda kv: -kv[1])]
    lines.append(
        "  top operations (ms per step): "
        + ", ".join(f"{n} {v:.1f}" for n, v in sorted(ops.items(), key=lambda kv: -kv[1])[:12])
    )
    return "\n".join(lines)


def splash_sweep(args: argparse.Namespace) -> dict:
    """Splash attention's forward, then forward + backward, at the preset's shapes (``--batch`` rows of
    ``--seq-len``, its heads), for candidate block sizes: the forward's sizes first (the backward's fixed), then
    the backward's with the best forward. Prints each time and the fastest six."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.experimental.pallas.ops.tpu import splash_attention as sa

    from datapipe import Trainer

    with tempfile.TemporaryDirectory() as work:
        manifest, _ = _mixture(args.data or work, args.docs, args.seq_len)
        cfg = _config(args, manifest, work, 1, {"every": 0, "at_exit": False})
        model = Trainer(cfg, verbose=False, peak_tflops=1.0).model
    t, b, h, kv, dh = args.seq_len, args.batch, model.n_heads, model.n_kv_heads, model.dh
    rng = np.random.default_rng(0)
    q = jnp.asarray(rng.normal(size=(b, h, t, dh)), jnp.bfloat16)
    k = jnp.asarray(rng.normal(size=(b, kv, t, dh)), jnp.bfloat16)
    v = jnp.asarray(rng.normal(size=(b, kv, t, dh)), jnp.bfloat16)
    seg = jnp.zeros((b, t), jnp.int32)
    interpret = jax.default_backend() != "tpu"

    def timed(blocks: tuple[int, ...], backward: bool) -> float:
        sizes = sa.BlockSizes(
            block_q=blocks[0],
            block_kv=blocks[1],
            block_kv_compute=blocks[2],
            block_q_dkv=blocks[3],
            block_kv_dkv=blocks[4],
            block_kv_dkv_compute=blocks[5],
            use_fused_bwd_kernel=True,
        )
        mask = sa.MultiHeadMask([sa.CausalMask((t, t))] * h)
        kernel = sa.make_splash_mha(
            mask, head_shards=1, q_seq_shards=1, block_sizes=sizes, interpret=interpret
        )

        def attend(q, k, v):
            return jax.vmap(lambda q, k, v, s: kernel(q, k, v, segment_ids=sa.SegmentIds(q=s, kv=s)))(
                q, k, v, seg
            )

        if backward:
            f = jax.jit(
                jax.grad(lambda q, k, v: attend(q, k, v).astype(jnp.float32).sum(), argnums=(0, 1, 2))
            )
        else:
            f = jax.jit(attend)
        jax.block_until_ready(f(q, k, v))
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(5):
                out = f(q, k, v)
            jax.block_until_ready(out)
            best = min(best, (time.perf_counter() - t0) / 5)
        return best * 1e3

    def sized(blocks: tuple[int, ...]) -> bool:
        return all(t % x == 0 for x in blocks) and blocks[1] % blocks[2] == 0 and blocks[4] % blocks[5] == 0

    default = (512, 512, 512, 512, 512, 512)
    forward = [
        (512, 512, 512),
        (1024, 512, 512),
        (1024, 1024, 512),
        (2048, 512, 512),
        (1024, 1024, 1024),
        (2048, 1024, 512),
        (512, 1024, 512),
    ]
    backward = [
        (512, 512, 512),
        (1024, 512, 512),
        (512, 1024, 512),
        (1024, 1024, 512),
        (1024, 1024, 1024),
        (2048, 512, 512),
    ]
    results: dict[str, float] = {}
    best_f, best_f_ms = default[:3], float("inf")
    for fw in forward:
        blocks = (*fw, *default[3:])
        if not sized(blocks):
            continue
        try:
            ms = timed(blocks, backward=False)
        except Exception as e:  # noqa: BLE001 - a size the kernel refuses
            print(f"splash forward {fw}: failed ({str(e).splitlines()[0][:120]})")
            continue
        results[f"fwd {fw}"] = ms
        print(f"splash forward {fw}: {ms:.2f} ms", flush=True)
        if ms < best_f_ms:
            best_f, best_f_ms = fw, ms
    best, best_ms = (*best_f, *default[3:]), float("inf")
    for bw in backward:
        blocks = (*best_f, *bw)
        if not sized(blocks):
            continue
        try:
            ms = timed(blocks, backward=True)
        except Exception as e:  # noqa: BLE001
            print(f"splash forward+backward {blocks}: failed ({str(e).splitlines()[0][:120]})")
            continue
        results[f"fwd+bwd {blocks}"] = ms
        print(f"splash forward+backward {blocks}: {ms:.2f} ms", flush=True)
        if ms < best_ms:
            best, best_ms = blocks, ms
    default_ms = results.get(f"fwd+bwd {default}")
    text = ",".join(map(str, best))
    print(
        f"splash sweep: {args.preset} (batch {b}, seq {t}, heads {h}/{kv}, head_dim {dh}): best {text} "
        f"{best_ms:.2f} ms forward+backward"
        + (f" (512 everywhere: {default_ms:.2f} ms)" if default_ms else ""),
        flush=True,
    )
    return {"name": args.name, "best": text, "best_ms": best_ms, "default_ms": default_ms, "times": results}


def _mixture(folder: str, docs: int, seq_len: int) -> tuple[str, int]:
    """(manifest, tokens): the mixture already in ``folder``, or a new one written there."""
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
