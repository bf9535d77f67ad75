"""WARC reading on damaged files: counted skips, never a crash, and nothing after the damage is lost."""

from __future__ import annotations

import gzip
import io
import random
import re

import pytest
from fastwarc.stream_io import Lz4Writer
from fastwarc.warc import ArchiveIterator

from datapipe import ReadTally, Shard
from datapipe.io.warc import _member_end, read_warc
from tests.conftest import CORPORA, warc_response

WARC = CORPORA / "crawl" / "docs-00000.warc.gz"


def _read(path):
    stats = ReadTally()
    docs = list(read_warc(Shard(0, str(path), path.name), "s", stats))
    # every document counted in is yielded or removed with a reason
    assert stats.records == len(docs) + sum(stats.unusable.values())
    return docs, stats


def _urls(docs):
    return [d["metadata"]["url"] for d in docs]


@pytest.fixture(scope="module")
def clean():
    return _read(WARC)


def _member_starts(data: bytes) -> list[int]:
    return [m.start() for m in re.finditer(b"\x1f\x8b\x08", data)]


def test_clean_file(clean):
    docs, stats = clean
    assert len(docs) == 59 and not stats.unusable and "warc/corrupt_region" not in stats.not_records


@pytest.mark.parametrize("where", ["header", "payload"])
def test_truncated_file_counts_the_cut_record(tmp_path, clean, where):
    data = WARC.read_bytes()
    starts = _member_starts(data)
    # member 80 is a response record; cut inside its WARC header or near the end of its payload
    cut = starts[80] + 300 if where == "header" else starts[81] - 200
    (tmp_path / "t.warc.gz").write_bytes(data[:cut])
    docs, stats = _read(tmp_path / "t.warc.gz")
    assert _urls(docs) == _urls(clean[0])[: len(docs)]
    assert len(docs) == 39
    assert dict(stats.unusable) == {"read/truncated_record": 1}


def test_garbage_between_members_loses_nothing_after_it(tmp_path, clean):
    data = WARC.read_bytes()
    mid = _member_starts(data)[60]
    (tmp_path / "g.warc.gz").write_bytes(data[:mid] + b"GARBAGE\x00\xff" * 50 + data[mid:])
    docs, stats = _read(tmp_path / "g.warc.gz")
    assert _urls(docs) == _urls(clean[0])
    assert stats.not_records["warc/corrupt_region"] == 1


def test_bytes_cut_out_of_a_member_lose_only_that_stretch(tmp_path, clean):
    data = WARC.read_bytes()
    starts = _member_starts(data)
    a, b = starts[40] + 50, starts[44] - 20  # a stretch spanning parts of several records
    (tmp_path / "c.warc.gz").write_bytes(data[:a] + data[b:])
    docs, stats = _read(tmp_path / "c.warc.gz")
    full = _urls(clean[0])
    got = _urls(docs)
    assert got[:19] == full[:19] and got[-15:] == full[-15:]
    assert len(full) - len(got) <= 3
    assert stats.not_records["warc/corrupt_region"] == 1


def test_binary_garbage_file(tmp_path):
    rng = random.Random(0)
    (tmp_path / "r.warc.gz").write_bytes(bytes(rng.randrange(256) for _ in range(200_000)))
    docs, stats = _read(tmp_path / "r.warc.gz")
    assert docs == [] and stats.not_records["warc/corrupt_region"] == 1


def test_uncompressed_with_a_bad_header(tmp_path, clean):
    raw = gzip.decompress(WARC.read_bytes())
    starts = [m.start() for m in re.finditer(rb"WARC/1\.[01]\r\n", raw)]
    k = starts[70]
    broken = raw[:k] + b"WARX/9.9\r\nnonsense\r\n" + raw[k + 10 :]
    (tmp_path / "u.warc").write_bytes(broken)
    docs, stats = _read(tmp_path / "u.warc")
    full = _urls(clean[0])
    assert len(full) - len(docs) <= 1
    assert _urls(docs)[-20:] == full[-20:]
    assert stats.not_records["warc/corrupt_region"] == 1
    # and the same file, undamaged and uncompressed, reads completely
    (tmp_path / "ok.warc").write_bytes(raw)
    assert _urls(_read(tmp_path / "ok.warc")[0]) == full


