"""Records built to hurt the reader: decompression bombs, HTTP framing left in the body, lines without end.

Each class is generated here (issue 23, items 1 and 2): a gzip WARC member that inflates far past the cap, the same
in every HTTP content coding, a JSONL line with no newline for hundreds of MiB; chunked bodies with extensions,
chunked and gzip, bodies that claim chunked and are not, bodies cut short of their chunks or their
``Content-Length``. Memory is measured in a child process, so that what this test process holds does not count.
"""

from __future__ import annotations

import codecs
import gzip
import io
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import brotli
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from datapipe import ReadTally, Shard, check_shard, read_shard
from datapipe.io.http import TooLarge, Truncated, dechunk
from datapipe.io.warc import read_warc
from tests.conftest import REPO, mixture_head, run_build, warc_response, write_mixture
from tests.reliability import tally

PAGE = (
    b"<html><head><title>A page</title></head><body><article><h1>Framing</h1><p>"
    + b"Sentences of a page that a reader should see whole, without a byte of its transport. " * 30
    + b"</p></article></body></html>"
)
MiB = 1 << 20


def _http(status: str, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status}"] + [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _warc_member(out, url: str, http: bytes, body_parts, body_len: int, extra: str = "") -> None:
    """One response record as its own gzip member, written piece by piece (a huge body is never in memory)."""
    head = (
        f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\nWARC-Record-ID: <urn:uuid:{abs(hash(url))}>\r\n"
        f"WARC-Date: 2024-01-01T00:00:00Z\r\nContent-Type: application/http; msgtype=response\r\n{extra}"
        f"Content-Length: {len(http) + body_len}\r\n\r\n"
    ).encode()
    c = zlib.compressobj(1, zlib.DEFLATED, 31)
    for piece in (head, http, *body_parts, b"\r\n\r\n"):
        out.write(c.compress(piece))
    out.write(c.flush())


def _page_record(out, url: str, body: bytes, headers: list[tuple[str, str]], extra: str = "") -> None:
    http = _http("200 OK", [("Content-Type", "text/html; charset=utf-8"), *headers])
    _warc_member(out, url, http, [body], len(body), extra)


def _read(path, **caps) -> tuple[list[dict], ReadTally]:
    tally_ = ReadTally()
    docs = list(read_warc(Shard(0, str(path), path.name), "s", tally_, **caps))
    return docs, tally_


def _chunked(body: bytes, size: int = 700, ext: str = "") -> bytes:
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(f"{len(p):x}{ext}\r\n".encode() + p + b"\r\n" for p in pieces) + b"0\r\n\r\n"


