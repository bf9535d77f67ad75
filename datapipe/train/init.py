"""Where a new run's parameters come from (``init_from``): random (the default), a Hugging Face Llama folder
(``hf:DIR``), or another run's checkpoint (``run:DIR`` for its latest, ``run:DIR@STEP``).

Only parameters are taken: the optimizer starts anew and the run counts its steps from 0 (continued pretraining on
a new mixture, as Levanter's ``initialize_from_hf`` does). The model's shape is the source's; a run may still set
what does not change a shape (``compute_dtype``, ``remat``). Because an export and an import are exact reshapings
in float32, ``hf:`` of a run's export and ``run:`` of the same checkpoint train to the same bits (tested).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields
from typing import Any

from datapipe.errors import ConfigError, DatapipeError
from datapipe.io import fs
from datapipe.train.model import ModelConfig, RopeScaling

RUN_FILE = "run.json"


@dataclass(frozen=True)
class InitFrom:
    kind: str  # "hf" | "run"
    path: str
    step: int | None = None  # run: a checkpoint step (None: the latest)

    @classmethod
    def parse(cls, spec: str, file: str = "<command line>") -> InitFrom:
        kind, sep, rest = spec.partition(":")
        if not sep or kind not in ("hf", "run") or not rest:
            raise ConfigError(
                file, "init_from", f"{spec!r}: expected hf:DIR (a Hugging Face folder) or run:DIR[@STEP]"
            )
        if kind == "run" and "@" in rest:
            path, _, step = rest.rpartition("@")
            if not step.isdigit():
                raise ConfigError(file, "init_from", f"{spec!r}: the step after @ must be a number")
            return cls(kind, path, int(step))
        return cls(kind, rest)


def model_from_dict(doc: dict[str, Any]) -> ModelConfig:
    """A model config as ``run.json`` holds it (``dataclasses.asdict``), tolerant of fields added since."""
    known = {f.name for f in fields(ModelConfig)}
    spec = {k: v for k, v in doc.items() if k in known}
    if isinstance(spec.get("rope_scaling"), dict):
        spec["rope_scaling"] = RopeScaling(**spec["rope_scaling"])
    return ModelConfig(**spec)


def read_run(run_dir: str) -> dict[str, Any]:
    path = os.path.join(run_dir, RUN_FILE)
    if not fs.exists(path):
        raise DatapipeError(f"{run_dir}: no {RUN_FILE}: not a datapipe train run folder")
    return dict(json.loads(fs.read_text(path)))


def has_checkpoint(run_dir: str) -> bool:
    """Whether a run folder has a run.json and a checkpoint: a run that has started (its source no longer needed)."""
    checkpoints = os.path.join(run_dir, "checkpoints")
    return (
        fs.exists(os.path.join(run_dir, RUN_FILE))
        and os.path.isdir(checkpoints)
        and any(name.isdigit() for name in os.listdir(checkpoints))
    )


def source_model(init: InitFrom) -> ModelConfig:
    """The model config of the source (its shape fixes the run's)."""
    if init.kind == "hf":
        from datapipe.train.hf import read_llama_config

        return read_llama_config(init.path)
    return model_from_dict(read_run(init.path)["model"])


def load_params(init: InitFrom, cfg: ModelConfig, abstract_params: Any) -> Any:
    """The source's parameters placed as ``abstract_params`` says (shapes and shardings). From a run: restored
    straight onto those shardings (each host reads its own shards). From a Hugging Face folder: read and placed one
    parameter at a time, so a host holds one parameter on top of its shards."""
    from datapipe.train.model import param_paths

    if init.kind == "run":
        from datapipe.train.checkpoint import restore_run_params

        return restore_run_params(init.path, init.step, cfg, target=abstract_params)[1]
    from datapipe.train.hf import iter_weights

    target = param_paths(abstract_params)
    out: dict[str, Any] = {}
    for path, host in iter_weights(init.path, cfg):
        want = target[path]
        if host.shape != want.shape:
            raise DatapipeError(
                f"{init.kind}:{init.path}: {path} has shape {host.shape}, the model {want.shape}"
            )
        head, _, leaf = path.partition("/")
        if leaf:
            out.setdefault(head, {})[leaf] = _place(host, want)
        else:
            out[head] = _place(host, want)
        del host
    return out


def _place(host: Any, want: Any) -> Any:
    """A host array as a global ``jax.Array`` with ``want``'s shape, dtype and sharding: each of this host's
    devices copies its own slice of it."""
    import jax

    return jax.make_array_from_callback(
        want.shape, want.sharding, lambda index: host[index].astype(want.dtype)
    )
