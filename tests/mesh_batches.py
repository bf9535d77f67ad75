"""Run the loader on a (data 2, fsdp 2, model 2) CPU mesh in one of P processes and save what this process holds.

Used by tests/test_loader.py: ``python tests/mesh_batches.py OUT.npz MANIFEST --devices 8`` (one process) or, in two
processes, ``--devices 4 --processes 2 --process-id I --port N``. XLA_FLAGS must give the fake device count before
jax is imported, so this runs as its own process.
"""

from __future__ import annotations

import argparse
import os
import sys


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("manifest")
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("--processes", type=int, default=1)
    ap.add_argument("--process-id", type=int, default=0)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=64)
    args = ap.parse_args()
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.devices}"
    os.environ["JAX_PLATFORMS"] = "cpu"
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import jax
    import numpy as np
    from jax.sharding import Mesh

    if args.processes > 1:
        jax.distributed.initialize(
            coordinator_address=f"localhost:{args.port}",
            num_processes=args.processes,
            process_id=args.process_id,
            initialization_timeout=120,
        )
    from datapipe import MixtureLoader

    devices = np.array(sorted(jax.devices(), key=lambda d: d.id)).reshape(2, 2, 2)
    mesh = Mesh(devices, ("data", "fsdp", "model"))
    loader = MixtureLoader(args.manifest, seq_len=args.seq_len, global_batch=args.batch, seed=3, mesh=mesh)
    saved: dict[str, np.ndarray] = {}
    for step, batch in enumerate(loader.iter_from(0, args.steps)):
        saved[f"host_rows/{step}"] = loader.host_rows(step)
        for name, arr in batch.items():
            assert arr.shape[0] == args.batch and arr.sharding.is_equivalent_to(
                loader.sharding(arr.ndim), arr.ndim
            )
            for shard in arr.addressable_shards:
                rows = range(args.batch)[shard.index[0]]
                saved[f"{name}/{step}/{rows.start}-{rows.stop}"] = np.asarray(shard.data)
    np.savez(args.out, **saved)
    if args.processes > 1:
        jax.distributed.shutdown()


if __name__ == "__main__":
    main()
