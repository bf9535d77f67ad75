"""A Llama-style decoder in plain JAX: RMSNorm, rotary embeddings, SwiGLU, grouped-query attention that stays
within documents (``segment_ids``), tied or untied embeddings.

Parameters are a dict of fp32 arrays; layer weights are stacked on a leading ``layers`` axis and applied with
``jax.lax.scan`` (one compiled layer, whatever the depth), each layer wrapped in ``jax.checkpoint`` with the chosen
rematerialization policy. Matmuls run in ``compute_dtype`` (bf16 by default); norms, softmax and the loss in fp32.

Every parameter has named logical axes (:data:`PARAM_AXES`); ``datapipe.train.sharding`` maps them onto a mesh.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax.ad_checkpoint import checkpoint_name
from jax.sharding import NamedSharding, PartitionSpec

from datapipe.train.splash import RESIDUALS as SPLASH_RESIDUALS
from datapipe.train.splash import splash_attention
from datapipe.train.splash import supports as splash_supports

Params = dict[str, Any]

# logical axes of every parameter (the stacked layer axis first for layer weights)
PARAM_AXES: dict[str, tuple[str | None, ...]] = {
    "embed": ("vocab", "embed"),
    "lm_head": ("embed", "vocab"),
    "final_norm": (None,),
    "layers/attn_norm": ("layers", None),
    "layers/wq": ("layers", "embed", "heads", None),
    "layers/wk": ("layers", "embed", "kv_heads", None),
    "layers/wv": ("layers", "embed", "kv_heads", None),
    "layers/wo": ("layers", "heads", None, "embed"),
    "layers/mlp_norm": ("layers", None),
    "layers/w_gate": ("layers", "embed", "mlp"),
    "layers/w_up": ("layers", "embed", "mlp"),
    "layers/w_down": ("layers", "mlp", "embed"),
}
NO_DECAY = ("final_norm", "layers/attn_norm", "layers/mlp_norm")


@dataclass(frozen=True)
class RopeScaling:
    """Llama 3.1's rotary frequency scaling (``rope_type: llama3``): wavelengths longer than
    ``original_max_position_embeddings / low_freq_factor`` are stretched by ``factor``, those shorter than
    ``.../ high_freq_factor`` are kept, and the band between is interpolated. Llama-3.2-1B: 32, 1, 4, 8192."""

    factor: float = 32.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_position_embeddings: int = 8192


@dataclass(frozen=True)
class ModelConfig:
    name: str
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_ff: int
    head_dim: int | None = None  # default d_model // n_heads
    vocab_size: int = 0  # 0: the manifest tokenizer's, rounded up to a multiple of 128
    tie_embeddings: bool = False
    rope_theta: float = 10_000.0
    rope_scaling: RopeScaling | None = None
    norm_eps: float = 1e-5
    compute_dtype: str = "bfloat16"
    remat: str = (
        "dots_no_batch"  # none | full | dots | dots_no_batch | dots_attention | attention | attention_offload
    )
    attention: str = "auto"  # auto | xla | cudnn | splash: see attention_kernel
    init_std: float = 0.02
    context_length: int = 0  # the context a model states (an imported one's); 0: the length it is trained on
    loss_chunk: int = 0  # sequence positions per LM-head chunk (0: all logits at once); see chunked_loss_sums

    @property
    def dh(self) -> int:
        return self.head_dim or self.d_model // self.n_heads

    def with_vocab(self, vocab: int) -> ModelConfig:
        return self if self.vocab_size else replace(self, vocab_size=-(-vocab // 128) * 128)

    def num_params(self, embeddings: bool = True) -> int:
        d, f, h, kv, dh = self.d_model, self.d_ff, self.n_heads, self.n_kv_heads, self.dh
        layer = 2 * d + d * h * dh + 2 * d * kv * dh + h * dh * d + 3 * d * f
        emb = self.vocab_size * d * (1 if self.tie_embeddings else 2)
        return self.n_layers * layer + d + (emb if embeddings else 0)

    def flops_per_token(self, seq_len: int, causal: bool = False) -> float:
        """Training FLOPs per token (forward + backward = 3x forward): every matmul including the LM head, and
        attention scores and values over the full ``seq_len`` (the convention of PaLM's MFU, the default), or,
        ``causal``, over the keys a token attends to, ``(seq_len + 1) / 2`` on average (what causal kernels such
        as splash attention compute: they skip the masked half). Both are reported; the first is the larger."""
        d, f, h, kv, dh = self.d_model, self.d_ff, self.n_heads, self.n_kv_heads, self.dh
        matmul = self.n_layers * (d * h * dh + 2 * d * kv * dh + h * dh * d + 3 * d * f) + d * self.vocab_size
        attended = (seq_len + 1) / 2 if causal else seq_len
        attention = self.n_layers * 2 * h * dh * attended
        return 3 * 2 * (matmul + attention)


_1B = ModelConfig(
    "1b", d_model=2048, n_layers=16, n_heads=32, n_kv_heads=8, d_ff=8192, tie_embeddings=True, rope_theta=5e5
)
PRESETS: dict[str, ModelConfig] = {
    "tiny": ModelConfig(
        "tiny", d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=192, tie_embeddings=True
    ),
    "150m": ModelConfig("150m", d_model=768, n_layers=12, n_heads=12, n_kv_heads=12, d_ff=2688),
    "1b": _1B,
    # A Llama-shaped model whose training state and a batch of 3 x 4096 tokens fit one 16 GB chip (TPU
    # v5e) with bf16 moments, the attention remat policy and the chunked LM-head loss (docs/training.md, "Memory"):
    # 1b's width with 12 layers and heads of 128 (the TPU's lanes; 1b's 64 halve the attention kernel's matmul width).
    "850m": replace(_1B, name="850m", n_layers=12, n_heads=16, remat="attention", loss_chunk=512),
    "marin_8b": ModelConfig(
        "marin_8b", d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8, d_ff=14336, rope_theta=5e5
    ),
}


def init_params(cfg: ModelConfig, key: jax.Array) -> Params:
    """Truncated-normal weights (std ``init_std``; output projections scaled by 1/sqrt(2 * layers)), unit norms."""
    d, f, h, kv, dh, n = cfg.d_model, cfg.d_ff, cfg.n_heads, cfg.n_kv_heads, cfg.dh, cfg.n_layers
    keys = iter(jax.random.split(key, 9))
    out_std = cfg.init_std / np.sqrt(2 * n)

    def normal(shape, std):
        return std * jax.random.truncated_normal(next(keys), -3.0, 3.0, shape, jnp.float32)

    params: Params = {
        "embed": normal((cfg.vocab_size, d), cfg.init_std),
        "final_norm": jnp.ones((d,), jnp.float32),
        "layers": {
            "attn_norm": jnp.ones((n, d), jnp.float32),
            "wq": normal((n, d, h, dh), cfg.init_std),
            "wk": normal((n, d, kv, dh), cfg.init_std),
            "wv": normal((n, d, kv, dh), cfg.init_std),
            "wo": normal((n, h, dh, d), out_std),
            "mlp_norm": jnp.ones((n, d), jnp.float32),
            "w_gate": normal((n, d, f), cfg.init_std),
            "w_up": normal((n, d, f), cfg.init_std),
            "w_down": normal((n, f, d), out_std),
        },
    }
    if not cfg.tie_embeddings:
        params["lm_head"] = normal((d, cfg.vocab_size), cfg.init_std)
    else:
        next(keys)
    return params


def param_paths(params: Params) -> dict[str, Any]:
    """Flat ``{"layers/wq": array, ...}`` view of the parameter tree."""
    flat = {}
    for k, v in params.items():
        if isinstance(v, dict):
            flat.update({f"{k}/{kk}": vv for kk, vv in v.items()})
        else:
            flat[k] = v
    return flat


def _rms_norm(x: jax.Array, scale: jax.Array, eps: float) -> jax.Array:
    x32 = x.astype(jnp.float32)
    y = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + eps)
    return (y * scale).astype(x.dtype)


def rope_frequencies(cfg: ModelConfig) -> jax.Array:
    """The rotary inverse frequencies ``[head_dim / 2]`` (float32), with Llama 3's scaling when configured; the
    same formula, in the same order of float32 operations, as ``transformers``' ``_compute_llama3_parameters``."""
    dh = cfg.dh
    freqs = 1.0 / (cfg.rope_theta ** (jnp.arange(0, dh, 2, dtype=jnp.float32) / dh))
    s = cfg.rope_scaling
    if s is None:
        return freqs
    low_wavelen = s.original_max_position_embeddings / s.low_freq_factor
    high_wavelen = s.original_max_position_embeddings / s.high_freq_factor
    wavelen = 2 * np.pi / freqs
    scaled = jnp.where(wavelen > low_wavelen, freqs / s.factor, freqs)
    smooth = (s.original_max_position_embeddings / wavelen - s.low_freq_factor) / (
        s.high_freq_factor - s.low_freq_factor
    )
    smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return jnp.where(medium, smoothed, scaled)


def _rotary(x: jax.Array, positions: jax.Array, freqs: jax.Array) -> jax.Array:
    """Rotate-half rotary embeddings (Llama's convention) on ``[batch, seq, heads, head_dim]``."""
    angles = positions[..., None].astype(jnp.float32) * freqs  # [batch, seq, dh/2]
    cos = jnp.cos(angles)[:, :, None, :]
    sin = jnp.sin(angles)[:, :, None, :]
    x1, x2 = jnp.split(x.astype(jnp.float32), 2, axis=-1)
    out = jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
    return out.astype(x.dtype)


def attention_mask(segment_ids: jax.Array) -> jax.Array:
    """``[batch, 1, 1, q, k]``: causal, and a query sees only keys of its own segment (padding, -1, sees itself)."""
    t = segment_ids.shape[1]
    causal = jnp.tril(jnp.ones((t, t), dtype=bool))
    same = segment_ids[:, :, None] == segment_ids[:, None, :]
    return (causal[None] & same)[:, None, None]


ATTENTION_KERNELS = ("auto", "xla", "cudnn", "splash")


def attention_kernel(cfg: ModelConfig, backend: str | None = None, seq_len: int | None = None) -> str:
    """The attention kernel a model runs with: ``xla`` (einsums, softmax in fp32: the reference, on any device),
    ``cudnn`` (cuDNN's fused flash attention through ``jax.nn.dot_product_attention``: the [q, k] scores never reach
    device memory) or ``splash`` (Pallas's splash attention on a TPU, :mod:`datapipe.train.splash`). ``auto`` takes
    cuDNN on a GPU when the shapes are ones it fuses (bf16/fp16, head_dim a multiple of 8 up to 128), and splash on
    a TPU when ``seq_len`` (if given) is a multiple of 128. Why it matters: at seq_len 4096 the XLA path writes and
    re-reads fp32 scores of ``batch x heads x 4096^2`` per layer, which bounds the 1b preset's MFU on an H200 and
    the 150m preset's on a TPU v5e (docs/benchmarks.md)."""
    if cfg.attention not in ATTENTION_KERNELS:
        raise ValueError(f"attention must be one of {', '.join(ATTENTION_KERNELS)}, got {cfg.attention!r}")
    if cfg.attention != "auto":
        return cfg.attention
    backend = backend or jax.default_backend()
    fusable = cfg.compute_dtype in ("bfloat16", "float16") and cfg.dh % 8 == 0 and cfg.dh <= 128
    if backend == "gpu" and fusable:
        return "cudnn"
    if backend == "tpu" and (seq_len is None or splash_supports(seq_len)):
        return "splash"
    return "xla"


def fused_attention(q, k, v, mask, implementation: Literal["xla", "cudnn"]) -> jax.Array:
    """``jax.nn.dot_product_attention`` on ``[batch, seq, heads, head_dim]`` (grouped kv heads), the layout and head
    grouping of the einsum path. The mask (causal and same document, :func:`attention_mask`) becomes an additive
    bias; ``is_causal`` lets cuDNN skip the blocks above the diagonal. ``implementation="xla"`` is the same call on
    any device, which is how the tests pin the conventions without a GPU."""
    return jax.nn.dot_product_attention(
        q, k, v, mask=mask[:, 0], is_causal=True, implementation=implementation
    )


def _attention(x, lp, mask, positions, cfg: ModelConfig, dtype, segment_ids=None, sharding=None) -> jax.Array:
    """``segment_ids`` and ``sharding`` (the activations'): what the splash kernel takes instead of ``mask`` (it
    runs per device)."""
    b, t, _ = x.shape
    q = jnp.einsum("btd,dhk->bthk", x, lp["wq"].astype(dtype))
    k = jnp.einsum("btd,dhk->bthk", x, lp["wk"].astype(dtype))
    v = jnp.einsum("btd,dhk->bthk", x, lp["wv"].astype(dtype))
    freqs = rope_frequencies(cfg)
    q, k = _rotary(q, positions, freqs), _rotary(k, positions, freqs)
    # what the attention remat policies keep: the kernel's inputs (its backward needs them; the projections that
    # made them are then not run again)
    q, k, v = checkpoint_name(q, "query"), checkpoint_name(k, "key"), checkpoint_name(v, "value")
    kernel = attention_kernel(cfg, seq_len=t)
    if kernel == "cudnn":
        out = fused_attention(q, k, v, mask, "cudnn")
    elif kernel == "splash":
        if segment_ids is None:
            raise ValueError("the splash attention kernel needs the segment ids")
        out = splash_attention(q, k, v, segment_ids, sharding)
    else:
        groups = cfg.n_heads // cfg.n_kv_heads
        q = q.reshape(b, t, cfg.n_kv_heads, groups, cfg.dh)
        scores = jnp.einsum("bqkgd,bskd->bkgqs", q, k).astype(jnp.float32) / np.sqrt(cfg.dh)
        scores = jnp.where(mask, scores, jnp.finfo(jnp.float32).min)
        probs = jax.nn.softmax(scores, axis=-1).astype(dtype)
        out = jnp.einsum("bkgqs,bskd->bqkgd", probs, v).reshape(b, t, cfg.n_heads, cfg.dh)
    out = checkpoint_name(out, "attention")
    return jnp.einsum("bthk,hkd->btd", out, lp["wo"].astype(dtype))


def _mlp(x, lp, dtype) -> jax.Array:
    gate = checkpoint_name(jnp.einsum("btd,df->btf", x, lp["w_gate"].astype(dtype)), "mlp_gate")
    up = checkpoint_name(jnp.einsum("btd,df->btf", x, lp["w_up"].astype(dtype)), "mlp_up")
    return jnp.einsum("btf,fd->btd", jax.nn.silu(gate) * up, lp["w_down"].astype(dtype))


_dots = jax.checkpoint_policies.dots_with_no_batch_dims_saveable
_names = jax.checkpoint_policies.save_only_these_names
_both = jax.checkpoint_policies.save_from_both_policies
_QKV = ("query", "key", "value")


def _attention_offload_policy(saved):
    """``saved`` (a policy) on the chip, and the MLP's gate and up projections copied to the host's memory in the
    forward pass and back for the backward (JAX's memory kinds), instead of running them again."""
    from jax._src.interpreters import partial_eval as pe

    offload = jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=[],
        names_which_can_be_offloaded=["mlp_gate", "mlp_up"],
        offload_src="device",
        offload_dst="pinned_host",
    )

    def policy(prim, *args, **params):
        return pe.Saveable if saved(prim, *args, **params) else offload(prim, *args, **params)

    return policy


