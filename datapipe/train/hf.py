"""Hugging Face Llama folders: a run's parameters out as a ``LlamaForCausalLM`` checkpoint, and such a folder in as
the start of a run.

Our model computes what ``LlamaForCausalLM`` computes (float32 logits equal within 1e-5 relative; tested), so a
folder is a renaming and a reshaping of the same numbers, per layer ``i``:

==========================  ==================================================  ===============================
datapipe                    Hugging Face                                        shape change
==========================  ==================================================  ===============================
``embed [V, d]``            ``model.embed_tokens.weight [V, d]``                none
``layers/attn_norm [n, d]`` ``model.layers.i.input_layernorm.weight [d]``       layer ``i``
``layers/wq [n, d, h, k]``  ``model.layers.i.self_attn.q_proj.weight [h*k, d]`` merge heads, transpose
``layers/wk``, ``wv``       ``...k_proj``, ``...v_proj`` ``[kv*k, d]``          merge heads, transpose
``layers/wo [n, h, k, d]``  ``model.layers.i.self_attn.o_proj.weight [d, h*k]`` merge heads, transpose
``layers/mlp_norm``         ``model.layers.i.post_attention_layernorm.weight``  layer ``i``
``layers/w_gate``, ``w_up`` ``...mlp.gate_proj``, ``...mlp.up_proj [f, d]``     transpose
``layers/w_down [n, f, d]`` ``model.layers.i.mlp.down_proj.weight [d, f]``      transpose
``final_norm [d]``          ``model.norm.weight [d]``                           none
``lm_head [d, V]``          ``lm_head.weight [V, d]`` (absent when tied)        transpose
==========================  ==================================================  ===============================

Rotary embeddings need no permutation: ours rotate the two halves of each head (Llama's rotate-half convention, as
``transformers`` computes it), not interleaved pairs as Meta's original checkpoints do.

An export reads the checkpoint one parameter at a time (orbax partial restores; never the optimizer state) and
writes a safetensors file at a time (``max_shard_bytes``, 5 GB as ``save_pretrained``'s default, with
``model.safetensors.index.json`` when there are several), so the host holds one parameter (a few times its size
while orbax reads it) and one shard, not the model. A stacked layer weight holds every layer: the largest of an
8B model is each of its stacked MLP matrices, 23% of it. Measured with 200 MB shards, peak RSS: the ``150m``
preset (686 MiB of float32 parameters) 1,161 MiB, against 1,539 MiB when the parameters were restored whole; the
same with 24 layers (1,097 MiB of parameters) 1,223 MiB. Reading fills the stacked layer arrays one tensor at a time, in float32.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.store.identity import TokenizerIdentity
from datapipe.store.manifest import Manifest
from datapipe.train.model import ModelConfig, RopeScaling

CONFIG = "config.json"
WEIGHTS = "model.safetensors"
INDEX = "model.safetensors.index.json"
TOKENIZER = "tokenizer.json"
MAX_SHARD_BYTES = 5_000_000_000
DTYPES = ("float32", "bfloat16")

# our layer weight -> the Hugging Face module that holds it (``model.layers.{i}.<module>.weight``)
LAYER_MODULES: dict[str, str] = {
    "attn_norm": "input_layernorm",
    "wq": "self_attn.q_proj",
    "wk": "self_attn.k_proj",
    "wv": "self_attn.v_proj",
    "wo": "self_attn.o_proj",
    "mlp_norm": "post_attention_layernorm",
    "w_gate": "mlp.gate_proj",
    "w_up": "mlp.up_proj",
    "w_down": "mlp.down_proj",
}


def hf_name(path: str, layer: int | None = None) -> str:
    """The Hugging Face tensor name of one of our parameters (``layers/...`` ones for one layer)."""
    if path.startswith("layers/"):
        return f"model.layers.{layer}.{LAYER_MODULES[path.split('/', 1)[1]]}.weight"
    return {
        "embed": "model.embed_tokens.weight",
        "final_norm": "model.norm.weight",
        "lm_head": "lm_head.weight",
    }[path]


def to_hf(path: str, x: np.ndarray) -> np.ndarray:
    """Our array (one layer's, for layer weights) in Hugging Face's ``[out, in]`` layout."""
    name = path.split("/")[-1]
    if name in ("wq", "wk", "wv"):  # [d, heads, k] -> [heads*k, d]
        return x.reshape(x.shape[0], -1).T
    if name == "wo":  # [heads, k, d] -> [d, heads*k]
        return x.reshape(-1, x.shape[-1]).T
    if name in ("w_gate", "w_up", "w_down", "lm_head"):
        return x.T
    return x


def from_hf(path: str, w: np.ndarray, cfg: ModelConfig) -> np.ndarray:
    """The inverse of :func:`to_hf`: a Hugging Face tensor as our array (one layer's, for layer weights)."""
    name = path.split("/")[-1]
    if name in ("wq", "wk", "wv"):
        heads = cfg.n_heads if name == "wq" else cfg.n_kv_heads
        return w.T.reshape(cfg.d_model, heads, cfg.dh)
    if name == "wo":
        return w.T.reshape(cfg.n_heads, cfg.dh, cfg.d_model)
    if name in ("w_gate", "w_up", "w_down", "lm_head"):
        return w.T
    return w


def param_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Our parameter paths and shapes (layer weights with the stacked ``layers`` axis first)."""
    d, f, h, kv, k, n, v = (
        cfg.d_model,
        cfg.d_ff,
        cfg.n_heads,
        cfg.n_kv_heads,
        cfg.dh,
        cfg.n_layers,
        cfg.vocab_size,
    )
    shapes = {
        "embed": (v, d),
        "layers/attn_norm": (n, d),
        "layers/wq": (n, d, h, k),
        "layers/wk": (n, d, kv, k),
        "layers/wv": (n, d, kv, k),
        "layers/wo": (n, h, k, d),
        "layers/mlp_norm": (n, d),
        "layers/w_gate": (n, d, f),
        "layers/w_up": (n, d, f),
        "layers/w_down": (n, f, d),
        "final_norm": (d,),
    }
    if not cfg.tie_embeddings:
        shapes["lm_head"] = (d, v)
    return shapes


# --- config.json ------------------------------------------------------------------------------------------------


def llama_config(
    cfg: ModelConfig, seq_len: int, dtype: str, bos_id: int | None, eos_id: int | None
) -> dict[str, Any]:
    """``config.json`` of a ``LlamaForCausalLM`` with our model's shapes. ``max_position_embeddings`` is the
    model's stated context (an imported model's), else the length it was trained on."""
    scaling = None
    if cfg.rope_scaling is not None:
        s = cfg.rope_scaling
        scaling = {
            "rope_type": "llama3",
            "factor": s.factor,
            "low_freq_factor": s.low_freq_factor,
            "high_freq_factor": s.high_freq_factor,
            "original_max_position_embeddings": s.original_max_position_embeddings,
        }
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": cfg.d_model,
        "intermediate_size": cfg.d_ff,
        "num_hidden_layers": cfg.n_layers,
        "num_attention_heads": cfg.n_heads,
        "num_key_value_heads": cfg.n_kv_heads,
        "head_dim": cfg.dh,
        "vocab_size": cfg.vocab_size,
        "max_position_embeddings": cfg.context_length or seq_len,
        "rms_norm_eps": cfg.norm_eps,
        "rope_theta": cfg.rope_theta,
        "rope_scaling": scaling,
        "tie_word_embeddings": cfg.tie_embeddings,
        "hidden_act": "silu",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "initializer_range": cfg.init_std,
        "bos_token_id": bos_id,
        "eos_token_id": eos_id,
        "torch_dtype": dtype,
        "use_cache": True,
    }


def model_from_llama_config(doc: dict[str, Any], where: str) -> ModelConfig:
    """Our model config from a ``LlamaConfig`` document; anything our model does not compute is refused by name
    (biases, another activation, a rope scaling other than ``llama3``), never silently approximated."""

    def need(key: str) -> Any:
        if key not in doc:
            raise DatapipeError(f"{where}: no {key!r}: not a LlamaConfig")
        return doc[key]

    if doc.get("model_type") != "llama":
        raise DatapipeError(f"{where}: model_type is {doc.get('model_type')!r}; only 'llama' can be imported")
    for key, ours in (("hidden_act", "silu"), ("attention_bias", False), ("mlp_bias", False)):
        if doc.get(key, ours) != ours:
            raise DatapipeError(f"{where}: {key} = {doc[key]!r}; datapipe's model computes {key} = {ours!r}")
    # transformers 5 writes rope_parameters ({rope_type, rope_theta, ...}); 4.x rope_theta and rope_scaling
    rope = dict(doc.get("rope_parameters") or {})
    theta = float(rope.get("rope_theta", doc.get("rope_theta", 10_000.0)))
    scaling_doc = doc.get("rope_scaling") or (rope if rope.get("rope_type", "default") != "default" else None)
    scaling = None
    if scaling_doc:
        kind = scaling_doc.get("rope_type", scaling_doc.get("type"))
        if kind != "llama3":
            raise DatapipeError(
                f"{where}: rope scaling of type {kind!r}; datapipe's model knows 'llama3' only"
            )
        defaults = RopeScaling()
        try:  # as transformers: the original context defaults to max_position_embeddings
            scaling = RopeScaling(
                factor=float(scaling_doc["factor"]),
                low_freq_factor=float(scaling_doc.get("low_freq_factor", defaults.low_freq_factor)),
                high_freq_factor=float(scaling_doc.get("high_freq_factor", defaults.high_freq_factor)),
                original_max_position_embeddings=int(
                    scaling_doc.get("original_max_position_embeddings") or doc["max_position_embeddings"]
                ),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise DatapipeError(
                f"{where}: rope scaling {scaling_doc}: {e!r} is missing or not a number"
            ) from None
    heads, d_model = int(need("num_attention_heads")), int(need("hidden_size"))
    head_dim = int(doc.get("head_dim") or d_model // heads)
    return ModelConfig(
        name="hf",
        d_model=d_model,
        n_layers=int(need("num_hidden_layers")),
        n_heads=heads,
        n_kv_heads=int(doc.get("num_key_value_heads") or heads),
        d_ff=int(need("intermediate_size")),
        head_dim=None if head_dim == d_model // heads else head_dim,  # None: the default, as presets say it
        vocab_size=int(need("vocab_size")),
        tie_embeddings=bool(doc.get("tie_word_embeddings", False)),
        rope_theta=theta,
        rope_scaling=scaling,
        norm_eps=float(doc.get("rms_norm_eps", 1e-6)),
        context_length=int(doc.get("max_position_embeddings") or 0),
        init_std=float(doc.get("initializer_range", 0.02)),
    )


def read_llama_config(folder: str) -> ModelConfig:
    path = fs.join(folder, CONFIG)
    if not fs.exists(path):
        raise DatapipeError(f"{folder}: no {CONFIG}: not a Hugging Face model folder")
    cfg = model_from_llama_config(json.loads(fs.read_text(path)), path)
    return replace(cfg, name=f"hf:{os.path.basename(os.path.normpath(folder))}")


# --- weights ----------------------------------------------------------------------------------------------------


def leaf_tensors(leaves: Iterable[tuple[str, np.ndarray]]) -> Iterator[tuple[str, np.ndarray]]:
    """(Hugging Face name, tensor) from our parameters given one at a time (``layers/...`` ones split by layer),
    in that order: an export that holds one parameter at a time writes them so (the index maps every name to its
    file, so the order is free)."""
    for path, x in leaves:
        if path.startswith("layers/"):
            for i in range(x.shape[0]):
                yield hf_name(path, i), to_hf(path, x[i])
        else:
            yield hf_name(path), to_hf(path, x)


def _cast(x: np.ndarray, dtype: str) -> np.ndarray:
    import ml_dtypes

    target = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float32
    return np.ascontiguousarray(np.asarray(x, dtype=np.float32).astype(target))


def write_weights(
    tensors: Iterable[tuple[str, np.ndarray]],
    out_dir: str,
    dtype: str = "float32",
    max_shard_bytes: int = MAX_SHARD_BYTES,
) -> list[str]:
    """Write the safetensors file(s) of these (Hugging Face name, tensor) pairs; return the file names. One
    shard's tensors are held at a time; several shards get ``model.safetensors.index.json`` as ``save_pretrained``
    writes it (``metadata.total_size`` and a ``weight_map``)."""
    from safetensors.numpy import save_file

    if dtype not in DTYPES:
        raise DatapipeError(f"--dtype {dtype!r}: one of {', '.join(DTYPES)}")
    os.makedirs(out_dir, exist_ok=True)
    shards: list[list[str]] = []
    weight_map: dict[str, int] = {}
    pending: dict[str, np.ndarray] = {}
    size = total = 0
    tmp_names: list[str] = []

    def flush() -> None:
        nonlocal pending, size
        if not pending:
            return
        name = f"part-{len(tmp_names):05d}.safetensors.tmp"
        save_file(pending, os.path.join(out_dir, name), metadata={"format": "pt"})
        tmp_names.append(name)
        shards.append(list(pending))
        pending, size = {}, 0

    for name, x in tensors:
        arr = _cast(x, dtype)
        if pending and size + arr.nbytes > max_shard_bytes:
            flush()
        pending[name] = arr
        weight_map[name] = len(tmp_names)
        size += arr.nbytes
        total += arr.nbytes
    flush()
    if len(tmp_names) == 1:
        final = [WEIGHTS]
    else:
        final = [f"model-{i + 1:05d}-of-{len(tmp_names):05d}.safetensors" for i in range(len(tmp_names))]
    for tmp, name in zip(tmp_names, final, strict=True):
        os.replace(os.path.join(out_dir, tmp), os.path.join(out_dir, name))
    stale = [WEIGHTS, INDEX] if len(final) > 1 else [INDEX]
    for old in os.listdir(out_dir):  # an earlier export's files that this one does not overwrite
        if (old.startswith("model-") and old.endswith(".safetensors") and old not in final) or (
            old in stale and old not in final
        ):
            os.remove(os.path.join(out_dir, old))
    if len(final) > 1:
        index = {
            "metadata": {"total_size": total},
            "weight_map": {t: final[i] for t, i in sorted(weight_map.items())},
        }
        fs.write_text_atomic(os.path.join(out_dir, INDEX), json.dumps(index, indent=2) + "\n")
    return final


def _weight_files(folder: str) -> dict[str, str]:
    """Tensor name -> the safetensors file that holds it."""
    index = fs.join(folder, INDEX)
    if fs.exists(index):
        return {k: fs.join(folder, v) for k, v in json.loads(fs.read_text(index))["weight_map"].items()}
    single = fs.join(folder, WEIGHTS)
    if not fs.exists(single):
        raise DatapipeError(f"{folder}: neither {WEIGHTS} nor {INDEX}: no safetensors weights to import")
    from safetensors import safe_open

    with safe_open(single, framework="numpy") as f:
        return dict.fromkeys(f.keys(), single)


def iter_weights(folder: str, cfg: ModelConfig) -> Iterator[tuple[str, np.ndarray]]:
    """Our parameters (``("layers/wq", [n, d, h, k])``, float32) from a Hugging Face folder, one at a time (a
    stacked layer weight filled a layer at a time), so that a reader holds one parameter, not the model; a missing
    tensor or one of another shape is an error that names it."""
    from safetensors import safe_open

    files = _weight_files(folder)
    handles: dict[str, Any] = {}

    def tensor(name: str, want: tuple[int, ...]) -> np.ndarray:
        if name not in files:
            raise DatapipeError(f"{folder}: no tensor {name!r} in its safetensors files")
        if files[name] not in handles:
            handles[files[name]] = safe_open(files[name], framework="numpy").__enter__()
        w = handles[files[name]].get_tensor(name)
        if tuple(w.shape) != want:
            raise DatapipeError(
                f"{folder}: tensor {name!r} has shape {tuple(w.shape)}, config.json says {want}"
            )
        return np.asarray(w, dtype=np.float32)

    try:
        for path, shape in param_shapes(cfg).items():
            if path.startswith("layers/"):
                out = np.empty(shape, np.float32)
                want = to_hf(path, np.empty(shape[1:], np.float32)).shape
                for i in range(cfg.n_layers):
                    out[i] = from_hf(path, tensor(hf_name(path, i), want), cfg)
            else:
                want = to_hf(path, np.empty(shape, np.float32)).shape
                out = np.ascontiguousarray(from_hf(path, tensor(hf_name(path), want), cfg))
            yield path, out
            del out
    finally:
        for h in handles.values():
            h.__exit__(None, None, None)


def read_weights(folder: str, cfg: ModelConfig) -> dict[str, np.ndarray]:
    """All of :func:`iter_weights` at once (tests, small models)."""
    return dict(iter_weights(folder, cfg))


# --- tokenizer --------------------------------------------------------------------------------------------------


def tokenizer_sha256(path: str) -> str:
    """The digest a manifest records for a tokenizer: SHA-256 of its canonical serialization."""
    from tokenizers import Tokenizer

    return hashlib.sha256(Tokenizer.from_str(fs.read_text(path)).to_str().encode("utf-8")).hexdigest()


def write_tokenizer(
    tokenizer_path: str, identity: TokenizerIdentity, seq_len: int, out_dir: str
) -> dict[str, str | None]:
    """``tokenizer.json`` (the build's, byte for byte), ``tokenizer_config.json`` and ``special_tokens_map.json``
    so that ``AutoTokenizer.from_pretrained`` loads it as a ``PreTrainedTokenizerFast``. A BOS the build added
    itself (``add_bos``) becomes the tokenizer's own post-processing, so that evaluation harnesses encode text as
    the model was trained on it."""
    from tokenizers import Tokenizer, processors

    tok = Tokenizer.from_str(fs.read_text(tokenizer_path))

    def token(i: int | None) -> str | None:
        return tok.id_to_token(i) if i is not None else None

    bos, eos = token(identity.bos_id), token(identity.eos_id)
    if identity.add_bos and bos is not None and identity.bos_id is not None:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, identity.bos_id)]
        )
        fs.write_text_atomic(os.path.join(out_dir, TOKENIZER), tok.to_str())
    else:
        fs.write_bytes_atomic(os.path.join(out_dir, TOKENIZER), fs.read_bytes(tokenizer_path))
    special = {k: v for k, v in (("bos_token", bos), ("eos_token", eos)) if v is not None}
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": seq_len,
        "clean_up_tokenization_spaces": False,
        **special,
    }
    fs.write_text_atomic(os.path.join(out_dir, "tokenizer_config.json"), json.dumps(config, indent=2) + "\n")
    fs.write_text_atomic(
        os.path.join(out_dir, "special_tokens_map.json"), json.dumps(special, indent=2) + "\n"
    )
    return {"bos": bos, "eos": eos}


def check_fits(cfg: ModelConfig, folder: str, manifest: Manifest) -> None:
    """Refuse, before any step, a Hugging Face model that cannot train on this mixture: a vocabulary smaller than
    the mixture's tokenizer, or another tokenizer (token ids would mean other strings)."""
    tok = manifest.tokenizer
    if cfg.vocab_size < tok.vocab_size:
        raise DatapipeError(
            f"hf:{folder}: vocab_size {cfg.vocab_size} is smaller than the mixture tokenizer's {tok.vocab_size}"
        )
    path = fs.join(folder, TOKENIZER)
    if not fs.exists(path):
        raise DatapipeError(
            f"hf:{folder}: no {TOKENIZER}, so its tokens cannot be checked against the mixture's"
        )
    ours = tokenizer_sha256(path)
    if ours != tok.sha256:
        copy = fs.join(manifest.folder, TOKENIZER)
        # an export adds the build's BOS as post-processing: the vocabulary and merges are what must agree
        if not (fs.exists(copy) and _same_vocabulary(path, copy)):
            raise DatapipeError(
                f"hf:{folder}: its tokenizer (sha256 {ours[:12]}) is not the mixture's ({tok.sha256[:12]}, "
                f"{tok.name}); build the mixture with tokenizer: {{path: {path}}}"
            )


def _same_vocabulary(a: str, b: str) -> bool:
    """Two tokenizer files with the same model (vocabulary, merges), normalizer, pre-tokenizer, decoder and added
    tokens: they differ at most in post-processing."""
    docs = [json.loads(fs.read_text(p)) for p in (a, b)]
    keys = ("model", "normalizer", "pre_tokenizer", "decoder", "added_tokens")
    return all(docs[0].get(k) == docs[1].get(k) for k in keys)


def with_shape_of(base: ModelConfig, spec: dict[str, Any]) -> ModelConfig:
    """An imported model's config with a run's own settings on top (``compute_dtype``, ``remat``); a setting that
    changes a shape is refused, since the weights fix the shape."""
    shape = {
        "d_model",
        "n_layers",
        "n_heads",
        "n_kv_heads",
        "d_ff",
        "head_dim",
        "vocab_size",
        "tie_embeddings",
    }
    clash = sorted(k for k in spec if k in shape and spec[k] != getattr(base, k))
    if clash:
        raise DatapipeError(
            f"{base.name}: the weights fix {', '.join(clash)}; drop them from the model settings "
            f"(config.json says {', '.join(f'{k}={getattr(base, k)}' for k in clash)})"
        )
    return replace(base, **spec)


# --- a run, exported --------------------------------------------------------------------------------------------


def parse_size(text: str) -> int:
    """``5GB``, ``500MB``, ``64KiB`` or a number of bytes (``save_pretrained``'s ``max_shard_size`` notation)."""
    units = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]*)?)\s*([A-Z]*)", text.strip().upper())
    if match is None or match.group(2) not in units or float(match.group(1)) * units[match.group(2)] < 1:
        raise DatapipeError(f"--max-shard-size {text!r}: expected a size such as 5GB, 500MB or 1000000")
    return int(float(match.group(1)) * units[match.group(2)])


def tokenizer_file(manifest: Manifest) -> str:
    """The build's tokenizer file: the copy beside the manifest, else the path the manifest names, whichever has
    the manifest's digest."""
    identity, manifest_dir = manifest.tokenizer, manifest.folder
    candidates = [fs.join(manifest_dir, TOKENIZER), identity.name]
    for path in candidates:
        if path and fs.exists(path) and path.endswith(".json") and tokenizer_sha256(path) == identity.sha256:
            return path
    raise DatapipeError(
        f"{manifest_dir}: the mixture's tokenizer (sha256 {identity.sha256[:12]}) is neither beside the "
        f"manifest ({TOKENIZER}) nor at {identity.name!r}: an export needs its tokenizer files"
    )