def test_chunked_bodies_are_joined_and_bad_framing_is_counted(tmp_path):
    cases = [  # (url, body as stored, headers, WARC header lines, kept?)
        ("https://x/plain", PAGE, [("Content-Length", str(len(PAGE)))], "", True),
        ("https://x/chunked", _chunked(PAGE), [("Transfer-Encoding", "chunked")], "", True),
        ("https://x/ext", _chunked(PAGE, 333, ";name=value"), [("Transfer-Encoding", "chunked")], "", True),
        (
            "https://x/chunked-gzip",
            _chunked(gzip.compress(PAGE, mtime=0), 100),
            [("Transfer-Encoding", "chunked"), ("Content-Encoding", "gzip")],
            "",
            True,
        ),
        ("https://x/claims-chunked", PAGE, [("Transfer-Encoding", "chunked")], "", True),  # stored de-chunked
        ("https://x/no-last-chunk", _chunked(PAGE)[:-5], [("Transfer-Encoding", "chunked")], "", False),
        ("https://x/cut-in-a-chunk", _chunked(PAGE)[:900], [("Transfer-Encoding", "chunked")], "", False),
        ("https://x/short", PAGE[:1000], [("Content-Length", str(len(PAGE)))], "", False),
        ("https://x/warc-truncated", PAGE[:1000], [], "WARC-Truncated: length\r\n", False),
        ("https://x/longer", PAGE, [("Content-Length", "100")], "", True),  # the body as stored is the page
    ]
    path = tmp_path / "framing.warc.gz"
    with open(path, "wb") as f:
        for url, body, headers, extra, _ in cases:
            _page_record(f, url, body, headers, extra)
    docs, seen = _read(path)
    assert [d["metadata"]["url"] for d in docs] == [c[0] for c in cases if c[4]]
    assert all(d["html"] == PAGE for d in docs), "a chunk size or compressed byte reached the page"
    assert seen.records == len(cases) and dict(seen.unusable) == {"read/truncated_record": 4}
    assert dict(seen.notes) == {"read/body_longer_than_content_length": 1}
    tally("bad_inputs", len(cases))
    tally("crashes", 0)


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_a_warc_content_length_too_small_is_counted_and_the_next_record_read(tmp_path, compressed):
    """A record whose WARC ``Content-Length`` is short of its block by a few to thousands of bytes, first, in the
    middle or last of a file: removed as truncated (never its first part passed on as the page), the rest of its
    block skipped as an unreadable stretch, and every other record read."""
    pages = [PAGE.replace(b"A page", f"Page {i}".encode()) for i in range(5)]

    def record(i: int, short_by: int) -> bytes:
        http = _http("200 OK", [("Content-Type", "text/html")]) + pages[i]
        return warc_response(i, http, compressed, short_by)

    tried = 0
    for bad in (0, 2, 4):
        for short_by in (3, 100, len(PAGE) - 10):
            path = tmp_path / f"short-{bad}-{short_by}.warc{'.gz' if compressed else ''}"
            path.write_bytes(b"".join(record(i, short_by if i == bad else 0) for i in range(5)))
            docs, seen = _read(path)
            assert [d["metadata"]["url"] for d in docs] == [f"https://x/{i}" for i in range(5) if i != bad]
            assert [d["html"] for d in docs] == [p for i, p in enumerate(pages) if i != bad]
            assert seen.records == 5 and dict(seen.unusable) == {"read/truncated_record": 1}
            assert dict(seen.not_records) == {"warc/corrupt_region": 1}
            tried += 1
    tally("bad_inputs", tried)
    tally("crashes", 0)


def test_dechunk_rules():
    assert dechunk(b"5\r\nhello\r\n6;x=y\r\n world\r\n0\r\nTrailer: 1\r\n\r\n", 100) == b"hello world"
    assert dechunk(b"5\nhello\n0\n\n", 100) == b"hello"  # bare line ends, as some servers send
    assert dechunk(b"<html>", 100) == b"<html>"
    with pytest.raises(Truncated):
        dechunk(b"5\r\nhello\r\n", 100)
    with pytest.raises(TooLarge):
        dechunk(_chunked(b"x" * 5000), 1000)


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_content_coding_bombs_stop_at_the_cap(tmp_path, coding):
    """A body that inflates to 64 MiB in any content coding, with an 8 MiB cap: removed as too large, the pages
    around it kept."""
    big = b"<p>" + b" " * (64 * MiB)
    body = {
        "gzip": lambda: gzip.compress(big, 1, mtime=0),
        "deflate": lambda: zlib.compress(big, 1),
        "br": lambda: brotli.compress(big, quality=1),
        "zstd": lambda: zstandard.ZstdCompressor(level=1).compress(big),
    }[coding]()
    assert len(body) < 2 * MiB
    path = tmp_path / "coding.warc.gz"
    with open(path, "wb") as f:
        _page_record(f, "https://x/1", PAGE, [])
        _page_record(f, "https://x/bomb", body, [("Content-Encoding", coding)])
        _page_record(f, "https://x/2", PAGE, [])
    docs, seen = _read(path, max_html_bytes=8 * MiB)
    assert [d["metadata"]["url"] for d in docs] == ["https://x/1", "https://x/2"]
    assert seen.records == 3 and dict(seen.unusable) == {"read/too_large": 1}
    tally("bad_inputs", 1)
    tally("crashes", 0)


def _peak_mib(code: str) -> int:
    """Peak resident MiB of a fresh Python that imports the reader and runs ``code``: the kernel's high-water mark
    of the new process's memory (``ru_maxrss`` would not do: Linux carries it over from the forking test process)."""
    prelude = f"import sys; sys.path.insert(0, {str(REPO)!r})\n" + (
        "from datapipe.io.readers import check_shard, read_shard\n"
        "from datapipe.io.shards import Shard\n"
        "from datapipe.io.tally import ReadTally\n"
    )
    tail = (
        "\nhwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]"
        "\nprint(int(hwm.split()[1]) // 1024)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", prelude + code + tail], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return int(proc.stdout.split()[-1])