REMAT_POLICIES = (
    "none",
    "full",
    "dots",
    "dots_no_batch",
    "dots_attention",
    "attention",
    "attention_offload",
)
HOST_OFFLOAD_POLICIES = ("attention_offload",)  # TPU only: they move activations to the host's memory


def remat_policy(name: str, kernel: str):
    """The ``jax.checkpoint`` policy of ``model.remat`` (``None``: no rematerialization) for an attention kernel.

    ``dots_no_batch``: keep every matmul output without batch dimensions (all projections), run the rest again.
    ``dots_attention``: that, and the attention's output (with splash, the kernel's outputs), so the backward pass
    does not run attention forward again. ``attention``: keep only the attention's inputs (q, k, v) and output, run
    the norms and the MLP again (a third of the MLP's forward FLOPs): the policy for a model whose activations
    would not fit otherwise. ``attention_offload``: ``attention`` with the MLP's gate and up projections kept in
    the host's memory (TPU only). ``full``: keep only each layer's input."""
    if name not in REMAT_POLICIES:
        raise ValueError(f"remat must be one of {', '.join(REMAT_POLICIES)}, got {name!r}")
    # With splash, what the kernel's backward reads (its output and logsumexp, named by the kernel: a name on the
    # kernel's result would not do, the backward reads the kernel's own residuals); elsewhere the named attention
    # output (the cuDNN and XLA paths). Saving all the kernel's outputs would keep its logsumexp 128 lanes wide:
    # 512 bytes a token and head, as much as the 850m preset's q, k, v and output together.
    attention = _names(SPLASH_RESIDUALS) if kernel == "splash" else _names("attention")
    if name == "none":
        return None
    if name == "full":
        return jax.checkpoint_policies.nothing_saveable
    if name == "dots":
        return jax.checkpoint_policies.checkpoint_dots
    if name == "dots_no_batch":
        return _dots
    if name == "dots_attention":
        return _both(_dots, attention)
    saved = _both(_names(*_QKV), attention)
    if name == "attention":
        return saved
    return _attention_offload_policy(saved)


