"""Training run configuration: a YAML file and/or command-line overrides, checked against
``schemas/train.schema.json``, then frozen dataclasses.

Overrides are ``dotted.key=value`` with YAML values (``optimizer.lr=1e-3``, ``mesh.model=2``,
``phases=[{step: 100, global_batch: 16}]``); they apply over the file, which applies over the defaults.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from datapipe.config.env import expand_tree
from datapipe.config.schema import validate
from datapipe.config.yamlio import load_yaml
from datapipe.errors import ConfigError, DatapipeError
from datapipe.io import fs
from datapipe.train.model import PRESETS, ModelConfig, RopeScaling
from datapipe.train.settings import CheckpointConfig


@dataclass(frozen=True)
class LrSchedule:
    """``cosine``: warmup, then cosine decay to ``min_lr_ratio * lr`` at the phase's end. ``wsd`` (warmup-stable-
    decay, as Marin trained): warmup, constant, then linear decay over the last ``decay_steps`` (default 20% of the
    phase). ``constant``: warmup, then constant."""

    lr: float = 3e-4
    schedule: str = "cosine"
    warmup_steps: int = 0
    decay_steps: int | None = None
    min_lr_ratio: float = 0.1


@dataclass(frozen=True)
class OptimizerConfig:
    lr: LrSchedule = field(default_factory=LrSchedule)
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    grad_clip: float = 1.0
    z_loss: float = 0.0
    decay_embeddings: bool = False
    moment_dtype: str = "float32"  # float32 | bfloat16: AdamW's two moments (bf16 halves the optimizer state)
    offload: bool = False  # keep the moments in the host's memory between steps (TPU only)


@dataclass(frozen=True)
class LoaderSettings:
    block_size: int = 2048
    packing: str = "concat"
    prefetch: int = 2


@dataclass(frozen=True)
class ValidationConfig:
    """Validation losses during training, on the held-out rows: ``holdout`` sequences of each component (at most a
    tenth of it; chosen by the manifest's seed, the same for every run) never enter a training batch, and
    ``datapipe eval`` measures them all. ``components``/``every``/``batches`` set the trainer's periodic check."""

    holdout: int = 64
    components: tuple[str, ...] = ()
    every: int = 0
    batches: int = 2
    global_batch: int = 8


@dataclass(frozen=True)
class PhaseConfig:
    """From ``step`` on: new mixture weights, global batch size and/or learning-rate schedule (unset: unchanged)."""

    step: int
    weights: dict[str, float] | None = None
    global_batch: int | None = None
    lr: LrSchedule | None = None


@dataclass(frozen=True)
class TrainConfig:
    mixture: str
    model: ModelConfig
    steps: int
    run_dir: str
    seed: int = 0
    seq_len: int | None = None  # default: the manifest's
    global_batch: int = 8
    microbatch: int | None = None  # rows per gradient-accumulation microbatch; default: the whole batch
    mesh: dict[str, int] = field(default_factory=lambda: {"data": -1, "fsdp": 1, "model": 1})
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    loader: LoaderSettings = field(default_factory=LoaderSettings)
    validation: ValidationConfig = field(default_factory=ValidationConfig)
    log_every: int = 1
    phases: tuple[PhaseConfig, ...] = ()
    init_from: str | None = None  # hf:DIR | run:DIR[@STEP]: the parameters a new run starts from

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(asdict(self)))


