"""The mixture loader on a real built mixture: determinism, exact block counts, schedules, epochs, stop strategies,
sequence contents and segment ids, and the same global batches from one process or two (jax.distributed on CPU)."""

from __future__ import annotations

import socket
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from datapipe import DatapipeError, MixtureLoader, load_manifest, open_component, read_manifest
from datapipe.data.loader import DataExhausted
from datapipe.data.mixing import MixtureSchedule, Phase
from datapipe.data.permutation import block_counts
from tests.conftest import REPO

SEQ = 128


@pytest.fixture(scope="module")
def manifest(built_small) -> str:
    return str(built_small[0] / "mixture.json")


def _weights(manifest: str) -> dict[str, float]:
    return {c["name"]: c["weight"] for c in read_manifest(manifest)["components"]}


def _digest(batch: dict) -> str:
    import hashlib

    h = hashlib.sha256()
    for k in sorted(batch):
        h.update(np.ascontiguousarray(batch[k]).tobytes())
    return h.hexdigest()


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cases=st.lists(st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 10**6)), min_size=2, max_size=4))
def test_same_seed_and_step_same_batch_in_a_new_process(manifest, cases):
    here = [_digest(MixtureLoader(manifest, SEQ, 16, seed=seed).batch(step)) for seed, step in cases]
    code = (
        f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
        "from datapipe.data.loader import MixtureLoader\n"
        "from tests.test_loader import _digest\n"
        f"for seed, step in {cases!r}:\n"
        f"    print(_digest(MixtureLoader({manifest!r}, {SEQ}, 16, seed=seed).batch(step)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.split() == here


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seeds=st.lists(st.integers(0, 2**63 - 1), min_size=2, max_size=2, unique=True), step=st.integers(0, 10**6)
)
def test_different_seeds_give_different_orders(manifest, seeds, step):
    a, b = (MixtureLoader(manifest, SEQ, 64, seed=s).plan(step) for s in seeds)
    # both the mixing layout and the sequences drawn differ
    assert not np.array_equal(a[0], b[0])
    assert not np.array_equal(a[1], b[1])


def test_every_block_holds_the_largest_remainder_counts(manifest):
    block, batch = 64, 32
    loader = MixtureLoader(manifest, SEQ, batch, seed=1, block_size=block)
    expected = block_counts(_weights(manifest), block)
    want = np.array([expected[name] for name in loader.components])
    comps = np.concatenate([loader.plan(step)[0] for step in range(200)])  # 100 blocks
    per_block = comps.reshape(100, block)
    for b in range(100):
        assert np.array_equal(np.bincount(per_block[b], minlength=len(want)), want), b
    # positions are shuffled within blocks: the layout differs from block to block
    assert len({tuple(row) for row in per_block}) > 90


def test_a_schedule_change_at_step_k_takes_effect_at_step_k(manifest):
    names = list(_weights(manifest))
    first, second = {n: 1.0 for n in names}, {names[1]: 1.0}
    for new_batch in (16, 24):  # also with a batch-size change, and a phase edge inside a block
        loader = MixtureLoader(
            manifest, SEQ, phases=[Phase(0, first, 16), Phase(7, second, new_batch)], seed=2, block_size=40
        )
        for step in range(7):
            assert set(loader.plan(step)[0].tolist()) != {1}
            assert len(loader.plan(step)[0]) == 16
        for step in range(7, 12):
            comp, _ = loader.plan(step)
            assert len(comp) == new_batch and set(comp.tolist()) == {1}, step
        assert loader.schedule.offset(7) == 7 * 16 and loader.schedule.offset(9) == 7 * 16 + 2 * new_batch


