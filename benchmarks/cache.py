"""The token cache: write throughput and random window reads against raw TensorStore, and the memory of tokenizing
a 64 MB document. One run, one core.

1. Write: the token rows of ``--docs`` real documents (GPT-2) in ``--shards`` shards. datapipe: each shard's rows
   to its scratch shard cache, then consolidation into the cache (compressed zarr3, Levanter's layout) with the
   commit protocol. Raw: one TensorStore write of the same data and one of the same offsets, same spec and codec.
2. Read: ``--windows`` random ``--seq-len`` windows of the token stream, issued together, through
   ``JaggedReader.windows`` vs raw TensorStore reads of the same ranges on the raw array.
3. Long document: a child process tokenizes one 64 MB document (real text, concatenated) and reports its peak
   RSS.

Timing: each side, in this process, one after the other, the best of ``--tries`` wall-clock (``perf_counter``)
runs. Writes: no warm-up on either side. Reads: one untimed call on each side first (until 2026-12-07 only
datapipe's reader had one).

Last line: ``bench: cache write_vs_raw=X read_vs_raw=Y long_doc_rss_mb=Z``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import tensorstore as ts

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from corpus import bench_parser, best_of, documents  # noqa: E402

from datapipe import (  # noqa: E402  # noqa: E402
    JaggedReader,
    TokenizerConfig,
    concat_jagged,
    load_tokenizer,
    open_array,  # noqa: E402
    write_rows_npy,
)

LONG_DOC = """
import sys, time
sys.path.insert(0, {repo!r}); sys.path.insert(0, {bench!r})
from corpus import documents
from datapipe import TokenizerConfig
from datapipe import load_tokenizer
texts = [t for _, t in documents(3000) if t.isascii()]
parts, size = [], 0
while size < 64 * 2**20:
    for t in texts:
        parts.append(t); size += len(t) + 2
        if size >= 64 * 2**20: break
doc = "\\n\\n".join(parts)
del parts, texts
tok = load_tokenizer(TokenizerConfig("builtin:gpt2"))
t0 = time.perf_counter()
ids = tok.encode_arrays([doc])[0]
peak = [int(line.split()[1]) // 1024 for line in open("/proc/self/status") if line.startswith("VmHWM")][0]
print(len(doc), len(ids), time.perf_counter() - t0, peak)  # VmHWM: this process's own peak
"""


def main() -> None:
    ap = bench_parser(__doc__, docs=5000, shards=5, windows=2000, seq_len=2048, tries=3)
    args = ap.parse_args()

    tok = load_tokenizer(TokenizerConfig("builtin:gpt2", add_eos=True))
    rows = tok.encode_arrays([t for _, t in documents(args.docs)])
    data = np.concatenate(rows)
    ends = np.cumsum([len(r) for r in rows], dtype=np.int64)
    per = -(-len(rows) // args.shards)

    with tempfile.TemporaryDirectory() as work:
        parts = [os.path.join(work, "shards", f"part-{k:05d}") for k in range(args.shards)]

        def scratch() -> None:  # what the tokenize workers write, one shard each
            for k, part in enumerate(parts):
                write_rows_npy(part, rows[k * per : (k + 1) * per])

        def ours() -> None:  # consolidation into a new cache, with the commit protocol
            shutil.rmtree(os.path.join(work, "cache"), ignore_errors=True)
            concat_jagged(os.path.join(work, "cache", "input_ids"), parts)

        def raw() -> None:
            d = open_array(os.path.join(work, "raw", "data"), "uint32", create=True)
            o = open_array(os.path.join(work, "raw", "offsets"), "int64", create=True)
            f1 = d[0 : len(data)].write(data)
            f2 = o[0 : len(ends) + 1].write(np.concatenate([[len(ends)], ends]))
            f1.result()
            f2.result()

        t_scratch = best_of(args.tries, scratch)
        t_ours = best_of(args.tries, ours)
        t_raw = best_of(args.tries, raw)

        rng = np.random.default_rng(0)
        starts = rng.integers(0, len(data) - args.seq_len, size=args.windows)
        reader = JaggedReader(os.path.join(work, "cache", "input_ids"))
        raw_data = open_array(os.path.join(work, "raw", "data"), "uint32", create=False)

        def read_ours() -> None:
            got = reader.windows(starts, args.seq_len)
            assert got.shape == (args.windows, args.seq_len)

        def read_raw() -> None:
            with ts.Batch() as batch:
                futures = [raw_data[int(s) : int(s) + args.seq_len].read(batch=batch) for s in starts]
            np.stack([f.result() for f in futures])

        read_ours()  # one untimed call on each side
        read_raw()
        t_read_ours = best_of(args.tries, read_ours)
        t_read_raw = best_of(args.tries, read_raw)
        assert np.array_equal(
            reader.windows(starts[:5], args.seq_len)[0], data[starts[0] : starts[0] + args.seq_len]
        )

    child = subprocess.run(
        [sys.executable, "-c", LONG_DOC.format(repo=str(REPO), bench=str(REPO / "benchmarks"))],
        capture_output=True,
        text=True,
        check=True,
    )
    chars, tokens, seconds, rss_mb = child.stdout.split()
    mb = data.nbytes / 2**20
    print(f"{len(rows)} documents, {len(data):,} tokens ({mb:.0f} MiB uint32), {args.shards} shards")
    print(
        f"  write  shard caches (uncompressed scratch, one per worker)  {t_scratch:6.2f}s {mb / t_scratch:7.1f} MiB/s"
    )
    print(
        f"  write  consolidation into the cache (commit protocol)       {t_ours:6.2f}s {mb / t_ours:7.1f} MiB/s"
    )
    print(
        f"  write  raw TensorStore, same bytes and codec, no protocol   {t_raw:6.2f}s {mb / t_raw:7.1f} MiB/s"
    )
    print(f"         (scratch + consolidation together: {t_raw / (t_scratch + t_ours):.2f}x raw)")
    print(
        f"  read   {args.windows} random windows of {args.seq_len}: datapipe {t_read_ours * 1e6 / args.windows:.0f} us, "
        f"raw {t_read_raw * 1e6 / args.windows:.0f} us per window"
    )
    print(
        f"  one document of {int(chars) / 2**20:.0f} MiB -> {int(tokens):,} tokens in {float(seconds):.1f}s, "
        f"peak RSS {rss_mb} MiB"
    )
    print(
        f"bench: cache write_vs_raw={t_raw / t_ours:.2f} read_vs_raw={t_read_raw / t_read_ours:.2f} "
        f"long_doc_rss_mb={rss_mb}"
    )


if __name__ == "__main__":
    main()