def test_memory_is_bounded_by_the_cap_not_the_record(tmp_path):
    """A WARC gzip member that inflates to 1 GiB, a gzip body inside it, and a JSONL line of 1 GiB in zstd: read
    with the default caps, each costs less than 200 MiB more than reading a file of ordinary pages."""
    warc = tmp_path / "bombs.warc.gz"
    zeros = b"<p>" + b" " * (MiB - 3)
    with open(warc, "wb") as f:
        _page_record(f, "https://x/1", PAGE, [])
        http = _http("200 OK", [("Content-Type", "text/html")])
        _warc_member(f, "https://x/member-bomb", http, [zeros] * 1024, 1024 * MiB)
        bomb = gzip.compress(b" " * (256 * MiB), 1, mtime=0)
        _page_record(f, "https://x/coding-bomb", bomb, [("Content-Encoding", "gzip")])
        _page_record(f, "https://x/2", PAGE, [])
    plain = tmp_path / "plain.warc.gz"
    with open(plain, "wb") as f:
        for i in range(4):
            _page_record(f, f"https://x/{i}", PAGE, [])
    jsonl = tmp_path / "line.jsonl.zst"
    with open(jsonl, "wb") as raw, zstandard.ZstdCompressor(level=1).stream_writer(raw) as w:
        w.write(b'{"text": "a short one"}\n{"text": "')
        for _ in range(1024):
            w.write(b"x" * MiB)
        w.write(b'"}\n{"text": "the last one"}\n')
    run = (
        "t = ReadTally(); docs = list(read_shard(Shard(0, %r, 'x'), 's', %r, 'text', 'id', t, "
        "max_record_bytes=96 << 20, max_html_bytes=8 << 20)); "
        "assert len(docs) == %d and dict(t.unusable) == %r, (len(docs), t)"
    )
    base = _peak_mib(run % (str(plain), "warc", 4, {}))
    warc_peak = _peak_mib(run % (str(warc), "warc", 2, {"read/too_large": 2}))
    jsonl_peak = _peak_mib(run % (str(jsonl), "jsonl", 2, {"read/too_large": 1}))
    print(f"peak RSS: plain {base} MiB, WARC bombs {warc_peak} MiB, 1 GiB JSONL line {jsonl_peak} MiB")
    assert warc_peak < base + 200 and jsonl_peak < base + 200
    tally("bad_inputs", 3)
    tally("crashes", 0)
    tally("unbounded", 0)


def test_long_lines_and_values_are_removed_with_their_reason(tmp_path):
    """A JSONL line or Parquet value over the cap goes as read/too_large; the records around it stay, in order, in
    every compression."""
    recs = [
        b'{"text": "first"}',
        b'{"text": "' + b"y" * 5000 + b'"}',
        b'{"text": "third"}',
        b"",
        b'{"text": "end"}',
    ]
    data = b"\n".join(recs)
    for name, payload in (
        ("a.jsonl", data),
        ("a.jsonl.gz", gzip.compress(data, mtime=0)),
        ("a.jsonl.zst", zstandard.ZstdCompressor().compress(data)),
        ("nl.jsonl", data + b"\n"),
    ):
        path = tmp_path / name
        path.write_bytes(payload)
        seen = ReadTally()
        docs = list(
            read_shard(Shard(0, str(path), name), "s", "jsonl", "text", "id", seen, max_record_bytes=1000)
        )
        assert [d["text"] for d in docs] == ["first", "third", "end"], name
        assert dict(seen.unusable) == {"read/too_large": 1} and seen.records == 4, name
    last_long = tmp_path / "last.jsonl"
    last_long.write_bytes(b'{"text": "first"}\n{"text": "' + b"z" * 5000 + b'"}')
    seen = ReadTally()
    docs = list(
        read_shard(Shard(0, str(last_long), "l"), "s", "jsonl", "text", "id", seen, max_record_bytes=1000)
    )
    assert [d["text"] for d in docs] == ["first"] and dict(seen.unusable) == {"read/too_large": 1}
    table = pa.table({"content": ["short", "é" * 600, "also short"]})  # 600 characters, 1,200 bytes
    pq.write_table(table, tmp_path / "p.parquet")
    seen = ReadTally()
    docs = list(
        read_shard(
            Shard(0, str(tmp_path / "p.parquet"), "p"),
            "s",
            "parquet",
            "content",
            "id",
            seen,
            max_record_bytes=1000,
        )
    )
    assert [d["text"] for d in docs] == ["short", "also short"] and dict(seen.unusable) == {
        "read/too_large": 1
    }
    tally("bad_inputs", 6)
    tally("crashes", 0)