def test_schedule_from_the_manifest_is_in_steps(manifest, tmp_path):
    import json

    doc = read_manifest(manifest)
    names = [c["name"] for c in doc["components"]]
    doc["schedule"] = [{"step": 3, "weights": {names[0]: 1.0}}]
    path = tmp_path / "mixture.json"
    for c in doc["components"]:
        c["cache"] = (
            str((REPO / manifest).parent / c["cache"]) if not c["cache"].startswith("/") else c["cache"]
        )
    path.write_text(json.dumps(doc))
    loader = MixtureLoader(str(path), SEQ, 8, seed=0)
    assert set(loader.plan(2)[0].tolist()) != {0}
    assert set(loader.plan(3)[0].tolist()) == {0}


def test_draw_counts_stay_exact_across_phases():
    sched = MixtureSchedule(
        ["a", "b", "c"],
        [Phase(0, {"a": 1, "b": 2, "c": 3}, 10), Phase(5, {"a": 1, "c": 1}, 7)],
        seed=3,
        block_size=16,
    )
    comp, draw = sched.assign(0, 200)
    for c in range(3):
        # the k-th appearance of a component in stream order is its draw k: nothing skipped, nothing drawn twice
        assert np.array_equal(draw[comp == c], np.arange((comp == c).sum()))
    assert np.array_equal(sched.draws_before(123), np.bincount(comp[:123], minlength=3))


def _drawn(loader: MixtureLoader, comp_index: int, count: int) -> np.ndarray:
    """The first ``count`` sequences the loader draws from one component, in stream order."""
    seqs: list[int] = []
    step = 0
    while len(seqs) < count:
        comp, seq = loader.plan(step)
        seqs.extend(seq[comp == comp_index].tolist())
        step += 1
    return np.array(seqs[:count])


def test_epochs_cover_every_sequence_once_and_reshuffle(manifest):
    loader = MixtureLoader(manifest, SEQ, 64, seed=4)
    smallest = min(range(len(loader.components)), key=lambda c: loader._comps[c].num_sequences)
    n = loader._comps[smallest].num_sequences
    seqs = _drawn(loader, smallest, 2 * n)
    first, second = seqs[:n], seqs[n:]
    assert np.array_equal(np.sort(first), np.arange(n)) and np.array_equal(np.sort(second), np.arange(n))
    assert not np.array_equal(first, second)
    same = _drawn(MixtureLoader(manifest, SEQ, 64, seed=4, reshuffle_each_epoch=False), smallest, 2 * n)
    assert np.array_equal(same[:n], same[n:])


def test_stop_strategies(manifest):
    first = MixtureLoader(manifest, SEQ, 16, seed=5, stop="first_exhausted", prefetch=2)
    steps_first = sum(1 for _ in first.iter_from(0))
    with pytest.raises(DataExhausted, match="exhausted"):
        first.batch(steps_first)
    every = MixtureLoader(manifest, SEQ, 16, seed=5, stop="all_exhausted", prefetch=0)
    steps_all = sum(1 for _ in every.iter_from(0))
    assert 0 < steps_first < steps_all
    # by the end of all_exhausted, every component has been drawn whole at least once
    drawn = every.schedule.draws_before(every.schedule.offset(steps_all))
    assert all(drawn[i] >= c.num_sequences for i, c in enumerate(every._comps))
    restart = MixtureLoader(manifest, SEQ, 16, seed=5)
    assert restart.plan(steps_all * 3)[0].shape == (16,)


def test_a_weight_that_rounds_to_zero_rows_is_an_error_naming_it(manifest):
    names = list(_weights(manifest))
    weights = {names[0]: 10_000.0, names[1]: 1.0}
    with pytest.raises(ValueError, match=f"{names[1]!r}.*no row in a block of 2048"):
        MixtureLoader(manifest, SEQ, 8, phases=[Phase(0, weights, 8)])
    with pytest.raises(ValueError, match="no component named nope"):
        MixtureLoader(manifest, SEQ, 8, phases=[Phase(0, {"nope": 1.0}, 8)])
    with pytest.raises(DatapipeError, match="no whole sequence"):
        MixtureLoader(manifest, 10**9, 8)


