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
from collections.abc import Iterator
from typing import Any

import jax
import orbax.checkpoint as ocp

from datapipe.errors import DatapipeError
from datapipe.train.settings import CheckpointConfig


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


def checkpoint_step(run_dir: str, step: int | None = None) -> int:
    """The step of a run's complete checkpoint: ``step`` if there is one, else the latest; an error naming the
    steps there are otherwise (before anything is read or written)."""
    if not os.path.isdir(os.path.join(run_dir, "checkpoints")):
        raise DatapipeError(f"{run_dir}: no checkpoints folder: nothing trained there yet")
    manager = _manager(run_dir)
    try:
        steps = sorted(manager.all_steps())
    finally:
        manager.close()
    found = (steps[-1] if steps else None) if step is None else step
    if found is None or found not in steps:
        have = ", ".join(map(str, steps)) or "none"
        raise DatapipeError(f"{run_dir}: no checkpoint at step {step} (steps: {have})")
    return found


def _manager(run_dir: str) -> Any:
    return ocp.CheckpointManager(os.path.join(os.path.abspath(run_dir), "checkpoints"))


def _restore_params(manager: Any, step: int, params: Any) -> Any:
    """The parameters ``params`` (abstract arrays with shardings, all of the model's or some) of checkpoint
    ``step``: an orbax partial restore, which reads only those arrays (never the optimizer state)."""
    abstract = {"params": params}
    restore = ocp.args.PyTreeRestore(
        item=abstract,
        restore_args=ocp.checkpoint_utils.construct_restore_args(abstract),
        partial_restore=True,
    )
    return manager.restore(step, args=restore)["params"]


def _shapes(cfg: Any) -> Any:
    from datapipe.train.model import init_params

    return jax.eval_shape(lambda k: init_params(cfg, k), jax.random.PRNGKey(0))


def restore_run_params(
    run_dir: str, step: int | None, cfg: Any, device: Any = None, target: Any = None
) -> tuple[int, Any]:
    """(step, parameters) of a run's checkpoint (the latest by default), whatever mesh wrote it: placed as
    ``target`` says (abstract arrays with shardings: each host reads only its shards), else gathered whole onto one
    device (this host's first CPU device by default). Only the parameters are read: the optimizer's moments,
    twice their size, stay on disk."""
    step = checkpoint_step(run_dir, step)
    if target is None:
        shapes = _shapes(cfg)
        device = device if device is not None else jax.local_devices(backend="cpu")[0]
        single = jax.sharding.SingleDeviceSharding(device)
        target = abstract_like(shapes, jax.tree.map(lambda _: single, shapes))
    manager = _manager(run_dir)
    try:
        return step, _restore_params(manager, step, target)
    finally:
        manager.close()


def iter_run_params(run_dir: str, step: int, cfg: Any) -> Iterator[tuple[str, Any]]:
    """(path, host array) of each parameter of a run's checkpoint at ``step``, one at a time: each read by an
    orbax partial restore of that parameter alone and gathered whole onto the host, so that memory holds one
    parameter, not the model (an 8B model's largest is a stacked MLP matrix, 23% of it)."""
    import numpy as np

    from datapipe.train.model import param_paths

    single = jax.sharding.SingleDeviceSharding(jax.local_devices(backend="cpu")[0])
    manager = _manager(run_dir)
    try:
        for path, shape in param_paths(_shapes(cfg)).items():
            head, _, leaf = path.partition("/")
            one = jax.ShapeDtypeStruct(shape.shape, shape.dtype, sharding=single)
            params = _restore_params(manager, step, {head: {leaf: one}} if leaf else {head: one})
            array = params[head][leaf] if leaf else params[head]
            yield path, np.asarray(jax.device_get(array))
            del params, array
    finally:
        manager.close()
