"""The trainer's memory options on CPU (8 fake devices, the tiny model): bf16 moments, the chunked LM-head loss, the
remat policies, the optimizer's moments and the MLP's activations in host memory. Each gives the reference's
(optax's fp32 AdamW, full logits, ``dots_no_batch``) parameters within a stated tolerance after a few steps; the
host-offload options, TPU-only, are refused elsewhere in one line, and run here only with that check lifted (the
CPU backend has a host memory space too, so the code path is the chip's)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from datapipe import ConfigError, Trainer, load_train_config, parse_overrides

pytestmark = pytest.mark.skipif(
    jax.device_count() < 8, reason="needs XLA_FLAGS with 8 fake CPU devices (conftest)"
)

BASE = ["seq_len=64", "global_batch=8", "mesh.data=2", "mesh.fsdp=2", "mesh.model=2", "checkpoint.every=0"]
STEPS = 4
LR = "optimizer.lr.lr=1e-3"  # updates well above bf16 rounding, so that a difference in them would show


@pytest.fixture(scope="module")
def manifest(built_small) -> str:
    return str(built_small[0] / "mixture.json")


def run(manifest: str, run_dir: Path, *overrides: str, steps: int = STEPS, until: int | None = None):
    over = parse_overrides([*BASE, LR, *overrides])
    over.update(mixture=manifest, steps=steps, run_dir=str(run_dir))
    over.setdefault("model", "tiny")
    trainer = Trainer(load_train_config(None, over), verbose=False)
    result = trainer.train(until=until)
    return result.losses, trainer.final_state, trainer


@pytest.fixture(scope="module")
def reference(manifest, tmp_path_factory):
    """optax's AdamW in fp32, the full logits, the default remat: the losses, the state, the initial parameters."""
    losses, state, trainer = run(manifest, tmp_path_factory.mktemp("reference"))
    return losses, state, trainer.init_state()["params"]


def update_error(params, ref, init) -> float:
    """The largest, over parameters, of ||p - p_ref|| / ||p_ref - p_init||: a difference measured against how far
    the reference moved (its updates), not against the weights."""
    worst = 0.0
    for p, r, i in zip(jax.tree.leaves(params), jax.tree.leaves(ref), jax.tree.leaves(init), strict=True):
        p, r, i = (np.asarray(x, np.float64) for x in (p, r, i))
        worst = max(worst, float(np.linalg.norm(p - r) / max(np.linalg.norm(r - i), 1e-30)))
    return worst


def test_bf16_moments_give_adamw_parameters_within_2_percent_of_their_updates(manifest, reference, tmp_path):
    ref_losses, ref_state, init = reference
    losses, state, _ = run(manifest, tmp_path, "optimizer.moment_dtype=bfloat16")
    moments = [x for x in jax.tree.leaves(state["opt"]) if x.ndim > 0]
    assert moments and {x.dtype for x in moments} == {
        jnp.dtype(jnp.bfloat16)
    }  # both moments, every parameter
    assert update_error(state["params"], ref_state["params"], init) < 0.02
    assert np.allclose(list(losses.values()), list(ref_losses.values()), rtol=2e-3)


def test_a_run_with_bf16_moments_and_chunks_resumes_bit_identically(manifest, tmp_path):
    opts = ("optimizer.moment_dtype=bfloat16", "model={preset: tiny, loss_chunk: 16}")
    straight, state, _ = run(manifest, tmp_path / "straight", *opts)
    first, _, _ = run(manifest, tmp_path / "resumed", *opts, until=2)
    second, resumed, _ = run(manifest, tmp_path / "resumed", *opts)  # from the checkpoint at step 2
    assert {**first, **second} == straight
    for a, b in zip(jax.tree.leaves(resumed), jax.tree.leaves(state), strict=True):
        assert np.array_equal(np.asarray(a), np.asarray(b))