def test_too_large_responses_that_are_no_page_stay_non_records(tmp_path):
    """A huge image or a huge redirect body is no document: it is skipped as it would be at any size."""
    path = tmp_path / "big.warc.gz"
    blob = b"\x89PNG" + b"\0" * (9 * MiB)
    with open(path, "wb") as f:
        _warc_member(f, "https://x/img", _http("200 OK", [("Content-Type", "image/png")]), [blob], len(blob))
        _warc_member(
            f, "https://x/moved", _http("301 Moved", [("Content-Type", "text/html")]), [blob], len(blob)
        )
        _page_record(f, "https://x/1", PAGE, [])
    docs, seen = _read(path, max_html_bytes=8 * MiB)
    assert [d["metadata"]["url"] for d in docs] == ["https://x/1"] and seen.records == 1
    assert dict(seen.not_records) == {"warc/not_html": 1, "warc/http_not_ok": 1}
    tally("bad_inputs", 2)
    tally("crashes", 0)


def test_a_bomb_inside_io_bytes_is_not_read_past_the_cap():
    """The cap holds for in-memory readers too (``BytesIO``: what the sandbox and the tests hand over)."""
    from datapipe.io.http import undo_coding

    with pytest.raises(TooLarge):
        undo_coding(gzip.compress(b" " * (32 * MiB), 1), "gzip", MiB)
    assert undo_coding(io.BytesIO(b"x").read(), "identity", 10) == b"x"


MIX = (
    mixture_head("hostile")
    + """\
  good:
    weight: 1
    format: jsonl
    paths: ["good.jsonl"]
  {name}:
    weight: 1
    format: jsonl
    paths: ["{path}"]
    text_field: {field}
{extra}"""
)


def _two_sources(tmp_path, records: list[dict], field: str = "text", extra: str = "") -> tuple:
    data = tmp_path / "data"
    data.mkdir()
    prose = "A sentence of plain English prose that a filter keeps, with enough words in it. " * 6
    (data / "good.jsonl").write_bytes(
        b"".join(orjson.dumps({"text": f"{i} {prose}"}) + b"\n" for i in range(8))
    )
    (data / "other.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    mixture = write_mixture(
        tmp_path, MIX.format(root=data, name="other", path="other.jsonl", field=field, extra=extra)
    )
    out = tmp_path / "out"
    return run_build("--mixture", str(mixture), "--output", str(out)), out


def test_a_text_field_most_records_lack_stops_the_build_before_work(tmp_path):
    """Records that hold their text under another name: one line naming the file, the field and the keys the
    records have, before any stage runs (today's alternative: a component of nothing)."""
    records = [{"id": i, "content": f"document {i}", "lang": "en"} for i in range(30)]
    proc, out = _two_sources(tmp_path, records)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: ") and "other.jsonl" in line and "field 'text'" in line
    assert "30 of the first 30 records" in line and "content" in line and "lang" in line
    assert not (out / "good").exists() and not (out / "mixture.json").exists()
    tally("bad_inputs", 1)
    tally("crashes", 0)


def test_a_source_whose_every_document_goes_writes_no_manifest(tmp_path):
    """Every document of a source removed (here by a language no text is in): the build names the source and the
    reasons, and no manifest holds a component of nothing."""
    prose = "A sentence of plain English prose that a filter keeps, with enough words in it. " * 6
    records = [{"text": f"{i} {prose}"} for i in range(6)]
    proc, out = _two_sources(tmp_path, records, extra="    langid: {languages: [fi], min_score: 0.5}\n")
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    (line,) = proc.stderr.strip().splitlines()
    assert "sources.other: its cache holds no tokens (langid/language 6)" in line
    assert "the manifest is not written" in line and not (out / "mixture.json").exists()
    tally("bad_inputs", 1)
    tally("crashes", 0)


