"""Hugging Face Llama folders: the parameter mapping both ways (exact in float32, sharded files, bfloat16), the
config both ways (Llama 3 rope scaling included), ``datapipe export-hf``, and ``datapipe train --init-from``.

The comparisons against ``transformers`` itself (logits of the exported model, a rope-scaled import) need torch
and are marked slow: ``make test-all`` installs them."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import jax
import numpy as np
import pytest

from datapipe import ConfigError, DatapipeError, Trainer, load_train_config, parse_overrides
from datapipe.train.hf import (
    INDEX,
    WEIGHTS,
    leaf_tensors,
    llama_config,
    model_from_llama_config,
    read_weights,
    write_weights,
)
from datapipe.train.model import (
    PRESETS,
    ModelConfig,
    RopeScaling,
    forward,
    init_params,
    param_paths,
    rope_frequencies,
)
from tests.conftest import REPO

TINY = replace(PRESETS["tiny"], vocab_size=384)
UNTIED_GQA = ModelConfig(
    "untied", d_model=48, n_layers=3, n_heads=6, n_kv_heads=2, d_ff=96, head_dim=12, vocab_size=256
)


def _flat(cfg: ModelConfig, seed: int = 0) -> dict[str, np.ndarray]:
    params = init_params(cfg, jax.random.PRNGKey(seed))
    # norms of ones would hide a transposed or misplaced norm: make them distinct
    flat = {k: np.asarray(v) for k, v in param_paths(params).items()}
    rng = np.random.default_rng(seed)
    for k in ("final_norm", "layers/attn_norm", "layers/mlp_norm"):
        flat[k] = rng.uniform(0.5, 1.5, flat[k].shape).astype(np.float32)
    return flat


@pytest.mark.parametrize("cfg", [TINY, UNTIED_GQA], ids=["tied", "untied-gqa"])
def test_weights_written_and_read_back_are_the_same_bits(cfg, tmp_path):
    flat = _flat(cfg)
    files = write_weights(leaf_tensors(flat.items()), str(tmp_path))
    assert files == [WEIGHTS] and not (tmp_path / INDEX).exists()
    back = read_weights(str(tmp_path), cfg)
    assert set(back) == set(flat)
    for k in flat:
        assert back[k].dtype == np.float32 and np.array_equal(back[k], flat[k]), k


def test_a_large_model_is_split_into_shards_with_an_index(tmp_path):
    cfg = UNTIED_GQA
    flat = _flat(cfg, seed=1)
    files = write_weights(leaf_tensors(flat.items()), str(tmp_path), max_shard_bytes=40_000)
    assert len(files) > 2 and files[0] == f"model-00001-of-{len(files):05d}.safetensors"
    index = json.loads((tmp_path / INDEX).read_text())
    assert set(index["weight_map"].values()) == set(files)
    assert index["metadata"]["total_size"] == sum(v.nbytes for v in flat.values())
    assert "model.layers.2.mlp.down_proj.weight" in index["weight_map"]
    assert not (tmp_path / WEIGHTS).exists()
    back = read_weights(str(tmp_path), cfg)
    assert all(np.array_equal(back[k], flat[k]) for k in flat)
    # a later export into the same folder as one file leaves no stale shard or index behind
    assert write_weights(leaf_tensors(flat.items()), str(tmp_path)) == [WEIGHTS]
    assert sorted(p.name for p in tmp_path.iterdir()) == [WEIGHTS]


def test_bfloat16_weights_are_the_float32_ones_rounded(tmp_path):
    import ml_dtypes
    from safetensors import safe_open

    flat = _flat(TINY)
    write_weights(leaf_tensors(flat.items()), str(tmp_path), dtype="bfloat16")
    with safe_open(str(tmp_path / WEIGHTS), framework="numpy") as f:
        q = f.get_tensor("model.layers.1.self_attn.q_proj.weight")
        emb = f.get_tensor("model.embed_tokens.weight")
        assert "lm_head.weight" not in f.keys()  # noqa: SIM118 (safe_open has no __contains__); tied: HF ties it
    assert q.dtype == ml_dtypes.bfloat16 and q.shape == (TINY.n_heads * TINY.dh, TINY.d_model)
    want = flat["layers/wq"][1].reshape(TINY.d_model, -1).T.astype(ml_dtypes.bfloat16)
    assert np.array_equal(q, want)
    assert np.array_equal(emb, flat["embed"].astype(ml_dtypes.bfloat16))


def test_hugging_face_layouts_are_out_by_in():
    """q_proj is [heads*head_dim, d_model] with head h in rows h*head_dim..; o_proj [d_model, heads*head_dim]."""
    from datapipe.train.hf import from_hf, to_hf

    cfg = UNTIED_GQA
    wq = np.random.default_rng(0).normal(size=(cfg.d_model, cfg.n_heads, cfg.dh)).astype(np.float32)
    q = to_hf("layers/wq", wq)
    assert q.shape == (cfg.n_heads * cfg.dh, cfg.d_model)
    assert np.array_equal(q[2 * cfg.dh + 5], wq[:, 2, 5])  # head 2, dim 5 is one output row
    wo = np.random.default_rng(1).normal(size=(cfg.n_heads, cfg.dh, cfg.d_model)).astype(np.float32)
    o = to_hf("layers/wo", wo)
    assert o.shape == (cfg.d_model, cfg.n_heads * cfg.dh) and np.array_equal(o[:, 3 * cfg.dh + 1], wo[3, 1])
    assert np.array_equal(from_hf("layers/wo", o, cfg), wo) and np.array_equal(
        from_hf("layers/wq", q, cfg), wq
    )


def test_config_written_and_read_back_is_the_same_model():
    scaled = replace(PRESETS["1b"], vocab_size=128256, rope_scaling=RopeScaling(), context_length=131072)
    for cfg in (TINY, UNTIED_GQA, scaled):
        doc = llama_config(cfg, 4096, "bfloat16", 1, 2)
        assert doc["max_position_embeddings"] == (cfg.context_length or 4096)
        back = model_from_llama_config(json.loads(json.dumps(doc)), "config.json")
        assert replace(back, name=cfg.name, context_length=cfg.context_length) == cfg


def test_llama_3_2_config_and_what_cannot_be_imported():
    """Llama-3.2-1B's config.json (transformers 4.x keys; 5.x writes rope_parameters) gives the 1b preset's
    shapes with its rope scaling; biases, another activation or another scaling are refused by name."""
    doc = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-05,
        "rope_theta": 500000.0,
        "rope_scaling": {
            "factor": 32.0,
            "high_freq_factor": 4.0,
            "low_freq_factor": 1.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3",
        },
        "tie_word_embeddings": True,
        "hidden_act": "silu",
    }
    cfg = model_from_llama_config(doc, "config.json")
    one_b = PRESETS["1b"]
    for k in ("d_model", "n_layers", "n_heads", "n_kv_heads", "d_ff", "dh", "tie_embeddings", "rope_theta"):
        assert getattr(cfg, k) == getattr(one_b, k), k
    assert cfg.rope_scaling == RopeScaling(32.0, 1.0, 4.0, 8192)
    v5 = {k: v for k, v in doc.items() if k not in ("rope_theta", "rope_scaling")}
    v5["rope_parameters"] = {**doc["rope_scaling"], "rope_theta": 500000.0}
    assert model_from_llama_config(v5, "config.json") == cfg
    for key, value in (("attention_bias", True), ("hidden_act", "gelu"), ("model_type", "mistral")):
        with pytest.raises(DatapipeError, match=key):
            model_from_llama_config({**doc, key: value}, "x/config.json")
    with pytest.raises(DatapipeError, match="'yarn'"):
        model_from_llama_config({**doc, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, "c.json")


def test_llama3_scaling_stretches_only_long_wavelengths():
    cfg = replace(PRESETS["1b"], rope_scaling=RopeScaling(32.0, 1.0, 4.0, 8192))
    plain = np.asarray(rope_frequencies(replace(cfg, rope_scaling=None)))
    scaled = np.asarray(rope_frequencies(cfg))
    wavelen = 2 * np.pi / plain
    assert np.array_equal(scaled[wavelen < 8192 / 4], plain[wavelen < 8192 / 4])
    assert np.allclose(scaled[wavelen > 8192], plain[wavelen > 8192] / 32, rtol=1e-6)
    between = (wavelen >= 2048) & (wavelen <= 8192)
    assert between.any() and np.all(scaled[between] < plain[between])
    assert np.all(scaled[between] > plain[between] / 32)


# --- a run, exported and imported --------------------------------------------------------------------------------

# a (2, 2, 2) mesh: the checkpoint is sharded (fsdp and model axes), the export gathers it, the import re-shards
BASE = [
    "seq_len=64",
    "global_batch=8",
    "mesh.data=2",
    "mesh.fsdp=2",
    "mesh.model=2",
    "checkpoint.every=4",
    "optimizer.lr.lr=0.003",
]


def _cfg(manifest: str, run_dir: Path, steps: int, *extra: str, model: str | None = "tiny"):
    over = parse_overrides([*BASE, *extra])
    over.update(mixture=manifest, steps=steps, run_dir=str(run_dir))
    if model:
        over["model"] = model
    return load_train_config(None, over)


@pytest.fixture(scope="module")
def exported(built_small, tmp_path_factory):
    """A tiny run of 4 steps, exported (float32) with ``datapipe export-hf``."""
    manifest = str(built_small[0] / "mixture.json")
    run = tmp_path_factory.mktemp("hf-run")
    Trainer(_cfg(manifest, run, 4), verbose=False).train()
    out = tmp_path_factory.mktemp("hf-export")
    cmd = [sys.executable, "-m", "datapipe.cli", "export-hf", str(run), "--out", str(out)]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"exported step 4 of {run}" in done.stdout
    return manifest, run, out


def test_export_writes_a_hugging_face_folder(exported):
    manifest, run, out = exported
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "config.json",
        "datapipe_export.json",
        "generation_config.json",
        "model.safetensors",
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    config = json.loads((out / "config.json").read_text())
    run_doc = json.loads((run / "run.json").read_text())
    assert config["hidden_size"] == 64 and config["vocab_size"] == run_doc["model"]["vocab_size"]
    assert config["tie_word_embeddings"] is True and config["max_position_embeddings"] == 64
    manifest_doc = json.loads(Path(manifest).read_text())
    assert config["eos_token_id"] == manifest_doc["tokenizer"]["eos_id"]
    provenance = json.loads((out / "datapipe_export.json").read_text())
    assert provenance["step"] == 4 and provenance["tokenizer_sha256"] == manifest_doc["tokenizer"]["sha256"]
    bad = subprocess.run(
        [sys.executable, "-m", "datapipe.cli", "export-hf", str(run), "--step", "3", "--out", str(out / "x")],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.strip() == f"error: {run}: no checkpoint at step 3 (steps: 4)"
    assert not (out / "x").exists()  # said before the folder was made


def test_import_of_an_export_trains_like_the_checkpoint_it_came_from(exported, tmp_path):
    """``--init-from hf:EXPORT`` and ``--init-from run:RUN`` (the same step's orbax checkpoint) start from the same
    parameters, so their losses are the same floats; and both differ from a run from scratch."""
    manifest, run, out = exported
    from_hf = Trainer(_cfg(manifest, tmp_path / "a", 3, f"init_from=hf:{out}", model=None), verbose=False)
    assert from_hf.model.name == f"hf:{out.name}" and from_hf.model.d_model == 64
    a = from_hf.train()
    b = Trainer(
        _cfg(manifest, tmp_path / "b", 3, f"init_from=run:{run}@4", model=None), verbose=False
    ).train()
    scratch = Trainer(_cfg(manifest, tmp_path / "c", 3), verbose=False).train()
    assert a.losses == b.losses and len(a.losses) == 3
    assert a.losses[1] < scratch.losses[1]  # 4 steps of training show
    doc = json.loads((tmp_path / "a" / "run.json").read_text())
    assert doc["config"]["init_from"] == f"hf:{out}"


def test_a_run_started_from_a_folder_resumes_without_it(exported, tmp_path):
    """The source is needed to start, not to resume: with the folder gone, the run goes on from its own
    checkpoint, to the same losses as a run that never stopped."""
    import shutil

    manifest, _, out = exported
    source = tmp_path / "src"
    shutil.copytree(out, source)
    spec = f"init_from=hf:{source}"
    first = Trainer(_cfg(manifest, tmp_path / "r", 5, spec, model=None), verbose=False).train(until=3)
    shutil.rmtree(source)
    rest = Trainer(_cfg(manifest, tmp_path / "r", 5, spec, model=None), verbose=False).train()
    straight = Trainer(
        _cfg(manifest, tmp_path / "s", 5, f"init_from=hf:{out}", model=None), verbose=False
    ).train()
    assert {**first.losses, **rest.losses} == straight.losses and min(rest.losses) == 4


def test_import_refuses_another_tokenizer_or_a_preset(exported, tmp_path):
    manifest, _, out = exported
    other = tmp_path / "other"
    other.mkdir()
    for p in out.iterdir():
        (other / p.name).write_bytes(p.read_bytes())
    tok = json.loads((other / "tokenizer.json").read_text())
    vocab = tok["model"]["vocab"]
    first, second = sorted(vocab, key=vocab.get)[300:302]
    vocab[first], vocab[second] = vocab[second], vocab[first]  # two ids swapped: other tokens, same size
    (other / "tokenizer.json").write_text(json.dumps(tok))
    with pytest.raises(DatapipeError, match="is not the mixture's"):
        Trainer(_cfg(manifest, tmp_path / "r", 2, f"init_from=hf:{other}", model=None), verbose=False)
    with pytest.raises(ConfigError, match="drop the preset"):
        _cfg(manifest, tmp_path / "r", 2, f"init_from=hf:{out}")
    with pytest.raises(ConfigError, match="the weights fix d_model"):
        _cfg(manifest, tmp_path / "r", 2, f"init_from=hf:{out}", "model.d_model=32", model=None)
    with pytest.raises(ConfigError, match="hf:DIR"):
        _cfg(manifest, tmp_path / "r", 2, f"init_from=gs:{out}", model=None)


# --- against transformers (slow: torch) ------------------------------------------------------------------------


def _torch():
    torch = pytest.importorskip("torch", reason="make test-all installs torch and transformers")
    pytest.importorskip("transformers")
    torch.manual_seed(0)
    return torch


def _packed_inputs(vocab: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, vocab, size=(2, 48)).astype(np.int32)
    seg = np.zeros((2, 48), np.int32)
    seg[0, 20:] = 1  # row 0: two documents
    seg[1, 30:41] = 1  # row 1: three documents and padding
    seg[1, 41:] = -1
    return ids, seg


def _hf_logits(model, torch, ids: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """transformers' logits for packed rows: a 4D mask (causal, same document) and positions restarting per
    document, as our ``segment_ids`` mean."""
    t = ids.shape[1]
    same = seg[:, :, None] == seg[:, None, :]
    mask = np.tril(np.ones((t, t), bool))[None] & same
    starts = np.concatenate([np.ones((len(seg), 1), bool), seg[:, 1:] != seg[:, :-1]], axis=1)
    idx = np.arange(t)[None]
    positions = idx - np.maximum.accumulate(np.where(starts, idx, 0), axis=1)
    bias = torch.where(torch.from_numpy(mask)[:, None], 0.0, torch.finfo(torch.float32).min)
    with torch.no_grad():
        out = model(
            input_ids=torch.from_numpy(ids.astype(np.int64)),
            attention_mask=bias,
            position_ids=torch.from_numpy(positions.astype(np.int64)),
        )
    return out.logits.float().numpy()


def _max_rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.mark.slow
def test_transformers_loads_the_export_and_computes_our_logits(exported):
    torch = _torch()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from datapipe.train.checkpoint import restore_run_params
    from datapipe.train.init import model_from_dict, read_run

    _, run, out = exported
    model = AutoModelForCausalLM.from_pretrained(
        str(out), torch_dtype=torch.float32, attn_implementation="eager"
    )
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    cfg = replace(model_from_dict(read_run(str(run))["model"]), compute_dtype="float32")
    _, params = restore_run_params(str(run), None, cfg)
    assert tokenizer("Hello world")["input_ids"][:2] == [
        15496,
        995,
    ]  # GPT-2's ids, as the mixture's tokenizer
    ids, seg = _packed_inputs(cfg.vocab_size)
    ours = np.asarray(forward(params, ids, seg, cfg))
    theirs = _hf_logits(model, torch, ids, seg)
    valid = seg >= 0
    assert _max_rel(ours[valid], theirs[valid]) <= 1e-5
    plain = np.zeros_like(seg)  # unpacked: one document a row, transformers' own default mask and positions
    with torch.no_grad():
        default = model(input_ids=torch.from_numpy(ids.astype(np.int64))).logits.numpy()
    assert _max_rel(np.asarray(forward(params, ids, plain, cfg)), default) <= 1e-5


@pytest.mark.slow
def test_a_llama3_rope_scaled_import_computes_transformers_logits(tmp_path):
    """Random weights in a transformers ``LlamaForCausalLM`` with Llama 3.2's rope scaling (positions beyond the
    original context's low-frequency band, so that the scaling matters), saved, imported by us: same logits."""
    torch = _torch()
    from transformers import LlamaConfig, LlamaForCausalLM

    from datapipe.train.hf import read_llama_config

    hf_cfg = LlamaConfig(
        vocab_size=300,
        hidden_size=64,
        intermediate_size=160,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        rope_theta=10_000.0,
        rope_scaling={
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64,
        },
        tie_word_embeddings=False,
        attn_implementation="eager",
    )
    model = LlamaForCausalLM(hf_cfg).float().eval()
    model.save_pretrained(str(tmp_path))
    cfg = replace(read_llama_config(str(tmp_path)), compute_dtype="float32")
    assert cfg.rope_scaling == RopeScaling(8.0, 1.0, 4.0, 64)
    flat = read_weights(str(tmp_path), cfg)
    params = {k: v for k, v in flat.items() if "/" not in k}
    params["layers"] = {k.split("/", 1)[1]: v for k, v in flat.items() if "/" in k}
    ids = np.random.default_rng(3).integers(0, 300, size=(1, 160)).astype(np.int32)
    seg = np.zeros_like(ids)
    with torch.no_grad():
        theirs = model(input_ids=torch.from_numpy(ids.astype(np.int64))).logits.numpy()
    ours = np.asarray(forward(params, ids, seg, cfg))
    assert _max_rel(ours, theirs) <= 1e-5
    unscaled = np.asarray(forward(params, ids, seg, replace(cfg, rope_scaling=None)))
    assert _max_rel(unscaled, theirs) > 1e-3  # the scaling is what makes them agree


def test_a_bos_the_build_added_becomes_the_exported_tokenizers_own(exported, tmp_path):
    """A mixture built with add_bos: the export's tokenizer.json adds that BOS itself (so a harness encodes text
    as the model saw it), and importing that folder still counts as the mixture's tokenizer."""
    import dataclasses

    from tokenizers import Tokenizer

    from datapipe import load_manifest
    from datapipe.train.hf import check_fits, read_llama_config, write_tokenizer

    manifest, _, out = exported
    source = Path(manifest).parent / "tokenizer.json"
    mixture = load_manifest(manifest)
    eos = mixture.tokenizer.eos_id
    identity = dataclasses.replace(mixture.tokenizer, add_bos=True, bos_id=eos)
    special = write_tokenizer(str(source), identity, 64, str(tmp_path))
    assert special == {"bos": "<|endoftext|>", "eos": "<|endoftext|>"}
    plain = Tokenizer.from_file(str(source)).encode("Hello world").ids
    assert Tokenizer.from_file(str(tmp_path / "tokenizer.json")).encode("Hello world").ids == [eos, *plain]
    for name in ("config.json", "model.safetensors"):
        (tmp_path / name).write_bytes((out / name).read_bytes())
    check_fits(read_llama_config(str(tmp_path)), str(tmp_path), mixture)
