"""Readers over the committed real corpora: what they yield and what they count."""

from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datapipe import InputError, ReadTally, Shard, make_shards, read_shard
from tests.conftest import CORPORA


def _read(path, fmt, text_field="text", id_field="id"):
    stats = ReadTally()
    shard = make_shards([str(path)], str(CORPORA))[0]
    docs = list(read_shard(shard, "src", fmt, text_field, id_field, stats))
    return docs, stats


def test_real_crawl_iana():
    docs, stats = _read(CORPORA / "crawl" / "iana.warc.gz", "warc")
    # pywb's iana.warc.gz: 343 records, 48 responses of which 16 are 2xx HTML pages
    assert stats.records == len(docs) == 16 and not stats.unusable
    assert sum(stats.not_records.values()) + stats.records == 343
    assert stats.not_records["warc/request"] == 171 and stats.not_records["warc/revisit"] == 123
    assert (
        stats.not_records["warc/not_html"] == 28 and stats.not_records["warc/http_not_ok"] == 4
    )  # css/js/images; redirects
    assert all(d["metadata"]["url"].startswith("http") for d in docs)
    assert all(d["metadata"]["warc_record_id"].startswith("<urn:uuid:") for d in docs)
    assert docs[0]["ref"] == "crawl/iana.warc.gz:0"  # where it was read; its id is its WARC-Record-ID
    assert all(d["id"] == d["metadata"]["warc_record_id"] for d in docs)


def test_packed_warc_has_planted_copies():
    docs, stats = _read(CORPORA / "crawl" / "docs-00000.warc.gz", "warc")
    assert stats.records == len(docs) > 40 and not stats.unusable
    truth = json.loads((CORPORA / "duplicates_truth.json").read_text())
    urls = {d["metadata"]["url"] for d in docs}
    docs2, _ = _read(CORPORA / "crawl" / "docs-00001.warc.gz", "warc")
    urls |= {d["metadata"]["url"] for d in docs2}
    for pair in truth["exact"] + truth["near"]:
        if pair["original"].startswith("http"):
            assert pair["original"] in urls and pair["copy"] in urls


@pytest.mark.parametrize(
    "rel",
    [
        "prose/pydoc-library-00000.jsonl.zst",
        "prose/pydoc-howto-00000.jsonl.gz",
        "prose/pydoc-faq-00000.jsonl",
    ],
)
def test_jsonl_compressions(rel):
    docs, stats = _read(CORPORA / rel, "jsonl")
    assert stats.records == len(docs) > 0 and not stats.unusable  # the reader yields; the stage keeps
    assert docs[0]["ref"] == f"{rel}:0"  # where it was read
    assert docs[0]["id"].startswith("pydoc/")  # the record's own id
    assert all(isinstance(d["text"], str) and d["text"] for d in docs)


def test_parquet_code():
    docs, stats = _read(CORPORA / "code" / "stdlib-00000.parquet", "parquet", text_field="content")
    assert stats.records == len(docs) > 10
    assert docs[0]["metadata"]["lang"] == "Python"
    assert "max_stars_repo_path" in docs[0]["metadata"]


def test_bad_jsonl_lines_are_counted_not_lost(tmp_path):
    path = tmp_path / "bad.jsonl.gz"
    lines = [
        b'{"text": "good one"}',
        b"{not json",
        b'{"title": "no text"}',
        b'{"text": 5}',
        b"[1,2]",
        b'{"text": "x"}',
    ]
    path.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
    stats = ReadTally()
    docs = list(read_shard(Shard(0, str(path), "bad.jsonl.gz"), "s", "jsonl", "text", "id", stats))
    assert [d["text"] for d in docs] == ["good one", "x"]
    assert [d["id"] for d in docs] == ["bad.jsonl.gz:0", "bad.jsonl.gz:5"]
    assert stats.records == 6
    assert dict(stats.unusable) == {
        "read/invalid_json": 1,
        "read/missing_text": 1,
        "read/text_not_string": 1,
        "read/not_an_object": 1,
    }


def test_parquet_without_text_column_names_file_and_field(tmp_path):
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"body": ["a", "b"]}), path)
    with pytest.raises(InputError) as info:
        list(read_shard(Shard(0, str(path), "x.parquet"), "s", "parquet", "content", "id", ReadTally()))
    assert str(path) in str(info.value) and "'content'" in str(info.value) and "body" in str(info.value)