def hidden_states(
    params: Params, input_ids: jax.Array, segment_ids: jax.Array, cfg: ModelConfig, activation_sharding=None
) -> jax.Array:
    """The last layer's output after the final norm, ``[batch, seq, d_model]`` in ``compute_dtype``: what the LM
    head multiplies. Positions restart at 0 in every segment."""
    dtype = jnp.dtype(cfg.compute_dtype)
    mask = attention_mask(segment_ids)  # unused where the kernel is splash (XLA drops it)
    starts = jnp.concatenate(
        [jnp.ones_like(segment_ids[:, :1], bool), segment_ids[:, 1:] != segment_ids[:, :-1]], axis=1
    )
    idx = jnp.arange(segment_ids.shape[1])[None, :]
    positions = idx - jax.lax.cummax(jnp.where(starts, idx, 0), axis=1)

    def constrain(h):
        return h if activation_sharding is None else jax.lax.with_sharding_constraint(h, activation_sharding)

    def layer(h, lp):
        x = _rms_norm(h, lp["attn_norm"], cfg.norm_eps)
        h = h + _attention(x, lp, mask, positions, cfg, dtype, segment_ids, activation_sharding)
        h = h + _mlp(_rms_norm(h, lp["mlp_norm"], cfg.norm_eps), lp, dtype)
        return constrain(h), None

    if cfg.remat != "none":
        policy = remat_policy(cfg.remat, attention_kernel(cfg, seq_len=segment_ids.shape[1]))
        layer = jax.checkpoint(layer, policy=policy, prevent_cse=False)
    table = params["embed"].astype(dtype)
    if (
        activation_sharding is not None
    ):  # gather from a whole table: a sharded gather would be replicated anyway
        table = jax.lax.with_sharding_constraint(
            table, NamedSharding(activation_sharding.mesh, PartitionSpec())
        )
    h = constrain(table[input_ids])
    h, _ = jax.lax.scan(layer, h, params["layers"])
    return _rms_norm(h, params["final_norm"], cfg.norm_eps)


