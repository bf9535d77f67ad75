"""Attention on a TPU through Pallas's splash attention kernel (``jax.experimental.pallas.ops.tpu``), the kernel
MaxText and Levanter train with there: the ``[q, k]`` scores stay in the chip's vector memory, the blocks above the
diagonal are skipped, and documents packed in a row stay apart through ``segment_ids`` given to the kernel (no
``batch x seq^2`` mask in memory).

Why: the XLA reference path writes and re-reads fp32 scores of ``batch x heads x seq^2`` per layer; on one TPU v5e
the ``150m`` preset at seq_len 4096 ran at 22.5% MFU with it and at 36.9% with this kernel, 43.8% with the block sizes
of :data:`TUNED` and its residuals kept (docs/benchmarks.md, "On one TPU v5e").

The kernel works on one device's block of heads (``[heads, seq, head_dim]``, vmapped over the batch), so on a mesh
it runs under ``shard_map``: batch over (``data``, ``fsdp``), heads over ``model`` where the mesh axis divides both
the query and the KV heads (as :mod:`datapipe.train.sharding` shards ``wq``/``wk``/``wv``), whole otherwise. On a
CPU it runs in Pallas's interpreter, which is how the tests pin it to the reference (slow: for tests only;
:func:`datapipe.train.model.attention_kernel` never picks it there); a GPU is refused (its kernels are cuDNN's).
"""

from __future__ import annotations

import os
from typing import NamedTuple

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

LANES = 128  # the kernel's block sizes are multiples of the TPU's 128 lanes
BLOCKS = (512, 256, 128)  # the largest that divides seq_len is taken (MaxText's default is 512)
ENV = "DATAPIPE_SPLASH_BLOCKS"  # six sizes, comma-separated (Blocks' order): what a tuning run tries


class Blocks(NamedTuple):
    """The kernel's tile sizes: forward (query rows, key rows fetched, key rows per matmul) and the fused
    backward's (query rows, key rows fetched, key rows per matmul)."""

    q: int
    kv: int
    kv_compute: int
    q_dkv: int
    kv_dkv: int
    kv_dkv_compute: int


# Measured on one TPU v5e (benchmarks/train_mfu.py --splash-sweep; docs/benchmarks.md): (seq_len, head_dim) -> the
# fastest forward + backward, 1.20x (850m) and 1.18x (150m) the speed of 512 everywhere. Other shapes take the
# largest of BLOCKS that divides seq_len, everywhere.
TUNED: dict[tuple[int, int], Blocks] = {
    (4096, 128): Blocks(1024, 1024, 512, 1024, 1024, 1024),
    (4096, 64): Blocks(1024, 1024, 512, 1024, 1024, 1024),
}
# The name the kernel gives what its backward needs (its output and the softmax's logsumexp, [heads, seq]): what a
# remat policy saves to keep the backward from running the forward kernel again (datapipe.train.model).
RESIDUALS = "attention_residuals"


def block_sizes(seq_len: int, head_dim: int) -> Blocks:
    """The tile sizes for a shape: ``DATAPIPE_SPLASH_BLOCKS`` when set, else :data:`TUNED`'s, else the largest of
    :data:`BLOCKS` that divides ``seq_len`` for all six. Sizes must divide ``seq_len``."""
    raw = os.environ.get(ENV, "").strip()
    if raw:
        try:
            blocks = Blocks(*(int(x) for x in raw.split(",")))
        except (TypeError, ValueError):
            raise ValueError(f"{ENV}={raw!r}: expected six comma-separated block sizes") from None
    else:
        block = next(b for b in BLOCKS if seq_len % b == 0)
        blocks = TUNED.get((seq_len, head_dim), Blocks(*([block] * 6)))
    if any(b <= 0 or seq_len % b for b in blocks):
        raise ValueError(f"splash block sizes {tuple(blocks)} must divide seq_len {seq_len}")
    return blocks


def supports(seq_len: int) -> bool:
    """Whether the kernel takes this sequence length: a multiple of 128."""
    return seq_len % LANES == 0


def splash_attention(q, k, v, segment_ids, sharding: NamedSharding | None = None) -> jax.Array:
    """``softmax(q k^T / sqrt(head_dim)) v`` within each document, causal: ``q [batch, seq, heads, head_dim]``,
    ``k``/``v`` ``[batch, seq, kv_heads, head_dim]`` (grouped heads as the einsum path groups them: query head
    ``i`` reads KV head ``i // (heads / kv_heads)``), ``segment_ids [batch, seq]`` (padding, -1, sees earlier
    padding, as :func:`datapipe.train.model.attention_mask` says). Returns ``[batch, seq, heads, head_dim]``.
    ``sharding``: the activations' (the trainer's ``[batch, seq, d_model]`` sharding): its mesh, and the mesh axes
    its first dimension, the batch, is split over."""
    t = q.shape[1]
    if not supports(t):
        raise ValueError(f"splash attention needs a sequence length that is a multiple of {LANES}, got {t}")
    backend = jax.default_backend()
    if backend not in ("tpu", "cpu"):
        raise ValueError(
            f"splash attention is a TPU kernel (on a CPU it runs interpreted, for tests), not for {backend}"
        )
    interpret = backend != "tpu"
    q = q * np.asarray(1.0 / np.sqrt(q.shape[-1]), q.dtype)  # the kernel does not scale
    if sharding is None or sharding.mesh.devices.size == 1:
        return _local(q, k, v, segment_ids, interpret)
    mesh, batch = sharding.mesh, sharding.spec[0]
    model = mesh.shape.get("model", 1)
    heads = "model" if model > 1 and q.shape[2] % model == 0 and k.shape[2] % model == 0 else None
    qkv = PartitionSpec(batch, None, heads, None)
    return jax.shard_map(
        lambda q, k, v, s: _local(q, k, v, s, interpret),
        mesh=mesh,
        in_specs=(qkv, qkv, qkv, PartitionSpec(batch, None)),
        out_specs=qkv,
        check_vma=False,
    )(q, k, v, segment_ids)


def _local(q, k, v, segment_ids, interpret: bool) -> jax.Array:
    """One device's block: the kernel made for its shapes (the mask's block tables are numpy, built at trace time,
    once per compiled step since the layers run under one ``scan``), vmapped over the batch."""
    from jax.experimental.pallas.ops.tpu import splash_attention as sa

    t, heads = q.shape[1], q.shape[2]
    b = block_sizes(t, q.shape[3])
    sizes = sa.BlockSizes(
        block_q=b.q,
        block_kv=b.kv,
        block_kv_compute=b.kv_compute,
        block_q_dkv=b.q_dkv,
        block_kv_dkv=b.kv_dkv,
        block_kv_dkv_compute=b.kv_dkv_compute,
        use_fused_bwd_kernel=True,
    )
    mask = sa.MultiHeadMask([sa.CausalMask((t, t))] * heads)
    kernel = sa.make_splash_mha(
        mask,
        head_shards=1,
        q_seq_shards=1,
        block_sizes=sizes,
        interpret=interpret,
        residual_checkpoint_name=RESIDUALS,
    )

    def row(q, k, v, s):  # [seq, heads, head_dim] -> the kernel's [heads, seq, head_dim]
        out = kernel(
            q.swapaxes(0, 1), k.swapaxes(0, 1), v.swapaxes(0, 1), segment_ids=sa.SegmentIds(q=s, kv=s)
        )
        return out.swapaxes(0, 1)

    return jax.vmap(row)(q, k, v, segment_ids.astype(np.int32))
