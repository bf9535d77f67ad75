"""AdamW with weight-decay masks, global-norm clipping and learning-rate schedules that change by phase."""

from __future__ import annotations

from collections.abc import Sequence

import jax
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


def make_optimizer(cfg: OptimizerConfig, phases: Sequence[PhaseConfig], steps: int):
    """(optax transformation, schedule)."""
    schedule = learning_rate(cfg.lr, phases, steps)

    def mask(params):
        m = decay_mask(params)
        if not cfg.decay_embeddings:
            m["embed"] = False
        return m

    opt = optax.chain(
        optax.clip_by_global_norm(cfg.grad_clip) if cfg.grad_clip else optax.identity(),
        optax.adamw(
            schedule, b1=cfg.beta1, b2=cfg.beta2, eps=cfg.eps, weight_decay=cfg.weight_decay, mask=mask
        ),
    )
    return opt, schedule


def global_norm(tree) -> jax.Array:
    return optax.global_norm(tree)