def output_head(params: Params, cfg: ModelConfig) -> jax.Array:
    """The LM head ``[d_model, vocab]`` (fp32): the embedding's transpose when tied."""
    return params["embed"].T if cfg.tie_embeddings else params["lm_head"]


def forward(
    params: Params, input_ids: jax.Array, segment_ids: jax.Array, cfg: ModelConfig, activation_sharding=None
) -> jax.Array:
    """Logits ``[batch, seq, vocab]`` in fp32. Positions restart at 0 in every segment."""
    h = hidden_states(params, input_ids, segment_ids, cfg, activation_sharding)
    head = output_head(params, cfg).astype(jnp.dtype(cfg.compute_dtype))
    return jnp.einsum("btd,dv->btv", h, head).astype(jnp.float32)


def loss_sums(
    params: Params,
    batch: dict[str, jax.Array],
    cfg: ModelConfig,
    z_loss: float = 0.0,
    activation_sharding=None,
) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
    """Sums, so that microbatches add up exactly: (objective, (cross-entropy, target count)).

    Targets are next tokens in the same document (the prediction across a document edge and padding are skipped);
    the objective adds ``z_loss * logsumexp^2`` per target. The mean loss is ``cross-entropy / count``."""
    ids, seg = batch["input_ids"], batch["segment_ids"]
    targets = ids[:, 1:]
    valid = (seg[:, 1:] == seg[:, :-1]) & (seg[:, 1:] >= 0)
    count = valid.sum().astype(jnp.float32)
    if cfg.loss_chunk:
        h = hidden_states(params, ids, seg, cfg, activation_sharding)
        # every position, the last one with no target
        targets_all = jnp.concatenate([targets, jnp.zeros_like(ids[:, :1])], axis=1)
        valid_all = jnp.concatenate([valid, jnp.zeros_like(valid[:, :1])], axis=1)
        objective, ce = chunked_cross_entropy(
            h, output_head(params, cfg), targets_all, valid_all, z_loss, cfg.loss_chunk
        )
        return objective, (ce, count)
    logits = forward(params, ids, seg, cfg, activation_sharding)[:, :-1]
    lse = jax.nn.logsumexp(logits, axis=-1)
    target_logit = jnp.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    ce = jnp.where(valid, lse - target_logit, 0.0).sum()
    objective = ce + z_loss * jnp.where(valid, lse * lse, 0.0).sum() if z_loss else ce
    return objective, (ce, count)


