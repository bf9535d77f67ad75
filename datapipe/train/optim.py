"""AdamW with weight-decay masks, global-norm clipping and learning-rate schedules that change by phase; its two
moments in fp32 (optax's AdamW) or in bf16 (``optimizer.moment_dtype``: half the optimizer state)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from datapipe.train.config import LrSchedule, OptimizerConfig, PhaseConfig
from datapipe.train.model import NO_DECAY, param_paths


def phase_schedule(s: LrSchedule, length: int) -> optax.Schedule:
    """One phase's schedule over its ``length`` steps (counted from the phase's first step)."""
    warm = min(s.warmup_steps, length)
    floor = s.lr * s.min_lr_ratio
    if s.schedule == "constant":
        main = optax.constant_schedule(s.lr)
    elif s.schedule == "cosine":
        main = optax.cosine_decay_schedule(s.lr, max(1, length - warm), alpha=s.min_lr_ratio)
    elif s.schedule == "wsd":
        decay = s.decay_steps if s.decay_steps is not None else max(1, length // 5)
        decay = min(decay, length - warm)
        stable = max(0, length - warm - decay)
        main = optax.join_schedules(
            [optax.constant_schedule(s.lr), optax.linear_schedule(s.lr, floor, max(1, decay))], [stable]
        )
    else:
        raise ValueError(f"unknown schedule {s.schedule!r}")
    if not warm:
        return main
    return optax.join_schedules([optax.linear_schedule(s.lr / warm, s.lr, warm - 1 or 1), main], [warm])


def learning_rate(base: LrSchedule, phases: Sequence[PhaseConfig], steps: int) -> optax.Schedule:
    """The run's schedule: the base one from step 0, then each phase that sets ``lr`` from its step on."""
    starts, parts = [0], [base]
    for ph in phases:
        if ph.lr is not None:
            starts.append(ph.step)
            parts.append(ph.lr)
    ends = [*starts[1:], steps]
    schedules = [phase_schedule(p, max(1, e - s)) for p, s, e in zip(parts, starts, ends, strict=True)]
    return schedules[0] if len(schedules) == 1 else optax.join_schedules(schedules, starts[1:])


def decay_mask(params) -> dict:
    """Decay weight matrices; not norms, and not the embedding unless asked (it is also the tied output head)."""
    flat = param_paths(params)

    def decays(name: str) -> bool:
        return name not in NO_DECAY

    masked = {k: decays(k) for k in flat}
    out: dict = {}
    for k, v in masked.items():
        if "/" in k:
            top, sub = k.split("/", 1)
            out.setdefault(top, {})[sub] = v
        else:
            out[k] = v
    return out


MOMENT_DTYPES = ("float32", "bfloat16")


class AdamMoments(NamedTuple):
    """optax's ``ScaleByAdamState``, with the moments stored in another dtype."""

    step: jax.Array
    mu: optax.Updates
    nu: optax.Updates


def scale_by_adam_in(dtype: str, b1: float, b2: float, eps: float) -> optax.GradientTransformation:
    """``optax.scale_by_adam`` with both moments stored in ``dtype`` (bf16: 2 bytes a parameter each instead of
    4): each step computes them in fp32 from the stored ones, takes its update from the fp32 values, and stores
    them rounded to nearest. Rounded so, a moment moves only by more than half its last bit (1/512 of it in bf16):
    with ``beta2`` 0.95 (the default) the second moment's decay, 5% a step, is kept; with 0.999 it would be lost
    (use fp32 moments there)."""
    store = jnp.dtype(dtype)

    def init(params):
        def zeros(p):
            return jnp.zeros(p.shape, store)

        return AdamMoments(jnp.zeros([], jnp.int32), jax.tree.map(zeros, params), jax.tree.map(zeros, params))

    def update(updates, state, params=None):
        del params
        mu = jax.tree.map(lambda g, m: (1 - b1) * g + b1 * m.astype(jnp.float32), updates, state.mu)
        nu = jax.tree.map(lambda g, v: (1 - b2) * (g * g) + b2 * v.astype(jnp.float32), updates, state.nu)
        step = optax.safe_increment(state.step)
        c1 = 1 - jnp.asarray(b1, jnp.float32) ** step
        c2 = 1 - jnp.asarray(b2, jnp.float32) ** step
        out = jax.tree.map(lambda m, v: (m / c1) / (jnp.sqrt(v / c2) + eps), mu, nu)
        return out, AdamMoments(
            step, jax.tree.map(lambda m: m.astype(store), mu), jax.tree.map(lambda v: v.astype(store), nu)
        )

    return optax.GradientTransformation(init, update)


def make_optimizer(cfg: OptimizerConfig, phases: Sequence[PhaseConfig], steps: int):
    """(optax transformation, schedule)."""
    if cfg.moment_dtype not in MOMENT_DTYPES:
        raise ValueError(f"moment_dtype must be one of {', '.join(MOMENT_DTYPES)}, got {cfg.moment_dtype!r}")
    schedule = learning_rate(cfg.lr, phases, steps)

    def mask(params):
        m = decay_mask(params)
        if not cfg.decay_embeddings:
            m["embed"] = False
        return m

    clip = optax.clip_by_global_norm(cfg.grad_clip) if cfg.grad_clip else optax.identity()
    if cfg.moment_dtype == "float32":  # optax's own AdamW: the reference
        adamw = optax.adamw(
            schedule, b1=cfg.beta1, b2=cfg.beta2, eps=cfg.eps, weight_decay=cfg.weight_decay, mask=mask
        )
    else:  # optax.adamw's chain, with the moments in another dtype
        adamw = optax.chain(
            scale_by_adam_in(cfg.moment_dtype, cfg.beta1, cfg.beta2, cfg.eps),
            optax.add_decayed_weights(cfg.weight_decay, mask),
            optax.scale_by_learning_rate(schedule),
        )
    return optax.chain(clip, adamw), schedule


def global_norm(tree) -> jax.Array:
    return optax.global_norm(tree)
