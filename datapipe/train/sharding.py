"""The device mesh and the named rules that place parameters, optimizer state and batches on it.

Mesh axes: ``data`` (pure data parallel: parameters replicated), ``fsdp`` (data parallel with parameters and
optimizer state sharded, gathered per layer by XLA) and ``model`` (tensor parallel: heads and the MLP's hidden
units split). Sizes come from config; one may be ``-1`` for "the rest of the devices".

A parameter's logical axes (``datapipe.train.model.PARAM_AXES``) map to mesh axes by :data:`RULES`. A dimension is
sharded only when the mesh axis divides it; otherwise it stays whole (e.g. 2 KV heads on a 4-way ``model`` axis),
so every preset runs on every mesh, if not always at its best.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from datapipe.train.model import PARAM_AXES

AXES = ("data", "fsdp", "model")
BATCH_AXES = ("data", "fsdp")
RULES: dict[str, str | None] = {
    "vocab": "model",
    "embed": "fsdp",
    "heads": "model",
    "kv_heads": "model",
    "mlp": "model",
    "layers": None,
}


def mesh_shape(sizes: Mapping[str, int], n_devices: int) -> tuple[int, int, int]:
    """Resolve ``{"data": -1, "fsdp": 2, "model": 1}`` against the device count."""
    shape = [int(sizes.get(a, 1)) for a in AXES]
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise ValueError("at most one mesh axis may be -1")
    if any(s < 1 and s != -1 for s in shape):
        raise ValueError(f"mesh sizes must be >= 1 or -1, got {dict(zip(AXES, shape, strict=True))}")
    known = int(np.prod([s for s in shape if s != -1]))
    if unknown:
        if n_devices % known:
            raise ValueError(
                f"{n_devices} devices do not divide into a mesh with {known} devices on the fixed axes"
            )
        shape[unknown[0]] = n_devices // known
    if int(np.prod(shape)) != n_devices:
        raise ValueError(
            f"mesh {dict(zip(AXES, shape, strict=True))} needs {int(np.prod(shape))} devices, have {n_devices}"
        )
    return tuple(shape)  # type: ignore[return-value]


def make_mesh(sizes: Mapping[str, int], devices: Sequence[Any] | None = None) -> Mesh:
    """A (data, fsdp, model) mesh over ``devices`` (default: all devices of all processes), in device-id order so
    that every process builds the same mesh."""
    devices = sorted(devices if devices is not None else jax.devices(), key=lambda d: d.id)
    shape = mesh_shape(sizes, len(devices))
    return Mesh(np.array(devices).reshape(shape), AXES)


def spec_for(path: str, shape: tuple[int, ...], mesh: Mesh) -> PartitionSpec:
    logical = PARAM_AXES[path]
    out = []
    for name, dim in zip(logical, shape, strict=True):
        axis = RULES.get(name) if name else None
        out.append(axis if axis and dim % mesh.shape[axis] == 0 and mesh.shape[axis] > 1 else None)
    return PartitionSpec(*out)


def param_shardings(params: Any, mesh: Mesh) -> Any:
    """NamedShardings with the same tree structure as ``params`` (arrays or ShapeDtypeStructs)."""

    def one(path, leaf):
        name = "/".join(str(getattr(k, "key", k)) for k in path)
        return NamedSharding(mesh, spec_for(name, tuple(leaf.shape), mesh))

    return jax.tree_util.tree_map_with_path(one, params)


def batch_sharding(mesh: Mesh, ndim: int) -> NamedSharding:
    return NamedSharding(mesh, PartitionSpec(BATCH_AXES, *([None] * (ndim - 1))))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, PartitionSpec())
