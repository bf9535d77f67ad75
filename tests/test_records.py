"""The build's records, typed: ``mixture.json`` (:class:`Manifest`), ``shard_ledger.json`` (:class:`Ledger`) and
dedup's shape (which global steps run). Each is read and written in one place; a real build's files round-trip
through the dataclasses to the same bytes."""

from __future__ import annotations

import json

import pytest

from datapipe import DatapipeError, Ledger, Manifest, load_manifest
from datapipe.config.stages import DedupConfig, MinHashConfig
from datapipe.dedup.shape import dedup_shape
from datapipe.store.manifest import ScheduleEntry


def test_a_built_manifest_round_trips_to_the_same_bytes(built_small):
    out, _ = built_small
    text = (out / "mixture.json").read_text()
    m = load_manifest(str(out))
    assert json.dumps(m.to_dict(), indent=2, sort_keys=True) + "\n" == text
    assert m.url == str(out / "mixture.json") and m.folder == str(out)
    assert [c.name for c in m.components] == ["web", "code", "prose"]
    assert sum(m.share(c) for c in m.components) == pytest.approx(1.0)
    with pytest.raises(DatapipeError, match="no component 'nope'"):
        m.component("nope")


def test_a_built_ledger_round_trips_to_the_same_bytes(built_small):
    out, _ = built_small
    for path in sorted(out.glob("*/tokenize-*/shard_ledger.json")):
        text = path.read_text()
        ledger = Ledger.from_dict(json.loads(text))
        assert json.dumps(ledger.to_dict(), indent=2, sort_keys=True) + "\n" == text
        assert ledger.total_num_rows == json.loads(text)["total_num_rows"]


def test_optional_manifest_fields_are_written_only_when_set(built_small):
    out, _ = built_small
    m = load_manifest(str(out))
    bare = Manifest(m.name, m.seed, m.seq_len, m.tokenizer, m.components)
    assert not {"schedule", "by_language", "train_tokens", "tokenizer_file"} & set(bare.to_dict())
    scheduled = Manifest(
        m.name, m.seed, m.seq_len, m.tokenizer, m.components, schedule=(ScheduleEntry(5, {"web": 1.0}),)
    )
    assert scheduled.to_dict()["schedule"] == [{"step": 5, "weights": {"web": 1.0}}]
    assert Manifest.from_dict(scheduled.to_dict()).schedule == scheduled.schedule


def test_dedup_shape_names_the_steps_each_config_runs():
    exact = dedup_shape(DedupConfig(exact=True, minhash=None))
    assert exact.removal_kinds == ("exact",) and not exact.minhash and not exact.unverified
    near = dedup_shape(DedupConfig(exact=False, minhash=MinHashConfig(verify=False, keep_edges=True)))
    assert near.removal_kinds == ("minhash",) and near.unverified and near.keep_edges
    both = dedup_shape(DedupConfig(exact=True, minhash=MinHashConfig(threshold=0.7)))
    assert both.removal_kinds == ("exact", "minhash") and both.verify and both.threshold == 0.7
