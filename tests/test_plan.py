"""Stage versioning: hashes follow config and inputs, not where the data or the checkout lives."""

from __future__ import annotations

import shutil

from datapipe import load_mixture, load_tokenizer
from datapipe.orchestrate.plan import check_inputs, plan_mixture
from tests.conftest import CORPORA, SMALL_MIXTURE, write_mixture


def _hashes(path, **kw):
    mix = load_mixture(str(path), **kw)
    tok = load_tokenizer(mix.tokenizer).identity
    plans = plan_mixture(mix, mix.sources, check_inputs(mix, mix.sources), tok.sha256)
    return {(p.source.name, s.stage): s.hash for p in plans for s in p.stages}


def test_hash_is_independent_of_data_location(tmp_path):
    shutil.copytree(CORPORA, tmp_path / "copy")
    path = write_mixture(tmp_path, SMALL_MIXTURE.format(root=CORPORA))
    assert _hashes(path) == _hashes(path, data_root=str(tmp_path / "copy"))


def test_config_change_rehashes_that_stage_and_later_ones(tmp_path):
    base = _hashes(write_mixture(tmp_path, SMALL_MIXTURE.format(root=CORPORA), "a.yaml"))
    text = SMALL_MIXTURE.format(root=CORPORA).replace(
        "format: warc", "format: warc\n    extract: {timeout_s: 9}"
    )
    changed = _hashes(write_mixture(tmp_path, text, "b.yaml"))
    assert changed[("web", "extract")] != base[("web", "extract")]
    assert changed[("web", "tokenize")] != base[("web", "tokenize")]
    assert changed[("code", "extract")] == base[("code", "extract")]
    assert changed[("code", "tokenize")] == base[("code", "tokenize")]
    # a weight is not a stage input: changing it reruns nothing
    weight = _hashes(
        write_mixture(
            tmp_path, SMALL_MIXTURE.format(root=CORPORA).replace("weight: 3", "weight: 9"), "c.yaml"
        )
    )
    assert weight == base