def _stream(manifest: str, name: str) -> tuple[np.ndarray, np.ndarray]:
    cache = open_component(load_manifest(manifest), name)
    return cache.input_ids.data[: cache.num_tokens].read().result(), cache.input_ids.ends()


def test_concat_sequences_are_stream_windows_with_eos_segments(manifest):
    loader = MixtureLoader(manifest, SEQ, 16, seed=6)
    streams = {name: _stream(manifest, name) for name in loader.components}
    eos = loader._comps[0].eos_id
    assert eos is not None
    for step in range(3):
        comp, seq = loader.plan(step)
        batch = loader.batch(step)
        for i in range(16):
            tokens, _ = streams[loader.components[comp[i]]]
            window = tokens[seq[i] * SEQ : (seq[i] + 1) * SEQ]
            assert np.array_equal(batch["input_ids"][i], window)
            seg = batch["segment_ids"][i]
            assert seg[0] == 0 and np.all(np.diff(seg) >= 0)
            # a new segment begins exactly after each EOS
            assert np.array_equal(np.flatnonzero(np.diff(seg)), np.flatnonzero(window[:-1] == eos))
        assert np.array_equal(batch["component"], comp)


def test_document_packing_splits_only_long_documents(manifest):
    loader = MixtureLoader(manifest, SEQ, 16, seed=7, packing="document")
    for c in loader._comps:
        layout = c.layout
        starts, lengths = layout.starts, layout.lengths
        doc_starts = np.concatenate([[0], c.ends[:-1]])
        row_starts = set(doc_starts.tolist())
        long_docs = [(int(a), int(b)) for a, b in zip(doc_starts, c.ends, strict=True) if b - a > SEQ]
        for s, n in zip(starts.tolist(), lengths.tolist(), strict=True):
            assert 0 < n <= SEQ
            # a sequence starts at a document start, or inside a document longer than seq_len
            assert s in row_starts or any(a < s < b for a, b in long_docs)
        # every token is in exactly one sequence, in stream order
        assert starts[0] == 0 and np.array_equal(starts[1:], starts[:-1] + lengths[:-1])
        assert int(lengths.sum()) == c.cache.num_tokens
        assert layout.padding_share == pytest.approx(1 - c.cache.num_tokens / (len(starts) * SEQ))
    # the first batches with padding (whether batch 0 has any depends on the documents' lengths)
    padded = [b for b in (loader.batch(k) for k in range(8)) if (b["segment_ids"] == -1).any()]
    assert padded
    for batch in padded:
        pad = batch["segment_ids"] == -1
        assert np.all(batch["input_ids"][pad] == loader._comps[0].pad_id)
    assert all(d["padding_share"] > 0 for d in loader.describe())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def test_two_processes_assemble_the_same_global_batches_as_one(manifest, tmp_path):
    script = str(REPO / "tests" / "mesh_batches.py")
    one = tmp_path / "one.npz"
    subprocess.run([sys.executable, script, str(one), manifest, "--devices", "8"], check=True, timeout=300)
    port = _free_port()
    procs = [
        subprocess.Popen(
            [sys.executable, script, str(tmp_path / f"p{i}.npz"), manifest, "--devices", "4"]
            + ["--processes", "2", "--process-id", str(i), "--port", str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for i in range(2)
    ]
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, out.decode()[-3000:]
    single = dict(np.load(one))
    parts = [dict(np.load(tmp_path / f"p{i}.npz")) for i in range(2)]
    shards = lambda d: {k: v for k, v in d.items() if not k.startswith("host_rows")}  # noqa: E731
    merged = {**shards(parts[0]), **shards(parts[1])}
    assert set(merged) == set(shards(single))
    for key, value in merged.items():
        assert np.array_equal(value, single[key]), key
    for step in range(4):
        rows = [parts[i][f"host_rows/{step}"] for i in range(2)]
        # each process read only its half of the batch
        assert len(rows[0]) == len(rows[1]) == 8 and not set(rows[0].tolist()) & set(rows[1].tolist())
        assert len(single[f"host_rows/{step}"]) == 16
