"""The trainer on CPU with 8 fake devices: bit-identical resume, meshes, phases, SIGTERM, two processes, the model's
document masking, schedules and config errors."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import jax
import numpy as np
import pytest

from datapipe import ConfigError, Trainer, load_train_config, parse_overrides
from datapipe.train.metrics import read_metrics
from datapipe.train.sharding import make_mesh
from datapipe.train.trainer import restore_params
from tests.conftest import REPO

pytestmark = pytest.mark.skipif(
    jax.device_count() < 8, reason="needs XLA_FLAGS with 8 fake CPU devices (conftest)"
)

BASE = ["seq_len=64", "global_batch=8", "mesh.data=2", "mesh.fsdp=2", "mesh.model=2", "checkpoint.every=5"]


@pytest.fixture(scope="module")
def manifest(built_small) -> str:
    return str(built_small[0] / "mixture.json")


def config(manifest: str, run_dir: Path, *overrides: str, steps: int = 20):
    over = parse_overrides([*BASE, *overrides])
    over.update(mixture=manifest, model="tiny", steps=steps, run_dir=str(run_dir))
    return load_train_config(None, over)


def params_equal(a, b) -> bool:
    return all(
        np.array_equal(np.asarray(x), np.asarray(y))
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


@pytest.fixture(scope="module")
def straight(manifest, tmp_path_factory):
    """20 steps from scratch on a (2, 2, 2) mesh."""
    cfg = config(manifest, tmp_path_factory.mktemp("straight"), "checkpoint.keep_every=10")
    trainer = Trainer(cfg, verbose=False)
    result = trainer.train()
    # every 5 steps, the last 2 kept, plus every 10th
    assert sorted(int(p.name) for p in (Path(cfg.run_dir) / "checkpoints").iterdir()) == [10, 15, 20]
    return cfg, result, trainer.final_state["params"]


def test_resumed_run_is_bit_identical(manifest, straight, tmp_path):
    _, full, params = straight
    cfg = config(manifest, tmp_path)
    first = Trainer(cfg, verbose=False).train(until=10)
    assert first.status == "stopped" and first.step == 10
    second = Trainer(cfg, verbose=False)
    rest = second.train()
    assert rest.status == "finished" and min(rest.losses) == 11
    losses = {**first.losses, **rest.losses}
    assert losses == full.losses  # exact floats
    assert params_equal(second.final_state["params"], params)
    assert [r["step"] for r in read_metrics(str(tmp_path / "metrics.jsonl"))] == list(range(1, 21))
    assert full.losses[20] < full.losses[1]


def test_checkpoint_restores_on_other_meshes(straight):
    cfg, _, params = straight
    for shape, devices in (
        ({"data": 4, "fsdp": 2, "model": 1}, None),
        ({"data": 1, "fsdp": 1, "model": 1}, 1),
    ):
        mesh = make_mesh(shape, jax.devices()[:devices] if devices else None)
        step, restored = restore_params(replace(cfg, mesh=shape), mesh=mesh)
        assert step == 20 and params_equal(restored, params)
        leaf = restored["layers"]["w_up"]
        assert leaf.sharding.mesh.shape == mesh.shape
    # and training continues on the new mesh
    moved = replace(cfg, mesh={"data": 4, "fsdp": 2, "model": 1}, steps=22)
    result = Trainer(moved, verbose=False).train()
    assert sorted(result.losses) == [21, 22]


def test_phase_change_of_weights_and_batch_size_is_exact(manifest, tmp_path):
    names = ["web", "code", "prose"]
    cfg = config(
        manifest,
        tmp_path,
        "microbatch=4",
        "checkpoint.every=0",
        "phases=[{step: 3, weights: {code: 1}, global_batch: 16}, {step: 5, weights: {web: 1, prose: 1}}]",
        "validation={components: [prose, code], every: 3, batches: 1, global_batch: 8}",
        "optimizer.z_loss=1e-4",
        steps=7,
    )
    trainer = Trainer(cfg, verbose=False)
    trainer.train()
    records = {r["step"]: r for r in read_metrics(str(tmp_path / "metrics.jsonl"))}
    for step in (1, 2, 3):
        assert records[step]["batch"] == 8 and set(records[step]["components"]) - {"code"}
    for step in (4, 5):
        assert records[step]["batch"] == 16 and records[step]["components"] == {"code": 16}
    for step in (6, 7):
        assert records[step]["batch"] == 16 and set(records[step]["components"]) <= {"web", "prose"}
    assert set(names) >= set().union(*(r["components"] for r in records.values()))
    # validation every 3 steps and at the end, on each named component
    assert [s for s, r in records.items() if "val_loss" in r] == [3, 6, 7]
    assert set(records[7]["val_loss"]) == {"prose", "code"} and all(
        v > 0 for v in records[7]["val_loss"].values()
    )
    # the data position is the sum of the earlier batch sizes
    assert trainer.loader.schedule.offset(5) == 3 * 8 + 2 * 16


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _train_cmd(manifest: str, run_dir: Path, steps: int, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "datapipe.cli",
        "train",
        "--mixture",
        manifest,
        "--model",
        "tiny",
        "--steps",
        str(steps),
        "--run-dir",
        str(run_dir),
        "--peak-tflops",
        "1",
        *extra,
        *BASE,
    ]


def test_sigterm_checkpoints_and_the_run_resumes(manifest, tmp_path):
    run = tmp_path / "run"
    cmd = _train_cmd(manifest, run, 400, "--devices", "8", "checkpoint.every=0", "checkpoint.at_exit=false")
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    metrics = run / "metrics.jsonl"
    deadline = time.time() + 240
    while time.time() < deadline and (not metrics.exists() or len(metrics.read_text().splitlines()) < 3):
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out[-3000:]
    assert "preempted at step" in out
    stopped = int(out.split("preempted at step")[1].split(";")[0])
    assert 3 <= stopped < 400 and (run / "checkpoints" / str(stopped)).is_dir()
    again = subprocess.run(
        _train_cmd(manifest, run, 400, "--devices", "8", "--until", str(stopped + 2), "checkpoint.every=0"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"resumed from checkpoint {stopped}" in again.stdout
    assert [r["step"] for r in read_metrics(str(metrics))][-2:] == [stopped + 1, stopped + 2]


def test_two_processes_give_the_same_losses_as_one(manifest, tmp_path):
    one = subprocess.run(
        _train_cmd(manifest, tmp_path / "one", 6, "--devices", "8"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert one.returncode == 0, one.stderr[-3000:]
    port = _free_port()
    procs = [
        subprocess.Popen(
            _train_cmd(manifest, tmp_path / "two", 6, "--devices", "4", "--coordinator", f"localhost:{port}")
            + ["--num-processes", "2", "--process-id", str(i)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(2)
    ]
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, out[-3000:]
    losses = lambda d: [r["loss"] for r in read_metrics(str(d / "metrics.jsonl"))]  # noqa: E731
    assert len(losses(tmp_path / "one")) == 6
    two, one = losses(tmp_path / "two"), losses(tmp_path / "one")
    # The forward pass and first update are bit-identical; later, gloo's cross-process all-reduce sums the
    # gradient shards in another order than the in-process one, which moves the 7th significant digit.
    assert two[0] == one[0]
    np.testing.assert_allclose(two, one, rtol=2e-6)
    assert (tmp_path / "two" / "checkpoints" / "6").is_dir()


def test_attention_stays_within_documents():
    import jax.numpy as jnp

    from datapipe.train.model import PRESETS, forward, init_params

    cfg = replace(PRESETS["tiny"], vocab_size=256, compute_dtype="float32")
    params = init_params(cfg, jax.random.PRNGKey(0))
    ids = jnp.array(np.random.default_rng(0).integers(0, 256, (1, 32)), dtype=jnp.int32)
    seg = jnp.array([[0] * 12 + [1] * 20], dtype=jnp.int32)
    changed = ids.at[0, :12].set((ids[0, :12] + 1) % 256)  # another first document
    a, b = forward(params, ids, seg, cfg), forward(params, changed, seg, cfg)
    assert np.allclose(a[0, 12:], b[0, 12:], atol=1e-6)  # the second document does not see the first
    assert not np.allclose(a[0, :12], b[0, :12])
    # and a document's logits do not depend on where it sits in the row (positions restart per segment)
    alone = forward(params, ids[:, 12:], jnp.zeros((1, 20), jnp.int32), cfg)
    assert np.allclose(a[0, 12:], alone[0], atol=1e-5)


def test_the_fused_attention_call_has_the_einsum_paths_conventions():
    """The cuDNN path is ``jax.nn.dot_product_attention``; run through its XLA implementation here (no GPU), it must
    give what the einsum path gives: the same head grouping, layout, and document mask, padding included."""
    import jax.numpy as jnp

    from datapipe.train import model as m

    cfg = replace(m.PRESETS["tiny"], n_heads=8, n_kv_heads=2, vocab_size=256, compute_dtype="float32")
    rng = np.random.default_rng(1)
    b, t, dh = 2, 48, cfg.dh
    q = jnp.asarray(rng.normal(size=(b, t, 8, dh)), jnp.float32)
    k, v = (jnp.asarray(rng.normal(size=(b, t, 2, dh)), jnp.float32) for _ in range(2))
    seg = jnp.asarray(np.repeat([[0, 1, 2, -1], [5, 6, 7, 8]], 12, axis=1), jnp.int32)
    mask = m.attention_mask(seg)
    fused = m.fused_attention(q, k, v, mask, "xla")
    groups = q.reshape(b, t, 2, 4, dh)
    scores = jnp.einsum("bqkgd,bskd->bkgqs", groups, k) / np.sqrt(dh)
    probs = jax.nn.softmax(jnp.where(mask, scores, jnp.finfo(jnp.float32).min), axis=-1)
    ref = jnp.einsum("bkgqs,bskd->bqkgd", probs, v).reshape(b, t, 8, dh)
    assert np.allclose(fused, ref, atol=1e-5)
    # the same check through a whole forward pass, the kernel chosen by the model's setting
    params = m.init_params(cfg, jax.random.PRNGKey(0))
    ids = jnp.asarray(rng.integers(0, 256, (b, t)), jnp.int32)
    einsum = m.forward(params, ids, seg, replace(cfg, attention="xla"))
    fused_call = m.fused_attention
    try:  # route the model's cuDNN branch to the XLA implementation of the same call
        m.fused_attention = lambda q, k, v, mask, implementation: fused_call(q, k, v, mask, "xla")
        via_fused = m.forward(params, ids, seg, replace(cfg, attention="cudnn"))
    finally:
        m.fused_attention = fused_call
    assert np.allclose(einsum, via_fused, atol=1e-4)


def test_the_splash_kernel_gives_the_einsum_paths_losses_and_gradients_on_a_mesh():
    """The TPU kernel (Pallas's splash attention, run here in Pallas's interpreter) against the einsum path: the same
    head grouping, scaling, causal and per-document mask (padding included), on one device and under ``shard_map``
    on a (2, 2, 2) mesh (batch over data and fsdp, heads over model); the loss and every parameter's gradient."""
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    from datapipe.train import model as m
    from datapipe.train.sharding import BATCH_AXES

    cfg = replace(m.PRESETS["tiny"], n_heads=4, n_kv_heads=2, vocab_size=256, compute_dtype="float32")
    rng = np.random.default_rng(2)
    b, t = 4, 256
    seg = np.repeat(np.array([[0, 1, 2, -1], [5, 6, 7, 8], [3, 3, 3, 3], [0, 0, 9, -1]]), t // 4, axis=1)
    seg[0, 5:9] = 4  # a short document inside a block
    batch = {
        "input_ids": jnp.asarray(rng.integers(0, 256, (b, t)), jnp.int32),
        "segment_ids": jnp.asarray(seg, jnp.int32),
    }
    params = m.init_params(cfg, jax.random.PRNGKey(0))
    sharding = NamedSharding(
        make_mesh({"data": 2, "fsdp": 2, "model": 2}), PartitionSpec(BATCH_AXES, None, None)
    )

    def loss_and_grads(kernel: str, activation_sharding=None):
        c = replace(cfg, attention=kernel)
        f = jax.jit(jax.value_and_grad(lambda p: m.loss_sums(p, batch, c, 0.0, activation_sharding)[0]))
        return f(params)

    ref_loss, ref_grads = loss_and_grads("xla")
    for activation_sharding in (None, sharding):
        loss, grads = loss_and_grads("splash", activation_sharding)
        assert np.isclose(float(loss), float(ref_loss), rtol=1e-5)
        pairs = zip(
            jax.tree_util.tree_leaves_with_path(grads), jax.tree_util.tree_leaves(ref_grads), strict=True
        )
        for (path, got), want in pairs:
            err = np.linalg.norm(np.asarray(got) - np.asarray(want)) / np.linalg.norm(np.asarray(want))
            assert err < 1e-4, (jax.tree_util.keystr(path), err)
    with pytest.raises(ValueError, match="multiple of 128"):
        m.forward(
            params,
            batch["input_ids"][:, :100],
            batch["segment_ids"][:, :100],
            replace(cfg, attention="splash"),
        )


def test_the_attention_kernel_is_chosen_by_device_and_shape():
    from datapipe.train.model import PRESETS, attention_kernel

    one_b = PRESETS["1b"]
    assert attention_kernel(one_b) == "xla"  # this machine has no GPU
    assert attention_kernel(one_b, backend="gpu") == "cudnn"
    assert attention_kernel(replace(one_b, compute_dtype="float32"), backend="gpu") == "xla"
    assert attention_kernel(replace(one_b, head_dim=256), backend="gpu") == "xla"
    assert attention_kernel(replace(one_b, attention="cudnn")) == "cudnn"
    assert attention_kernel(replace(one_b, attention="xla"), backend="gpu") == "xla"
    assert attention_kernel(one_b, backend="tpu") == "splash"
    assert attention_kernel(one_b, backend="tpu", seq_len=4096) == "splash"
    assert attention_kernel(one_b, backend="tpu", seq_len=1000) == "xla"  # not a multiple of 128
    assert attention_kernel(replace(one_b, attention="xla"), backend="tpu") == "xla"
    with pytest.raises(ValueError, match="attention must be one of"):
        attention_kernel(replace(one_b, attention="flash"))


def test_the_remat_policy_that_keeps_attention_changes_no_loss(manifest, tmp_path):
    runs = []
    for policy in ("dots_no_batch", "dots_attention"):
        over = parse_overrides(BASE)
        over.update(mixture=manifest, model={"preset": "tiny", "remat": policy}, steps=3)
        cfg = load_train_config(None, {**over, "run_dir": str(tmp_path / policy)})
        assert cfg.model.remat == policy
        runs.append(Trainer(cfg, verbose=False).train().losses)
    assert runs[0] == runs[1]


def test_schedules_and_flops():
    from datapipe.train.config import LrSchedule
    from datapipe.train.model import PRESETS
    from datapipe.train.optim import phase_schedule

    wsd = phase_schedule(
        LrSchedule(lr=1.0, schedule="wsd", warmup_steps=10, decay_steps=20, min_lr_ratio=0.1), 100
    )
    assert float(wsd(0)) == pytest.approx(0.1) and float(wsd(9)) == pytest.approx(1.0)
    assert float(wsd(50)) == pytest.approx(1.0) and float(wsd(80)) == pytest.approx(1.0)
    assert float(wsd(90)) == pytest.approx(0.55) and float(wsd(100)) == pytest.approx(0.1)
    cos = phase_schedule(LrSchedule(lr=1.0, schedule="cosine", min_lr_ratio=0.0), 100)
    assert (
        float(cos(0)) == 1.0
        and float(cos(50)) == pytest.approx(0.5)
        and float(cos(100)) == pytest.approx(0.0)
    )
    m8 = PRESETS["marin_8b"].with_vocab(128_256)
    assert m8.num_params() == pytest.approx(8.03e9, rel=0.01)  # Llama-3-8B
    assert m8.flops_per_token(4096) == pytest.approx(6 * m8.num_params(embeddings=False), rel=0.25)


def test_config_errors_are_one_line(manifest, tmp_path):
    with pytest.raises(ConfigError, match="unknown preset 'huge'"):
        load_train_config(None, {"mixture": manifest, "model": "huge", "steps": 1, "run_dir": str(tmp_path)})
    with pytest.raises(ConfigError, match="optimizer.lr.schedule"):
        load_train_config(
            None,
            {
                "mixture": manifest,
                "model": "tiny",
                "steps": 1,
                "run_dir": str(tmp_path),
                "optimizer": {"lr": {"schedule": "linear"}},
            },
        )
    with pytest.raises(ConfigError, match="model.attention"):
        load_train_config(
            None,
            {
                "mixture": manifest,
                "model": {"preset": "tiny", "attention": "flash"},
                "steps": 1,
                "run_dir": "x",
            },
        )
    with pytest.raises(ConfigError, match="microbatch"):
        Trainer(config(manifest, tmp_path, "microbatch=2"), verbose=False)


def test_cli_help_has_an_example():
    out = subprocess.run(
        [sys.executable, "-m", "datapipe.cli", "train", "--help"], capture_output=True, text=True, cwd=REPO
    )
    assert out.returncode == 0 and "datapipe train --mixture" in out.stdout


@pytest.mark.slow
def test_tiny_loss_falls_by_30_percent_in_200_steps(manifest, tmp_path):
    cfg = config(
        manifest,
        tmp_path,
        "seq_len=128",
        "global_batch=16",
        "optimizer.lr={lr: 0.003, warmup_steps: 20, schedule: cosine}",
        "checkpoint.every=0",
        steps=200,
    )
    result = Trainer(cfg, verbose=False).train()
    first, last = result.losses[1], np.mean([result.losses[s] for s in range(191, 201)])
    print(f"tiny: loss {first:.3f} at step 1 -> {last:.3f} over steps 191-200 ({1 - last / first:.0%} lower)")
    assert last <= 0.7 * first
    assert os.path.exists(tmp_path / "run.json")


def test_run_folder_is_named_and_another_runs_folder_is_refused(manifest, tmp_path):
    """The first line names the run folder; resuming a folder whose checkpoints were trained on another manifest is
    one line, not a restore traceback; ``--fresh`` starts anew there. The default folder carries the manifest's
    hash, so two mixtures never share one."""
    from datapipe.train.cli import default_run_dir

    run = tmp_path / "run"

    def train(steps: int, *extra: str) -> subprocess.CompletedProcess:
        cmd = _train_cmd(manifest, run, steps, "--devices", "8", *extra, "checkpoint.every=1")
        return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)

    first = train(1)
    assert first.returncode == 0, first.stderr[-3000:]
    assert first.stdout.splitlines()[0] == f"run folder: {run}"
    doc = json.loads((run / "run.json").read_text())
    doc["manifest_sha256"] = "0" * 64  # as if trained on another mixture
    (run / "run.json").write_text(json.dumps(doc))
    again = train(2)
    assert again.returncode == 2
    (line,) = again.stderr.strip().splitlines()
    assert (
        line.startswith(f"error: {run}: its checkpoints are of another run: manifest ") and "--fresh" in line
    )
    fresh = train(1, "--fresh")
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    assert json.loads((run / "run.json").read_text())["manifest_sha256"] != "0" * 64
    folder = default_run_dir(manifest, "tiny")
    sha = hashlib.sha256(Path(manifest).read_bytes()).hexdigest()[:8]
    # beside the build, where the report and the browser find its runs
    assert folder == os.path.join(os.path.abspath(Path(manifest).parent), "runs", f"tiny-{sha}")


def test_flops_per_token_under_both_conventions():
    """PaLM's convention counts attention over the full sequence; the causal one over the keys a token attends
    to, (seq_len + 1) / 2 on average: the two differ by exactly half the attention (less half a key)."""
    from datapipe.train.model import PRESETS

    m = PRESETS["150m"]
    full, causal = m.flops_per_token(4096), m.flops_per_token(4096, causal=True)
    attention_full = 3 * 2 * m.n_layers * 2 * m.n_heads * m.dh * 4096
    assert full - causal == pytest.approx(attention_full * (4096 - 4097 / 2) / 4096)
    assert round(0.3686 * causal / full, 2) == 0.29  # the TPU's 150m run, counted causally
