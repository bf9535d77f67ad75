"""The mixture loader against raw TensorStore reads of the same windows, on a cache on local disk. One run.

A three-component mixture is written from the token rows of ``--docs`` real documents (GPT-2, EOS-terminated;
Levanter's cache layout, compressed). Then, alternating, ``--tries`` times each:

* loader: ``MixtureLoader(...).iter_from(0, --steps)`` with ``--prefetch`` background steps: block mixing, keyed
  per-epoch permutations, span reads in one TensorStore batch per step, segment ids, int32 batches.
* raw: the same windows (taken from the loader's plan beforehand, so no planning is timed) read with plain
  TensorStore reads, one batch per step, stacked into an array: the floor any loader on this cache pays.

Both sides are timed the same way: wall clock (``perf_counter``) in this process, interleaved, the fastest of
``--tries`` kept, no untimed warm-up on either (the cold run below comes before both); each try's loader is
constructed outside its timing, as the raw side's arrays are opened outside theirs.

``first_batch_s`` is the time from a cold ``MixtureLoader(...)`` (manifest, ledgers, offsets opened) to the first
batch in hand, once. Last line: ``bench: loader vs_raw=X first_batch_s=Y``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import tensorstore as ts

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from corpus import bench_parser, token_mixture  # noqa: E402

from datapipe import CACHE_FIELD as FIELD  # noqa: E402
from datapipe import (
    MixtureLoader,  # noqa: E402
    open_array,  # noqa: E402
)

WEIGHTS = {"web": 0.6, "code": 0.3, "books": 0.1}


def main() -> None:
    ap = bench_parser(__doc__, docs=6000, seq_len=2048, batch=32, steps=60, prefetch=2, tries=3)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as work:
        manifest, total = token_mixture(work, args.docs, args.seq_len, WEIGHTS)

        t0 = time.perf_counter()
        cold = MixtureLoader(manifest, args.seq_len, args.batch, seed=1, prefetch=args.prefetch)
        first = next(cold.iter_from(0, 1))
        first_batch_s = time.perf_counter() - t0
        assert first["input_ids"].shape == (args.batch, args.seq_len)

        # the raw reads: the same (component, start, length) windows, planned outside the timing
        arrays = {
            name: open_array(os.path.join(work, name, FIELD, "data"), "uint32", create=False)
            for name in WEIGHTS
        }
        plans = []
        for step in range(args.steps):
            comp, seq = cold.plan(step)
            per_step = []
            for c, s in zip(comp.tolist(), seq.tolist(), strict=True):
                start, length = cold._comps[c].layout.spans(np.array([s]))
                per_step.append((arrays[cold.components[c]], int(start[0]), int(length[0])))
            plans.append(per_step)

        def run_loader() -> float:
            loader = MixtureLoader(manifest, args.seq_len, args.batch, seed=1, prefetch=args.prefetch)
            t = time.perf_counter()
            for batch in loader.iter_from(0, args.steps):
                assert batch["input_ids"].shape[0] == args.batch
            return time.perf_counter() - t

        def run_raw() -> float:
            t = time.perf_counter()
            for per_step in plans:
                with ts.Batch() as b:
                    futures = [arr[s : s + n].read(batch=b) for arr, s, n in per_step]
                out = np.stack([f.result() for f in futures]).astype(np.int32)
                assert out.shape == (args.batch, args.seq_len)
            return time.perf_counter() - t

        t_loader, t_raw = [], []
        for _ in range(args.tries):
            t_loader.append(run_loader())
            t_raw.append(run_raw())
        check = MixtureLoader(manifest, args.seq_len, args.batch, seed=1).batch(args.steps - 1)
        arr, s, n = plans[-1][0]
        assert np.array_equal(check["input_ids"][0], arr[s : s + n].read().result().astype(np.int32))

    tokens = args.steps * args.batch * args.seq_len
    loader_tps, raw_tps = tokens / min(t_loader), tokens / min(t_raw)
    print(f"{total:,} tokens in 3 components; {args.steps} steps x {args.batch} x {args.seq_len} tokens")
    print(f"  loader (prefetch {args.prefetch})  {loader_tps / 1e6:8.2f} M tokens/s")
    print(f"  raw TensorStore reads  {raw_tps / 1e6:8.2f} M tokens/s")
    print(f"  first batch from a cold open: {first_batch_s:.3f}s")
    print(f"bench: loader vs_raw={loader_tps / raw_tps:.2f} first_batch_s={first_batch_s:.3f}")


if __name__ == "__main__":
    main()
