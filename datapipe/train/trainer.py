"""The training loop: mesh, sharded state, one jitted step, the mixture loader, checkpoints, metrics, phases.

Resuming is automatic: the latest complete checkpoint in ``run_dir/checkpoints`` gives the state and the step, and
the loader needs only the step. On CPU, a run resumed at step k reproduces the uninterrupted run bit for bit.
SIGTERM (a preemption notice) finishes the current step, writes a checkpoint, and returns with status
``preempted`` (the CLI exits 0); Ctrl-C does the same with status ``interrupted`` (the CLI exits 130).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import PartitionSpec

from datapipe.data.loader import MixtureLoader
from datapipe.data.mixing import Phase, manifest_phases
from datapipe.errors import ConfigError, DatapipeError
from datapipe.io import fs
from datapipe.store.manifest import MANIFEST, Manifest, load_manifest
from datapipe.train.checkpoint import Checkpoints, abstract_like
from datapipe.train.config import TrainConfig
from datapipe.train.hf import check_fits
from datapipe.train.init import RUN_FILE, InitFrom, has_checkpoint, load_params, model_from_dict, read_run
from datapipe.train.metrics import MetricsLog, console_line, device_peak_tflops
from datapipe.train.model import (
    HOST_OFFLOAD_POLICIES,
    ModelConfig,
    check_loss_chunk,
    init_params,
    loss_sums,
)
from datapipe.train.optim import make_optimizer
from datapipe.train.sharding import BATCH_AXES, batch_sharding, make_mesh, param_shardings, replicated


@dataclass
class TrainResult:
    status: str  # "finished" | "stopped" | "preempted" (SIGTERM) | "interrupted" (Ctrl-C)
    step: int
    losses: dict[int, float] = field(default_factory=dict)
    run_dir: str = ""


# The platforms whose devices run the host-offload options (the optimizer's moments, the MLP's activations in the
# host's memory): JAX moves arrays between a TPU's memory and its host's inside a step. A GPU or CPU is refused.
HOST_OFFLOAD_PLATFORMS = ("tpu",)


def check_device_options(cfg: TrainConfig, model: ModelConfig, platform: str, seq_len: int) -> None:
    """One line for an option these devices cannot run, before anything is built."""
    if platform not in HOST_OFFLOAD_PLATFORMS:
        if model.remat in HOST_OFFLOAD_POLICIES:
            raise ConfigError(
                "<train config>",
                "model.remat",
                f"{model.remat} keeps activations in the host's memory, which only a TPU does here (these "
                f"devices are {platform}): use attention",
            )
        if cfg.optimizer.offload:
            raise ConfigError(
                "<train config>",
                "optimizer.offload",
                f"keeping the optimizer's moments in the host's memory needs a TPU (these devices are "
                f"{platform}): use optimizer.moment_dtype=bfloat16 to halve them instead",
            )
    try:
        check_loss_chunk(model.loss_chunk, seq_len)
    except ValueError as e:
        raise ConfigError("<train config>", "model.loss_chunk", str(e)) from None


def manifest_url(path: str) -> str:
    return path if path.endswith(".json") else fs.join(path, MANIFEST)


def loader_phases(cfg: TrainConfig, manifest: Manifest) -> list[Phase]:
    """The manifest's weights and schedule, then the run's phases (weights and/or batch size from a step on)."""
    return manifest_phases(
        manifest, cfg.global_batch, [(p.step, p.weights, p.global_batch) for p in cfg.phases]
    )


class Trainer:
    def __init__(self, cfg: TrainConfig, mesh=None, peak_tflops: float | None = None, verbose: bool = True):
        self.cfg, self.verbose = cfg, verbose
        self.manifest_url = manifest_url(cfg.mixture)
        self.manifest = load_manifest(self.manifest_url)
        self.model: ModelConfig = cfg.model.with_vocab(self.manifest.tokenizer.vocab_size)
        self.seq_len = int(cfg.seq_len or self.manifest.seq_len)
        self.mesh = mesh if mesh is not None else make_mesh(cfg.mesh)
        self.is_main = jax.process_index() == 0
        check_device_options(cfg, self.model, self.mesh.devices.flat[0].platform, self.seq_len)
        self.phases = loader_phases(cfg, self.manifest)
        rows_shards = int(np.prod([self.mesh.shape[a] for a in BATCH_AXES]))
        for ph in self.phases:
            mb = cfg.microbatch or ph.batch_size
            if ph.batch_size % mb or mb % rows_shards:
                raise ConfigError(
                    "<train config>",
                    "microbatch",
                    f"batch {ph.batch_size} (from step {ph.start_step}) must split into microbatches of {mb}, "
                    f"each divisible by the {rows_shards} data-parallel shards",
                )
        self.loader = MixtureLoader(
            self.manifest_url,
            self.seq_len,
            cfg.global_batch,
            cfg.seed,
            self.mesh,
            phases=self.phases,
            block_size=cfg.loader.block_size,
            packing=cfg.loader.packing,
            prefetch=cfg.loader.prefetch,
            batch_axes=BATCH_AXES,
            holdout=cfg.validation.holdout,
        )
        self.optimizer, self.schedule = make_optimizer(cfg.optimizer, cfg.phases, cfg.steps)
        key = jax.random.PRNGKey(cfg.seed)
        abstract_params = jax.eval_shape(lambda k: init_params(self.model, k), key)
        p_shard = param_shardings(abstract_params, self.mesh)
        abstract_opt = jax.eval_shape(self.optimizer.init, abstract_params)
        o_shard = optax.tree_map_params(
            self.optimizer,
            lambda _, s: s,
            abstract_opt,
            p_shard,
            transform_non_params=lambda _: replicated(self.mesh),
        )
        # optimizer.offload: the moments live in the host's memory between steps, and each step brings them to
        # the chip for the update once the gradients are done (so they take no room while the activations do)
        self.opt_device_shardings = o_shard
        if cfg.optimizer.offload:
            o_shard = optax.tree_map_params(
                self.optimizer,
                lambda _, s: s.with_memory_kind("pinned_host"),
                abstract_opt,
                p_shard,
                transform_non_params=lambda _: replicated(self.mesh),
            )
        self.state_shardings = {"params": p_shard, "opt": o_shard, "step": replicated(self.mesh)}
        abstract = {
            "params": abstract_params,
            "opt": abstract_opt,
            "step": jax.ShapeDtypeStruct((), jnp.int32),
        }
        self.abstract_state = abstract_like(abstract, self.state_shardings)
        self._init = jax.jit(self._init_state, out_shardings=self.state_shardings)
        self._steps: dict[int, Any] = {}
        self._live: tuple[int, Any] | None = None
        self.peak = device_peak_tflops(self.mesh.devices.flat[0], peak_tflops)
        self.flops_per_token = self.model.flops_per_token(self.seq_len)
        self.activation_sharding = jax.sharding.NamedSharding(
            self.mesh, PartitionSpec(BATCH_AXES, None, None)
        )
        if self.cfg.init_from is not None and not has_checkpoint(cfg.run_dir):
            self.check_init_from()  # a run that has started resumes from its own checkpoints, not the source

    # --- state and step ------------------------------------------------------------------------------------
    def _init_state(self, key):
        params = init_params(self.model, key)
        return {"params": params, "opt": self.optimizer.init(params), "step": jnp.zeros((), jnp.int32)}

    def init_state(self):
        if self.cfg.init_from is None:
            return self._init(jax.random.PRNGKey(self.cfg.seed))
        params = load_params(InitFrom.parse(self.cfg.init_from), self.model, self.abstract_state["params"])
        start = jax.jit(
            lambda p: {"params": p, "opt": self.optimizer.init(p), "step": jnp.zeros((), jnp.int32)},
            out_shardings=self.state_shardings,
        )
        return start(params)

    def check_init_from(self) -> None:
        """Refuse, before any step, a source whose tokens are not the mixture's or whose vocabulary is too small."""
        if self.cfg.init_from is None:
            return
        init = InitFrom.parse(self.cfg.init_from)
        if init.kind == "hf":
            check_fits(self.model, init.path, self.manifest)
            return
        source = load_manifest(manifest_url(str(read_run(init.path)["manifest"]))).tokenizer
        ours = self.manifest.tokenizer
        if source.sha256 != ours.sha256:
            raise DatapipeError(
                f"init_from {self.cfg.init_from}: that run's tokenizer ({source.name}, sha256 "
                f"{source.sha256[:12]}) is not this mixture's ({ours.name}, {ours.sha256[:12]})"
            )

    def _train_step(self, state, batch, accum: int):
        cfg = self.cfg
        grad_fn = jax.value_and_grad(
            lambda p, b: loss_sums(p, b, self.model, cfg.optimizer.z_loss, self.activation_sharding),
            has_aux=True,
        )
        params = state["params"]
        if accum == 1:
            (_, (ce, count)), grads = grad_fn(params, batch)
        else:
            micro_spec = jax.sharding.NamedSharding(self.mesh, PartitionSpec(None, BATCH_AXES, None))

            def split(x):  # rows i*accum + a go to microbatch a: each device keeps its own rows
                x = x.reshape(x.shape[0] // accum, accum, *x.shape[1:]).swapaxes(0, 1)
                return jax.lax.with_sharding_constraint(x, micro_spec)

            micro = jax.tree.map(split, batch)

            def body(carry, mb):
                g_acc, ce_acc, n_acc = carry
                (_, (ce_mb, n_mb)), g = grad_fn(params, mb)
                return (jax.tree.map(jnp.add, g_acc, g), ce_acc + ce_mb, n_acc + n_mb), None

            zeros = jax.tree.map(jnp.zeros_like, params)
            (grads, ce, count), _ = jax.lax.scan(body, (zeros, 0.0, 0.0), micro)
        count = jnp.maximum(count, 1.0)
        grads = jax.tree.map(lambda g: g / count, grads)
        opt_state = state["opt"]
        if cfg.optimizer.offload:
            # to the chip only after the gradients exist: the barrier ties the copy to them
            opt_state, grads = jax.lax.optimization_barrier((opt_state, grads))
            opt_state = jax.device_put(opt_state, self.opt_device_shardings)
        updates, opt_state = self.optimizer.update(grads, opt_state, params)
        new = {"params": optax.apply_updates(params, updates), "opt": opt_state, "step": state["step"] + 1}
        metrics = {
            "loss": ce / count,
            "grad_norm": optax.global_norm(grads),
            "lr": self.schedule(state["step"]),
            "tokens": count,
        }
        return new, metrics

    def step_fn(self, batch_size: int):
        mb = self.cfg.microbatch or batch_size
        accum = batch_size // mb
        if accum not in self._steps:
            b_shard = {"input_ids": batch_sharding(self.mesh, 2), "segment_ids": batch_sharding(self.mesh, 2)}
            self._steps[accum] = jax.jit(
                lambda s, b: self._train_step(s, b, accum),
                in_shardings=(self.state_shardings, b_shard),
                out_shardings=(self.state_shardings, replicated(self.mesh)),
                donate_argnums=0,
            )
        return self._steps[accum]

    def compile_step(self, batch_size: int) -> jax.stages.Compiled:
        """The step at ``batch_size``, compiled ahead of time: what XLA plans for it (:meth:`memory_analysis`) and
        its HLO, before a step runs."""
        b = jax.ShapeDtypeStruct((batch_size, self.seq_len), jnp.int32, sharding=batch_sharding(self.mesh, 2))
        return (
            self.step_fn(batch_size).lower(self.abstract_state, {"input_ids": b, "segment_ids": b}).compile()
        )

    def memory_analysis(self, batch_size: int) -> dict[str, int]:
        """What XLA plans for one step at ``batch_size`` (bytes: arguments, outputs, temporaries, and those in the
        host's memory), from compiling the step ahead of time."""
        stats = self.compile_step(batch_size).memory_analysis()
        names = ("argument", "output", "alias", "temp")
        out = {f"{n}_bytes": int(getattr(stats, f"{n}_size_in_bytes", 0) or 0) for n in names}
        out.update({f"host_{n}_bytes": int(getattr(stats, f"host_{n}_size_in_bytes", 0) or 0) for n in names})
        return out

    def drop_state(self) -> None:
        """Forget the state this trainer holds from its last ``train``: the next one starts from the latest
        checkpoint (and the device's memory holds one state, not two)."""
        self._live, self.final_state = None, None

    # --- validation ----------------------------------------------------------------------------------------
    def _validation(self):
        v = self.cfg.validation
        if not v.components:
            return None
        loaders = {
            name: MixtureLoader(
                self.manifest_url,
                self.seq_len,
                v.global_batch,
                self.cfg.seed + 1,
                self.mesh,
                phases=[Phase(0, {name: 1.0}, v.global_batch)],
                batch_axes=BATCH_AXES,
                prefetch=0,
                packing=self.cfg.loader.packing,  # the split is of the training layout's sequences
                holdout=v.holdout,
                split="heldout" if v.holdout else "train",
            )
            for name in v.components
        }
        b_shard = {"input_ids": batch_sharding(self.mesh, 2), "segment_ids": batch_sharding(self.mesh, 2)}
        evaluate = jax.jit(
            lambda p, b: loss_sums(p, b, self.model, 0.0, self.activation_sharding)[1],
            in_shardings=(self.state_shardings["params"], b_shard),
        )

        def run(params) -> dict[str, float]:
            out = {}
            for name, loader in loaders.items():
                ce = n = 0.0
                for i in range(v.batches):
                    b = loader.batch(i)
                    c, k = evaluate(params, {"input_ids": b["input_ids"], "segment_ids": b["segment_ids"]})
                    ce, n = ce + float(c), n + float(k)
                out[name] = ce / max(n, 1.0)
            return out

        return run

    # --- the loop ------------------------------------------------------------------------------------------
    def write_run_file(self) -> None:
        if not self.is_main:
            return
        os.makedirs(self.cfg.run_dir, exist_ok=True)
        doc = {
            "config": self.cfg.to_dict(),
            "model": asdict(self.model),
            "seq_len": self.seq_len,
            "manifest": os.path.abspath(self.manifest_url),
            "manifest_sha256": hashlib.sha256(fs.read_bytes(self.manifest_url)).hexdigest(),
            "phases": [
                {"step": p.start_step, "weights": dict(p.weights), "global_batch": p.batch_size}
                for p in self.phases
            ],
            "mesh": dict(self.mesh.shape),
            "processes": jax.process_count(),
            "devices": [str(d) for d in self.mesh.devices.flat],
            "params": self.model.num_params(),
            "heldout": {c["name"]: c["heldout"] for c in self.loader.describe()},
            "flops_per_token": self.flops_per_token,
        }
        fs.write_text_atomic(
            os.path.join(self.cfg.run_dir, RUN_FILE), json.dumps(doc, indent=2, sort_keys=True) + "\n"
        )

    def check_same_run(self) -> None:
        """Refuse to resume a run folder whose run was trained on another manifest or with another model shape:
        restoring would fail deep in the checkpoint library (shapes) or, worse, go on with other data."""
        path = os.path.join(self.cfg.run_dir, RUN_FILE)
        if not fs.exists(path):
            return
        old = json.loads(fs.read_text(path))
        sha = hashlib.sha256(fs.read_bytes(self.manifest_url)).hexdigest()
        problems = []
        if old.get("manifest_sha256") not in (None, sha):
            problems.append(f"manifest {old.get('manifest', '?')} (sha256 {old['manifest_sha256'][:12]})")
        model = json.loads(json.dumps(asdict(self.model)))  # as run.json holds it (tuples become lists)
        if old.get("model") is not None:
            # fields added since the run began read as their defaults
            was = json.loads(json.dumps(asdict(model_from_dict(old["model"]))))
            changed = sorted(k for k in model.keys() | was.keys() if was.get(k) != model.get(k))
            if changed:
                problems.append(f"model ({', '.join(changed)} differ)")
        heldout = {c["name"]: c["heldout"] for c in self.loader.describe()}
        was_held = {name: old.get("heldout", {}).get(name, 0) for name in heldout}
        if "model" in old and was_held != heldout:
            problems.append(
                f"held-out rows (validation.holdout: {sum(was_held.values())} sequences then, "
                f"{sum(heldout.values())} now; a run from before held-out rows existed needs validation.holdout=0)"
            )
        was_init = old.get("config", {}).get("init_from")
        if "model" in old and was_init != self.cfg.init_from:
            problems.append(f"init_from ({was_init or 'none'} then, {self.cfg.init_from or 'none'} now)")
        if problems:
            raise DatapipeError(
                f"{self.cfg.run_dir}: its checkpoints are of another run: {'; '.join(problems)}; give another "
                "--run-dir, or --fresh to start this run anew there"
            )

    def train(self, until: int | None = None) -> TrainResult:
        cfg = self.cfg
        last = min(cfg.steps, until) if until is not None else cfg.steps
        ckpt = Checkpoints(os.path.join(cfg.run_dir, "checkpoints"), cfg.checkpoint)
        start = ckpt.latest_step()
        if start is not None and self._live is None:
            self.check_same_run()
        if self._live is not None and (start is None or self._live[0] >= start):
            start, state = self._live  # this trainer's own state, from an earlier train(until=...)
        elif start is None:
            state, start = self.init_state(), 0
        else:
            state = ckpt.restore(start, self.abstract_state)
        self._live = None
        self.write_run_file()
        log = MetricsLog(os.path.join(cfg.run_dir, "metrics.jsonl"), start, enabled=self.is_main)
        validate = self._validation()
        stop: dict[str, int | None] = {"signal": None}
        # SIGTERM (a preemption notice) and Ctrl-C both end the run after this step, with a checkpoint
        previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
        for s in previous:
            signal.signal(s, lambda signum, frame: stop.__setitem__("signal", signum))
        if self.verbose and self.is_main:
            print(
                f"train: {self.model.name} ({self.model.num_params() / 1e6:.1f}M params) on mesh "
                f"{dict(self.mesh.shape)}, seq_len {self.seq_len}, steps {start}..{last} of {cfg.steps}"
                + (f" (resumed from checkpoint {start})" if start else ""),
                flush=True,
            )
        result = TrainResult("finished" if last == cfg.steps else "stopped", start, run_dir=cfg.run_dir)
        if start >= last and self.verbose and self.is_main:
            print(
                f"train: the run is already at step {start}; nothing to do (raise --steps to go on)",
                flush=True,
            )
        batches = self.loader.iter_from(start, last)
        t_last, tokens_since = time.perf_counter(), 0
        try:
            for step in range(start, last):
                batch = next(batches)
                comp = batch.pop("component")
                size = int(batch["input_ids"].shape[0])
                state, metrics = self.step_fn(size)(state, batch)
                done = step + 1
                tokens_since += size * self.seq_len
                if done % cfg.log_every == 0 or done == last or stop["signal"]:
                    m = jax.device_get(metrics)
                    now = time.perf_counter()
                    tps = tokens_since / max(now - t_last, 1e-9)
                    t_last, tokens_since = now, 0
                    counts = np.bincount(self._components(step, comp), minlength=len(self.loader.components))
                    loss = float(m["loss"])
                    record = {
                        "step": done,
                        "loss": loss,
                        "lr": float(m["lr"]),
                        "grad_norm": float(m["grad_norm"]),
                        "batch": size,
                        "tokens_per_s": tps,
                        "mfu": tps * self.flops_per_token / (self.peak[0] * 1e12 * self.mesh.devices.size),
                        "components": {
                            n: int(c) for n, c in zip(self.loader.components, counts, strict=True) if c
                        },
                    }
                    if (
                        validate
                        and cfg.validation.every
                        and (done % cfg.validation.every == 0 or done == last)
                    ):
                        record["val_loss"] = validate(state["params"])
                    result.losses[done] = loss
                    log.write(record)
                    if self.verbose and self.is_main:
                        print(console_line(record), flush=True)
                # Saved only after this step's metrics line is written: a checkpoint that commits before its
                # line would resume past a step the log never recorded.
                ckpt.maybe_save(done, state)
                result.step = done
                if stop["signal"]:
                    result.status = "interrupted" if stop["signal"] == signal.SIGINT else "preempted"
                    break
            if cfg.checkpoint.at_exit or result.status in ("preempted", "interrupted"):
                ckpt.save_now(result.step, state)
        finally:
            batches.close()
            ckpt.close()
            for s, handler in previous.items():
                signal.signal(s, handler)
        self.final_state = state
        self._live = (result.step, state)
        if self.verbose and self.is_main:
            print(f"train: {result.status} at step {result.step}; checkpoints {ckpt.all_steps()}", flush=True)
        return result

    def _components(self, step: int, comp) -> np.ndarray:
        """The component of every row of this step's batch: read from the batch when this process holds all of
        it, else from the loader's plan (the same by construction)."""
        if comp.is_fully_addressable:
            return np.asarray(comp)
        return self.loader.plan(step)[0]


def restore_params(cfg: TrainConfig, step: int | None = None, mesh=None) -> tuple[int, Any]:
    """(step, params) of a run's checkpoint (the latest by default) on ``mesh`` (default: this config's)."""
    trainer = Trainer(cfg, mesh=mesh, verbose=False, peak_tflops=1.0)
    ckpt = Checkpoints(os.path.join(cfg.run_dir, "checkpoints"), cfg.checkpoint)
    try:
        step = ckpt.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"{cfg.run_dir}: no checkpoint")
        return step, ckpt.restore(step, trainer.abstract_state)["params"]
    finally:
        ckpt.close()
