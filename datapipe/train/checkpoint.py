"""Checkpoints with orbax: asynchronous saves every N steps and at exit, the last K kept plus every M-th, and
restores onto any mesh.

A checkpoint at step ``s`` holds the state after ``s`` updates; the run resumes by training step ``s`` next, and the
loader needs nothing else (a batch is a function of the step). Orbax writes each checkpoint to a temporary folder
and renames it when complete, so a run killed mid-save resumes from the previous complete one. Restoring takes the
target shardings from the current mesh, so a checkpoint written on a (2, 2, 2) mesh restores on (4, 2, 1) or on
one device.
"""

from __future__ import annotations

import os
from typing import Any

import jax
import orbax.checkpoint as ocp

from datapipe.train.config import CheckpointConfig


class Checkpoints:
    def __init__(self, directory: str, cfg: CheckpointConfig) -> None:
        self.cfg = cfg
        self.directory = os.path.abspath(directory)
        options = ocp.CheckpointManagerOptions(
            save_interval_steps=cfg.every if cfg.every else 1 << 62,
            max_to_keep=cfg.keep_last,
            keep_period=cfg.keep_every or None,
            enable_async_checkpointing=cfg.async_save,
            create=True,
        )
        self.manager = ocp.CheckpointManager(self.directory, options=options)

    def latest_step(self) -> int | None:
        return self.manager.latest_step()

    def all_steps(self) -> list[int]:
        return sorted(self.manager.all_steps())

    def maybe_save(self, step: int, state: Any) -> bool:
        """Save if ``step`` is on the interval (asynchronously; returns at once after the host copy)."""
        if not self.cfg.every or step % self.cfg.every:
            return False
        return self.manager.save(step, args=ocp.args.StandardSave(state))

    def save_now(self, step: int, state: Any) -> None:
        """Save (if not already saved at this step) and wait until it is complete on disk."""
        if step not in self.manager.all_steps():
            self.manager.save(step, args=ocp.args.StandardSave(state), force=True)
        self.manager.wait_until_finished()

    def restore(self, step: int, abstract_state: Any) -> Any:
        """The state at ``step``, placed with the shardings of ``abstract_state`` (ShapeDtypeStructs)."""
        return self.manager.restore(step, args=ocp.args.StandardRestore(abstract_state))

    def close(self) -> None:
        self.manager.wait_until_finished()
        self.manager.close()


def abstract_like(tree: Any, shardings: Any) -> Any:
    return jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s), tree, shardings)