def test_lz4_reads_like_gzip(tmp_path, clean):
    out = tmp_path / "x.warc.lz4"
    writer = Lz4Writer(str(out))
    with open(WARC, "rb") as f:
        for record in ArchiveIterator(f, parse_http=False):
            record.write(writer)
    writer.close()
    docs, stats = _read(out)
    assert _urls(docs) == _urls(clean[0])
    assert [d["html"] for d in docs] == [d["html"] for d in clean[0]]


def test_wet_conversion_records(tmp_path):
    from warcio.warcwriter import WARCWriter

    path = tmp_path / "x.warc.wet.gz"
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True)
        for i, text in enumerate(["Hello wet world.\nSecond line.", "Zweites Dokument."]):
            rec = w.create_warc_record(
                f"https://example.com/{i}",
                "conversion",
                payload=__import__("io").BytesIO(text.encode()),
                warc_content_type="text/plain",
            )
            w.write_record(rec)
    docs, stats = _read(path)
    assert [d["text"] for d in docs] == ["Hello wet world.\nSecond line.", "Zweites Dokument."]
    assert docs[1]["metadata"]["url"] == "https://example.com/1"


def _page_record(i: int, compressed: bool) -> bytes:
    """One HTML response record, in a gzip member of its own when ``compressed`` (as Common Crawl writes them)."""
    page = f"<html><body><p>Page {i} of the crawl.</p></body></html>".encode()
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(page) + page
    return warc_response(i, http, compressed)


@pytest.mark.parametrize("compressed", [True, False], ids=["gzip", "plain"])
@pytest.mark.parametrize("after", [0, 1, 2], ids=["after-first", "after-second", "at-end"])
@pytest.mark.parametrize(
    "garbage",
    [b"GARBAGE\x00\xff" * 50, b"\xff", b"junk line\r\n" * 3, b"\x1f\x8b\x08\x00" + bytes(6)],
    ids=["binary", "byte", "lines", "member-cut-in-its-header"],
)
def test_garbage_between_records_keeps_the_complete_record_before_it(tmp_path, compressed, after, garbage):
    """Bytes that belong to no record, between two records or after the last: every complete record is kept (the
    one just before the garbage included, which once was removed as "longer than its Content-Length says"), the
    garbage is counted once as an unreadable stretch, and reading goes on with the record after it."""
    records = [_page_record(i, compressed) for i in range(3)]
    data = b"".join(records[: after + 1]) + garbage + b"".join(records[after + 1 :])
    path = tmp_path / f"g.warc{'.gz' if compressed else ''}"
    path.write_bytes(data)
    docs, stats = _read(path)
    assert _urls(docs) == [f"https://x/{i}" for i in range(3)]
    assert [d["html"] for d in docs] == [
        f"<html><body><p>Page {i} of the crawl.</p></body></html>".encode() for i in range(3)
    ]
    assert not stats.unusable
    assert dict(stats.not_records) == {"warc/corrupt_region": 1}


@pytest.mark.parametrize("size", [0, 70_000, 3_000_000])
def test_member_end_is_the_byte_after_the_member(size):
    """The end of a gzip member is found however its pieces fall against the 64 KiB reads (incompressible or
    highly compressed), with anything after it; none for a member cut short or no member at all."""
    for body in (random.Random(size).randbytes(size), b"a" * size * 10):
        member = gzip.compress(body, mtime=0)
        for after in (b"", b"\xff", b"x" * 100_000, member):
            assert _member_end(io.BytesIO(b"junk" + member + after), 4) == 4 + len(member)
        assert _member_end(io.BytesIO(member[:-3]), 0) is None
        assert _member_end(io.BytesIO(b"xx" + member), 0) is None