def _set(doc: dict, dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = doc
    for k in keys[:-1]:
        node = node.setdefault(k, {})
        if not isinstance(node, dict):
            raise ConfigError("<overrides>", dotted, f"{k!r} is not a mapping")
    node[keys[-1]] = value


def parse_overrides(items: list[str]) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError("<overrides>", item, "expected key=value")
        key, raw = item.split("=", 1)
        _set(doc, key.strip(), load_yaml(raw))
    return doc


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _model(spec: Any, file: str, init_from: str | None = None, run_dir: str | None = None) -> ModelConfig:
    """The model: a preset with fields changed, fields alone, or (``init_from``) the source's shape with the run's
    settings that change no shape. A run that started from a source and has checkpoints takes the shape from its
    own ``run.json``: resuming needs the run, not the source (which may be gone by then)."""
    if spec is None and init_from is None:
        raise ConfigError(
            file, "model", "missing: a preset (" + ", ".join(PRESETS) + "), its fields, or init_from: hf:DIR"
        )
    spec = {"preset": spec} if isinstance(spec, str) else dict(spec or {})
    if isinstance(spec.get("rope_scaling"), dict):
        spec["rope_scaling"] = RopeScaling(**spec["rope_scaling"])
    if init_from is not None:
        from datapipe.train.hf import with_shape_of
        from datapipe.train.init import InitFrom, has_checkpoint, model_from_dict, read_run, source_model

        if "preset" in spec:
            raise ConfigError(file, "model", f"the shape comes from init_from {init_from}: drop the preset")
        try:
            init = InitFrom.parse(init_from, file)
            if run_dir is not None and has_checkpoint(run_dir):
                return with_shape_of(model_from_dict(read_run(run_dir)["model"]), spec)
            return with_shape_of(source_model(init), spec)
        except DatapipeError as e:
            raise ConfigError(file, "init_from", str(e)) from None
    name = spec.pop("preset", None)
    if name is None:
        base = ModelConfig("custom", 0, 0, 1, 1, 0)
    elif name in PRESETS:
        base = PRESETS[name]
    else:
        raise ConfigError(file, "model", f"unknown preset {name!r} (presets: {', '.join(PRESETS)})")
    cfg = replace(base, **spec)
    if cfg.d_model < 1 or cfg.n_layers < 1 or cfg.d_ff < 1:
        raise ConfigError(
            file, "model", "d_model, n_layers and d_ff must be >= 1 (give a preset or all of them)"
        )
    if cfg.n_heads % cfg.n_kv_heads:
        raise ConfigError(file, "model.n_kv_heads", f"{cfg.n_kv_heads} does not divide n_heads={cfg.n_heads}")
    return cfg


def _lr(doc: dict | None) -> LrSchedule | None:
    return None if doc is None else LrSchedule(**doc)


def load_train_config(path: str | None, overrides: dict[str, Any]) -> TrainConfig:
    """The run config from an optional YAML file plus overrides (already a nested dict)."""
    file = path or "<command line>"
    doc: dict[str, Any] = {}
    if path:
        loaded = load_yaml(fs.read_text(path)) or {}
        if not isinstance(loaded, dict):
            raise ConfigError(path, "", "expected a mapping at the top level")
        doc = expand_tree(loaded, file=path)
    doc = _merge(doc, overrides)
    validate(doc, "train", file=file)
    opt = dict(doc.get("optimizer", {}))
    lr = _lr(opt.pop("lr", None)) or LrSchedule()
    val = dict(doc.get("validation", {}))
    val["components"] = tuple(val.get("components", ()))
    phases = tuple(
        PhaseConfig(p["step"], p.get("weights"), p.get("global_batch"), _lr(p.get("lr")))
        for p in sorted(doc.get("phases", []), key=lambda p: p["step"])
    )
    simple = {f.name for f in fields(TrainConfig)} - {
        "model",
        "optimizer",
        "checkpoint",
        "loader",
        "validation",
        "phases",
    }
    return TrainConfig(
        model=_model(doc.get("model"), file, doc.get("init_from"), doc.get("run_dir")),
        optimizer=OptimizerConfig(lr=lr, **opt),
        checkpoint=CheckpointConfig(**doc.get("checkpoint", {})),
        loader=LoaderSettings(**doc.get("loader", {})),
        validation=ValidationConfig(**val),
        phases=phases,
        **{k: v for k, v in doc.items() if k in simple},
    )