def test_the_chunked_loss_gives_the_full_logits_parameters(manifest, reference, tmp_path):
    """bf16 matmuls: the chunks take the logits from the matmul's fp32 accumulator (the full path rounds them to
    bf16 first), so the gradients differ by bf16 rounding (0.5%), which Adam's normalization makes up to a few
    percent of the smallest updates: within 5%."""
    ref_losses, ref_state, init = reference
    losses, state, _ = run(manifest, tmp_path, "model={preset: tiny, loss_chunk: 16}")
    assert update_error(state["params"], ref_state["params"], init) < 0.05
    assert np.allclose(list(losses.values()), list(ref_losses.values()), rtol=1e-3)


def _batch(seq: int = 128):
    rng = np.random.default_rng(3)
    seg = np.repeat(np.array([[0, 1, 2, -1], [5, 6, 7, 8], [3, 3, 3, 3], [0, 0, 9, -1]]), seq // 4, axis=1)
    return {
        "input_ids": jnp.asarray(rng.integers(0, 256, (4, seq)), jnp.int32),
        "segment_ids": jnp.asarray(seg, jnp.int32),
    }


@pytest.mark.parametrize("z_loss", [0.0, 1e-3])
def test_the_chunked_loss_and_its_gradients_equal_the_full_logits_in_fp32(z_loss):
    from datapipe.train import model as m

    cfg = replace(m.PRESETS["tiny"], vocab_size=256, compute_dtype="float32")
    params = m.init_params(cfg, jax.random.PRNGKey(0))
    batch = _batch()

    def loss_and_grads(c):
        return jax.jit(jax.value_and_grad(lambda p: m.loss_sums(p, batch, c, z_loss), has_aux=True))(params)

    (obj, (ce, n)), grads = loss_and_grads(cfg)
    for chunk in (32, 128):
        (obj_c, (ce_c, n_c)), grads_c = loss_and_grads(replace(cfg, loss_chunk=chunk))
        assert np.isclose(float(obj_c), float(obj), rtol=1e-6) and np.isclose(
            float(ce_c), float(ce), rtol=1e-6
        )
        assert float(n_c) == float(n)
        for got, want in zip(jax.tree.leaves(grads_c), jax.tree.leaves(grads), strict=True):
            err = np.linalg.norm(np.asarray(got) - np.asarray(want)) / np.linalg.norm(np.asarray(want))
            assert err < 1e-5
    evaluated = jax.jit(lambda p: m.loss_sums(p, batch, replace(cfg, loss_chunk=32), z_loss)[1][0])(params)
    assert np.isclose(float(evaluated), float(ce), rtol=1e-6)  # not differentiated: the plain chunked scan
    with pytest.raises(ValueError, match="must divide seq_len"):
        m.loss_sums(params, batch, replace(cfg, loss_chunk=48))


@pytest.mark.parametrize("kernel", ["xla", "splash"])
def test_every_remat_policy_gives_the_same_loss_and_gradients(kernel):
    """What a policy keeps changes no arithmetic: the same loss and gradients for every policy, on the einsum path
    and on the splash kernel (Pallas's interpreter here), host offload (``attention_offload``) included."""
    from datapipe.train import model as m

    cfg = replace(m.PRESETS["tiny"], vocab_size=256, attention=kernel, compute_dtype="float32")
    params = m.init_params(cfg, jax.random.PRNGKey(0))
    batch = _batch(256)
    results = {}
    for policy in m.REMAT_POLICIES:
        c = replace(cfg, remat=policy)
        results[policy] = jax.jit(jax.value_and_grad(lambda p, c=c: m.loss_sums(p, batch, c)[0]))(params)
    ref_loss, ref_grads = results["none"]
    for policy, (loss, grads) in results.items():
        assert float(loss) == float(ref_loss), policy
        for got, want in zip(jax.tree.leaves(grads), jax.tree.leaves(ref_grads), strict=True):
            assert np.allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-7), policy
    with pytest.raises(ValueError, match="remat must be one of"):
        m.remat_policy("some", "xla")


@pytest.fixture
def offload_here(monkeypatch):
    """Lift the TPU-only check: the CPU backend has a pinned host memory space, so the code path runs here."""
    import datapipe.train.trainer as t

    monkeypatch.setattr(t, "HOST_OFFLOAD_PLATFORMS", ("tpu", "cpu"))