def check_loss_chunk(chunk: int, seq_len: int) -> None:
    if chunk < 0 or (chunk and seq_len % chunk):
        raise ValueError(f"loss_chunk {chunk} must divide seq_len {seq_len} (or be 0: no chunks)")


def _chunks(h: jax.Array, targets: jax.Array, valid: jax.Array, chunk: int):
    """``[batch, seq, ...]`` -> ``[seq / chunk, batch, chunk, ...]``, the scan's order."""
    check_loss_chunk(chunk, h.shape[1])

    def split(x):
        return x.reshape(x.shape[0], x.shape[1] // chunk, chunk, *x.shape[2:]).swapaxes(0, 1)

    return split(h), split(targets), split(valid)


def _einsum_f32(spec: str, a: jax.Array, b: jax.Array) -> jax.Array:
    """``einsum`` with an fp32 result from ``compute_dtype`` operands: the accelerators' matmul accumulates in fp32
    and returns that; XLA's CPU backend does not take bf16 x bf16 -> fp32 for every shape, so there the operands
    are widened first (exactly: bf16 values are fp32 values)."""
    if jax.default_backend() == "cpu":
        return jnp.einsum(spec, a.astype(jnp.float32), b.astype(jnp.float32))
    return jnp.einsum(spec, a, b, preferred_element_type=jnp.float32)


def _chunk_loss(x, w, t, v, z_loss: float):
    """(cross-entropy sum, z-loss sum, fp32 logits, logsumexp) of one chunk; logits straight from the matmul's fp32
    accumulator (the reference path rounds them to ``compute_dtype`` first)."""
    logits = _einsum_f32("bcd,dv->bcv", x, w)
    lse = jax.nn.logsumexp(logits, axis=-1)
    target = jnp.take_along_axis(logits, t[..., None], axis=-1)[..., 0]
    ce = jnp.where(v, lse - target, 0.0).sum()
    zz = jnp.where(v, lse * lse, 0.0).sum() if z_loss else jnp.zeros((), jnp.float32)
    return ce, zz, logits, lse


@partial(jax.custom_vjp, nondiff_argnums=(4, 5))
def chunked_cross_entropy(h, head, targets, valid, z_loss: float, chunk: int):
    """(objective, cross-entropy) summed over the valid targets, as :func:`loss_sums` computes them from the full
    logits, but ``chunk`` sequence positions at a time under ``lax.scan``: the ``[batch, seq, vocab]`` logits (fp32,
    6.6 GB for 8 x 4096 tokens of GPT-2's vocabulary) never exist whole, only ``[batch, chunk, vocab]`` of them.

    Differentiated, each chunk's logits give their gradients at once (softmax minus the target, in the forward
    pass), so nothing is recomputed: the backward pass scales the stored ``d h`` (``[batch, seq, d_model]``) and
    ``d head`` (fp32, accumulated over the chunks). Only the objective is differentiated: the cross-entropy's own
    cotangent counts only where the objective is the cross-entropy (``z_loss`` 0)."""
    dtype = h.dtype
    w = head.astype(dtype)

    def body(acc, xs):
        x, t, v = xs
        ce, zz, _, _ = _chunk_loss(x, w, t, v, z_loss)
        return (acc[0] + ce, acc[1] + zz), None

    zero = jnp.zeros((), jnp.float32)
    (ce, zz), _ = jax.lax.scan(body, (zero, zero), _chunks(h, targets, valid, chunk))
    return ce + z_loss * zz, ce


def _chunked_fwd(h, head, targets, valid, z_loss: float, chunk: int):
    dtype = h.dtype
    w = head.astype(dtype)
    vocab = w.shape[1]

    def body(carry, xs):
        d_head, ce_acc, zz_acc = carry
        x, t, v = xs
        ce, zz, logits, lse = _chunk_loss(x, w, t, v, z_loss)
        # d objective / d logits: softmax * (1 + 2 z lse) - one-hot(target), on valid positions
        scale = jnp.where(v, 1.0 + 2.0 * z_loss * lse, 0.0)
        hit = (jnp.arange(vocab, dtype=t.dtype) == t[..., None]) & v[..., None]
        d_logits = (jnp.exp(logits - lse[..., None]) * scale[..., None] - hit).astype(dtype)
        d_x = jnp.einsum("bcv,dv->bcd", d_logits, w)
        d_head = d_head + _einsum_f32("bcd,bcv->dv", x, d_logits)
        return (d_head, ce_acc + ce, zz_acc + zz), d_x

    zero = jnp.zeros((), jnp.float32)
    init = (jnp.zeros(head.shape, jnp.float32), zero, zero)
    (d_head, ce, zz), d_x = jax.lax.scan(body, init, _chunks(h, targets, valid, chunk))
    d_h = d_x.swapaxes(0, 1).reshape(h.shape)
    return (ce + z_loss * zz, ce), (d_h, d_head)


def _chunked_bwd(z_loss: float, chunk: int, residuals, cotangents):
    d_h, d_head = residuals
    g_objective, g_ce = cotangents
    g = g_objective + g_ce if not z_loss else g_objective
    return (d_h * g.astype(d_h.dtype), d_head * g, None, None)


chunked_cross_entropy.defvjp(_chunked_fwd, _chunked_bwd)