def _zstd_frame(data: bytes, size: bool = True) -> bytes:
    return zstandard.ZstdCompressor(write_content_size=size).compress(data)


def _skippable_frame(payload: bytes, kind: int = 0x50) -> bytes:
    return bytes([kind]) + b"\x2a\x4d\x18" + len(payload).to_bytes(4, "little") + payload


def test_text_encodings_and_containers_read_whole(tmp_path):
    """A BOM is no invalid line (UTF-8, or UTF-16 that the BOM names); zstd skippable frames, frames without a
    content size and several frames read in full; so do concatenated gzip members."""
    lines = [{"text": f"line {i} é ü"} for i in range(5)]
    body = b"".join(orjson.dumps(r) + b"\n" for r in lines)
    half = body.index(b"\n", len(body) // 2) + 1
    files = {
        "bom.jsonl": codecs.BOM_UTF8 + body,
        "utf16.jsonl": body.decode().encode("utf-16"),  # a BOM first, then little-endian
        "utf16be.jsonl": b"\xfe\xff" + body.decode().encode("utf-16-be"),
        "frames.jsonl.zst": _skippable_frame(b"meta" * 10)
        + _zstd_frame(body[:half], size=False)
        + _skippable_frame(b"", 0x5F)
        + _zstd_frame(body[half:]),
        "members.jsonl.gz": gzip.compress(body[:half], mtime=0) + gzip.compress(body[half:], mtime=0),
        "bom.jsonl.zst": _zstd_frame(codecs.BOM_UTF8 + body),
    }
    for name, payload in files.items():
        path = tmp_path / name
        path.write_bytes(payload)
        check_shard(str(path), "jsonl", "text")
        seen = ReadTally()
        docs = list(read_shard(Shard(0, str(path), name), "s", "jsonl", "text", "id", seen))
        assert [d["text"] for d in docs] == [r["text"] for r in lines], name
        assert seen.records == 5 and not seen.unusable and not seen.not_records, (name, seen)
    tally("bad_inputs", len(files))
    tally("crashes", 0)


def test_every_matched_path_is_a_file_or_is_named(tmp_path, caplog):
    """A glob's matches that are no readable file are never silently left out: a symlink to nothing stops the
    build before work (a link to fix), a folder is named in one warning and not read."""
    from datapipe import ConfigError, load_mixture
    from datapipe.orchestrate.plan import check_inputs

    data = tmp_path / "data"
    data.mkdir()
    (data / "a.jsonl").write_bytes(b'{"text": "a document"}\n')
    (data / "sub.jsonl").mkdir()  # a folder whose name matches
    mix = write_mixture(
        tmp_path,
        MIX.format(root=data, name="other", path="*.jsonl", field="text", extra="").replace(
            "good.jsonl", "a.jsonl"
        ),
    )
    with caplog.at_level("WARNING"):
        mixture = load_mixture(str(mix))
        files = check_inputs(mixture, mixture.sources)
    assert files["other"] == [str(data / "a.jsonl")]
    (record,) = [r for r in caplog.records if "folder" in r.getMessage()]
    assert (
        "sources.other.paths[0]: 1 folder(s) match '" in record.getMessage()
        and "sub.jsonl" in record.getMessage()
    )
    (data / "gone.jsonl").symlink_to(data / "nowhere.jsonl")
    with pytest.raises(ConfigError) as info:
        check_inputs(mixture, mixture.sources)
    assert info.value.field == "sources.other.paths[0]"
    assert info.value.message == f"{data / 'gone.jsonl'} matches but is a symlink to nothing"
    tally("bad_inputs", 2)
    tally("crashes", 0)


def test_an_unreadable_match_is_named(tmp_path):
    """A file the build may not read is named as such, not left out. Root reads every file, so as root the check
    runs in a forked child that drops to ``nobody`` first (in a folder it may enter)."""
    import stat
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="datapipe-unreadable-"))
    try:
        folder.chmod(0o755)
        (folder / "a.jsonl").write_bytes(b'{"text": "one"}\n')
        (folder / "b.jsonl").write_bytes(b'{"text": "two"}\n')
        (folder / "b.jsonl").chmod(0)
        (folder / "a.jsonl").chmod(stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
        # the fork is made by a fresh single-threaded Python (this test process may hold JAX's threads), and
        # only the forked child drops to nobody. The user nobody may not read python's own library (under /root),
        # nor, in a clone inside a folder only its owner may enter, the virtual environment or the code: every import
        # happens before the drop (a first glob_split makes fsspec's lazy ones), and one after it is refused
        # (tests/test_private_clone.py runs this test from such a folder)
        code = (
            "import os, sys; from datapipe.io.fs import glob_split; import orjson\n"
            "glob_split(sys.argv[1])\n"
            "class Refuse:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        raise ImportError(f'{name} is imported after the drop to nobody: import it before')\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    if os.geteuid() == 0:\n"
            "        os.setgroups([]); os.setgid(65534); os.setuid(65534)\n"
            "    sys.meta_path.insert(0, Refuse())\n"
            "    sys.stdout.buffer.write(orjson.dumps(glob_split(sys.argv[1]))); sys.stdout.flush(); os._exit(0)\n"
            "sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code, str(folder / "*.jsonl")], cwd=REPO, capture_output=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        answer = proc.stdout
        files, others = orjson.loads(answer)
        assert files == [str(folder / "a.jsonl")]
        assert others == [[str(folder / "b.jsonl"), "not readable"]]
    finally:
        (folder / "b.jsonl").chmod(0o600)
        shutil.rmtree(folder)
    tally("bad_inputs", 1)
    tally("crashes", 0)


BOMB_MIX = (
    mixture_head("bombs")
    + """\
  web:
    weight: 1
    format: warc
    paths: ["crawl/*.warc.gz"]
    langid: {{languages: [en], min_score: 0.5}}
    filters: {{preset: refinedweb}}
"""
)


def _build_peak_mib(mixture: Path, out: Path) -> int:
    """Peak resident MiB of the largest process of a whole build (the launcher and every child it waited for),
    measured by a small parent whose own memory is all that could carry over."""
    code = (
        "import resource, subprocess, sys\n"
        f"p = subprocess.run([sys.executable, '-m', 'pipelines.build_mixture', '--mixture', {str(mixture)!r}, "
        f"'--output', {str(out)!r}], capture_output=True, text=True)\n"
        "assert p.returncode == 0, p.stderr[-3000:]\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return int(proc.stdout.split()[-1])


def test_a_build_over_bombs_peaks_within_200_mib_of_one_without(tmp_path):
    """The same build twice, once with a second crawl file of plain pages and once with that file holding a WARC
    member that inflates to 1 GiB and a 256 MiB gzip body among them: the build's peak memory grows by less than
    200 MiB, and both bombs are accounted for as too large."""
    from tests.conftest import CORPORA

    peaks = {}
    for kind in ("plain", "bombs"):
        data = tmp_path / kind
        (data / "crawl").mkdir(parents=True)
        shutil.copy(CORPORA / "crawl" / "docs-00000.warc.gz", data / "crawl" / "a.warc.gz")
        with open(data / "crawl" / "b.warc.gz", "wb") as f:
            _page_record(f, "https://x/1", PAGE, [])
            if kind == "bombs":
                http = _http("200 OK", [("Content-Type", "text/html")])
                _warc_member(f, "https://x/member-bomb", http, [b" " * MiB] * 1024, 1024 * MiB)
                body = gzip.compress(b" " * (256 * MiB), 1, mtime=0)
                _page_record(f, "https://x/coding-bomb", body, [("Content-Encoding", "gzip")])
            _page_record(f, "https://x/2", PAGE, [])
        mixture = write_mixture(data, BOMB_MIX.format(root=data))
        peaks[kind] = _build_peak_mib(mixture, data / "out")
    (extract,) = (tmp_path / "bombs" / "out" / "web").glob("extract-*")
    stage = orjson.loads((extract / "stage.json").read_bytes())
    print(f"build peak RSS: plain {peaks['plain']} MiB, with bombs {peaks['bombs']} MiB")
    assert stage["counts"]["removed"].get("read/too_large") == 2
    assert peaks["bombs"] < peaks["plain"] + 200
    tally("bad_inputs", 2)
    tally("crashes", 0)
    tally("unbounded", 0)