def test_optimizer_state_in_host_memory_gives_the_reference_parameters(
    manifest, reference, tmp_path, offload_here
):
    """The same arithmetic, fused otherwise around the copies: the same losses, the parameters within 1e-4 of the
    updates."""
    ref_losses, ref_state, init = reference
    losses, state, _ = run(manifest, tmp_path, "optimizer.offload=true")
    moments = [x for x in jax.tree.leaves(state["opt"]) if x.ndim > 0]
    assert moments and {x.sharding.memory_kind for x in moments} == {"pinned_host"}
    assert losses == ref_losses
    assert update_error(state["params"], ref_state["params"], init) < 1e-4


def test_mlp_activations_in_host_memory_give_the_reference_losses(
    manifest, reference, tmp_path, offload_here
):
    ref_losses, ref_state, init = reference
    losses, state, _ = run(manifest, tmp_path, "model={preset: tiny, remat: attention_offload}")
    assert np.allclose(list(losses.values()), list(ref_losses.values()), rtol=1e-6)
    assert update_error(state["params"], ref_state["params"], init) < 1e-4


def test_tpu_only_options_are_refused_elsewhere_in_one_line(manifest, tmp_path):
    for override, key in (
        ("optimizer.offload=true", "optimizer.offload"),
        ("model={preset: tiny, remat: attention_offload}", "model.remat"),
        ("model={preset: tiny, loss_chunk: 48}", "model.loss_chunk"),  # 48 does not divide seq_len 64
    ):
        with pytest.raises(ConfigError) as err:
            run(manifest, tmp_path / key, override)
        assert key in str(err.value) and "\n" not in str(err.value)
    assert "needs a TPU" in _refusal(manifest, tmp_path, "optimizer.offload=true")
    with pytest.raises(ConfigError, match="moment_dtype"):
        run(manifest, tmp_path / "dtype", "optimizer.moment_dtype=float16")


def _refusal(manifest: str, tmp_path: Path, override: str) -> str:
    with pytest.raises(ConfigError) as err:
        run(manifest, tmp_path / "refusal", override)
    return str(err.value)


def test_the_850m_preset_is_llama_shaped_and_fills_one_16_gb_chip():
    from datapipe.train.model import PRESETS

    cfg = PRESETS["850m"].with_vocab(50257)  # GPT-2's vocabulary, as the TPU runs used
    assert 0.7e9 <= cfg.num_params() <= 1.2e9
    assert cfg.dh == 128 and cfg.n_heads % cfg.n_kv_heads == 0 and cfg.tie_embeddings
    assert cfg.remat == "attention" and 4096 % cfg.loss_chunk == 0
    # its plan: fp32 parameters and gradients, bf16 moments: 12 bytes a parameter, 9.6 GiB of the chip's 15.75
    assert cfg.num_params() * (4 + 4 + 2 + 2) / 2**30 < 10


def test_splash_block_sizes_come_from_the_tuned_table_the_environment_or_the_largest_that_divides(
    monkeypatch,
):
    from datapipe.train.splash import ENV, TUNED, Blocks, block_sizes

    monkeypatch.delenv(ENV, raising=False)
    assert block_sizes(4096, 128) == TUNED[(4096, 128)] == Blocks(1024, 1024, 512, 1024, 1024, 1024)
    assert block_sizes(4096, 32) == Blocks(*[512] * 6)
    assert block_sizes(384, 64) == Blocks(*[128] * 6)
    monkeypatch.setenv(ENV, "256,256,128,256,256,128")
    assert block_sizes(4096, 128) == Blocks(256, 256, 128, 256, 256, 128)
    monkeypatch.setenv(ENV, "256,256")
    with pytest.raises(ValueError, match="six comma-separated"):
        block_sizes(4096, 128)
    monkeypatch.setenv(ENV, "3000,512,512,512,512,512")
    with pytest.raises(ValueError, match="must divide seq_len"):
        block_sizes(4096, 128)
