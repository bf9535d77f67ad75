"""Attention on a TPU through Pallas's splash attention kernel (``jax.experimental.pallas.ops.tpu``), the kernel
MaxText and Levanter train with there: the ``[q, k]`` scores stay in the chip's vector memory, the blocks above the
diagonal are skipped, and documents packed in a row stay apart through ``segment_ids`` given to the kernel (no
``batch x seq^2`` mask in memory).

Why: the XLA reference path writes and re-reads fp32 scores of ``batch x heads x seq^2`` per layer; on one TPU v5e
the ``150m`` preset at seq_len 4096 ran at 22.5% MFU with it and at 36.9% with this kernel (docs/benchmarks.md,
"`150m` at seq_len 4096 on one TPU v5e").

The kernel works on one device's block of heads (``[heads, seq, head_dim]``, vmapped over the batch), so on a mesh
it runs under ``shard_map``: batch over (``data``, ``fsdp``), heads over ``model`` where the mesh axis divides both
the query and the KV heads (as :mod:`datapipe.train.sharding` shards ``wq``/``wk``/``wv``), whole otherwise. On a
CPU it runs in Pallas's interpreter, which is how the tests pin it to the reference (slow: for tests only;
:func:`datapipe.train.model.attention_kernel` never picks it there); a GPU is refused (its kernels are cuDNN's).
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

LANES = 128  # the kernel's block sizes are multiples of the TPU's 128 lanes
BLOCKS = (512, 256, 128)  # the largest that divides seq_len is taken (MaxText's default is 512)


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
    block = next(b for b in BLOCKS if t % b == 0)
    sizes = sa.BlockSizes(
        block_q=block,
        block_kv=block,
        block_kv_compute=block,
        block_q_dkv=block,
        block_kv_dkv=block,
        block_kv_dkv_compute=block,
        use_fused_bwd_kernel=True,
    )
    mask = sa.MultiHeadMask([sa.CausalMask((t, t))] * heads)
    kernel = sa.make_splash_mha(mask, head_shards=1, q_seq_shards=1, block_sizes=sizes, interpret=interpret)

    def row(q, k, v, s):  # [seq, heads, head_dim] -> the kernel's [heads, seq, head_dim]
        out = kernel(
            q.swapaxes(0, 1), k.swapaxes(0, 1), v.swapaxes(0, 1), segment_ids=sa.SegmentIds(q=s, kv=s)
        )
        return out.swapaxes(0, 1)

    return jax.vmap(row)(q, k, v, segment_ids.astype(np.int32))
