"""Training metrics: a JSONL log, a concise console line, and MFU against the device's peak.

Peaks are the vendors' dense bf16 figures per chip. A CPU has no such figure: its peak is measured once by a bf16
matmul on one device (``measured``), and the report says so; ``--peak-tflops`` overrides any of them.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

# dense bf16 TFLOP/s per device (vendor specifications)
PEAK_TFLOPS = {
    "H200": 989.0,
    "H100": 989.0,
    "A100": 312.0,
    "L4": 121.0,
    "TPU v4": 275.0,
    "TPU v5 lite": 197.0,
    "TPU v5e": 197.0,
    "TPU v5p": 459.0,
    "TPU v6 lite": 918.0,
    "TPU v6e": 918.0,
}


def device_peak_tflops(device: Any, override: float | None = None) -> tuple[float, str]:
    """(peak TFLOP/s per device, where the figure came from)."""
    if override:
        return override, "given"
    kind = getattr(device, "device_kind", "")
    for name, peak in PEAK_TFLOPS.items():
        if name.lower() in kind.lower():
            return peak, f"spec:{name}"
    return measure_matmul_tflops(device), "measured"


def measure_matmul_tflops(device: Any, n: int = 1024, repeats: int = 5) -> float:
    import jax
    import jax.numpy as jnp

    a = jax.device_put(jnp.ones((n, n), jnp.bfloat16), device)
    f = jax.jit(lambda x: x @ x)
    f(a).block_until_ready()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        f(a).block_until_ready()
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e12


class MetricsLog:
    """Appends one JSON object per logged step to ``metrics.jsonl``; on resume, drops lines past the restored step
    (they were written after the checkpoint the run resumes from, and will be written again)."""

    def __init__(self, path: str, resume_step: int, enabled: bool = True) -> None:
        self.path, self.enabled = path, enabled
        if not enabled:
            return
        kept = []
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                for line in f:
                    if line.strip() and json.loads(line).get("step", 0) <= resume_step:
                        kept.append(line)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.writelines(kept)
        os.replace(path + ".tmp", path)

    def write(self, record: dict[str, Any]) -> None:
        if not self.enabled:
            return
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")


def read_metrics(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def console_line(r: dict[str, Any]) -> str:
    parts = [
        f"step {r['step']:>6}",
        f"loss {r['loss']:.4f}",
        f"lr {r['lr']:.2e}",
        f"gnorm {r['grad_norm']:.3f}",
    ]
    if "tokens_per_s" in r:
        parts.append(f"{r['tokens_per_s']:,.0f} tok/s")
    if r.get("mfu") is not None:
        parts.append(f"mfu {100 * r['mfu']:.1f}%")
    if "val_loss" in r:
        parts.append("val " + " ".join(f"{k}={v:.4f}" for k, v in r["val_loss"].items()))
    return "  ".join(parts)


EVAL_FILE = "eval.jsonl"  # beside metrics.jsonl: one record per `datapipe eval`


def read_evals(run_dir: str) -> list[dict[str, Any]]:
    """A run's evaluations (``datapipe eval``), oldest first; none when it was never evaluated."""
    path = os.path.join(run_dir, EVAL_FILE)
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
