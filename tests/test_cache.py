"""The token cache: Levanter's layout, commit protocol under kills and concurrent readers, verification."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import tensorstore as ts

from datapipe import read_records
from datapipe.store.jagged import JaggedReader, concat_jagged, write_jagged
from datapipe.store.tensorstore_spec import kvstore, open_array
from datapipe.store.verify import verify_cache
from tests.conftest import REPO

# Levanter's JaggedArrayStore opens both arrays with exactly this metadata (chunk 262144 inside shards of
# 134217728, blosc at clevel 5) and reads row i as data[offsets[i] : offsets[i+1]], with offsets[0] standing in
# for row 0's start (which is 0) and holding the number of rows.
LEVANTER_METADATA = {
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [134217728]}},
    "codecs": [
        {
            "name": "sharding_indexed",
            "configuration": {
                "chunk_shape": [262144],
                "codecs": [{"name": "blosc", "configuration": {"clevel": 5}}],
            },
        }
    ],
}


def _levanter_open(path: str, dtype: str):
    spec = {"driver": "zarr3", "kvstore": kvstore(path), "metadata": LEVANTER_METADATA}
    return ts.open(spec, open=True, dtype=dtype).result()


def _levanter_rows(cache: Path) -> list[list[int]]:
    offsets = _levanter_open(str(cache / "input_ids" / "offsets"), "int64")
    data = _levanter_open(str(cache / "input_ids" / "data"), "uint32")
    n = int(offsets[0].read().result())
    bounds = offsets[0 : n + 1].read().result().copy()
    bounds[0] = 0
    return [data[int(bounds[i]) : int(bounds[i + 1])].read().result().tolist() for i in range(n)]


def test_levanter_layout_reads_every_row(built_small):
    from datapipe import TokenizerConfig, load_tokenizer

    out, _ = built_small
    (cache,) = (out / "code").glob("tokenize-*")
    (extract,) = (out / "code").glob("extract-*")
    texts = [d["text"] for p in sorted(extract.glob("part-*.jsonl.zst")) for d in read_records(str(p))]
    expected = load_tokenizer(TokenizerConfig("builtin:gpt2", add_eos=True)).encode_batch(texts)
    assert _levanter_rows(cache) == expected
    ledger = json.loads((cache / "shard_ledger.json").read_text())
    assert ledger["is_finished"] and ledger["total_num_rows"] == len(expected)


def test_verify_finds_the_first_bad_row(built_small, tmp_path):
    import shutil

    out, _ = built_small
    (cache,) = (out / "prose").glob("tokenize-*")
    assert verify_cache(str(cache)) == []
    bad = tmp_path / "bad"
    shutil.copytree(cache, bad)
    offsets = open_array(str(bad / "input_ids" / "offsets"), "int64", create=False)
    good_end = int(offsets[6].read().result())
    offsets[7].write(np.int64(good_end - 5)).result()  # row 6 now ends before it starts
    problems = verify_cache(str(bad))
    assert any("row 6 " in p and "not monotone" in p for p in problems), problems
    offsets[7].write(np.int64(int(offsets[8].read().result()))).result()
    ledger = json.loads((bad / "shard_ledger.json").read_text())
    ledger["total_num_rows"] += 1
    (bad / "shard_ledger.json").write_text(json.dumps(ledger))
    assert any("offsets[0] says" in p for p in verify_cache(str(bad)))
    proc = subprocess.run(
        [sys.executable, "-m", "datapipe.cli", "verify", str(bad)], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 1 and "BAD" in proc.stdout


def test_reader_polling_during_consolidation_sees_only_complete_rows(tmp_path):
    rng = np.random.default_rng(0)
    parts, expected = [], []
    for k in range(120):
        rows = [rng.integers(0, 50257, size=int(rng.integers(1, 400)), dtype=np.uint32) for _ in range(5)]
        write_jagged(str(tmp_path / f"p{k}"), rows)
        parts.append(str(tmp_path / f"p{k}"))
        expected.extend(r.tolist() for r in rows)
    dest = str(tmp_path / "all")
    write_jagged(dest, [])  # the cache exists, empty, before consolidation starts
    seen = []
    done = threading.Event()

    def poll():
        while not done.is_set():
            r = JaggedReader(dest)
            got = [x.tolist() for x in r.rows()]
            seen.append(len(got))
            assert got == expected[: len(got)], "a reader saw a row that was not complete"

    t = threading.Thread(target=poll)
    t.start()
    try:
        concat_jagged(dest, parts, write_unit=4096)  # small writes, so that there is a prefix to see
    finally:
        done.set()
        t.join()
    assert [x.tolist() for x in JaggedReader(dest).rows()] == expected
    assert len(seen) >= 3 and any(0 < s < len(expected) for s in seen), seen
