"""The bad-input corpus (``tests/fixtures/bad``) through real builds: nothing is lost, nothing crashes.

Record-level damage (a truncated crawl, wrong or unknown charsets, non-HTML responses, deep nesting, JSONL lines
that are not JSON or carry no text, invalid UTF-8 and NUL bytes, truncated compressed files, empty files) goes
through ONE build with one source per format: the build succeeds, each file's shard in ``stage.json`` counts what
was removed or skipped and why, every stage balances, and what is kept is right (the text of a mis-declared page is
the text of the original). File-level problems the user must fix stop the build with exit status 2 and one
``error:`` line naming the file, without a traceback. Expectations come from ``PROVENANCE.json`` (what the builder
planted) or are derived here from the inputs with other tools (warcio, zlib, zstandard), never from datapipe.
"""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import zlib
from pathlib import Path

import orjson
import pytest
import zstandard
from fastwarc.warc import ArchiveIterator, WarcRecordType
from warcio.archiveiterator import ArchiveIterator as WarcioIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from datapipe import HtmlExtractor, InputError, ReadTally, Shard, check_shard, read_records
from datapipe.extract.content import main_content_text
from datapipe.extract.spaces import normalize_spaces
from datapipe.io.warc import read_warc
from tests.conftest import CORPORA, REPO, mixture_head, run_build, write_mixture
from tests.fixtures.build_bad import crawl_pages
from tests.reliability import tally

pytestmark = pytest.mark.reliability

BAD = REPO / "tests" / "fixtures" / "bad"
PROVENANCE = json.loads((BAD / "PROVENANCE.json").read_text(encoding="utf-8"))
STAGES = ("extract", "filter", "dedup", "paragraphs", "quality", "tokenize")
FORMATS = {"warc": "warc", "jsonl": "jsonl", "parquet": "parquet"}  # folder under BAD -> source format

RECORD_LEVEL = (
    mixture_head("bad_inputs", seed=1, eos=True)
    + """\
  warc:
    weight: 1
    format: warc
    paths: [warc/*]
    extract: {{timeout_s: 60}}   # the 10,000-deep page must finish, not time out, on a loaded machine
    langid: {{}}
  jsonl:
    weight: 1
    format: jsonl
    paths: [jsonl/*]
    langid: {{}}
    filters: {{preset: gopher}}
    dedup: {{exact: true}}
  parquet:
    weight: 1
    format: parquet
    paths: [parquet/*]
    text_field: content
"""
)

ONE_SOURCE = (
    mixture_head("bad_file")
    + """\
  only:
    weight: 1
    format: {fmt}
    paths: ["{path}"]
    text_field: {field}
"""
)


def _files(folder: str) -> list[str]:
    return sorted(rel for rel in PROVENANCE if rel.startswith(folder + "/"))


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    folder = tmp_path_factory.mktemp("bad_inputs")
    mixture = write_mixture(folder, RECORD_LEVEL.format(root=BAD))
    out = folder / "out"
    proc = run_build("--mixture", str(mixture), "--output", str(out))
    # every stage runs; the manifest is refused: the parquet source's only file is empty, and a component of
    # nothing would be sampled by weight and never give a row
    assert proc.returncode == 2, proc.stderr[-4000:]
    assert proc.stderr.strip().splitlines()[-1] == (
        f"error: {mixture}: sources.parquet: its cache holds no tokens (no documents were read); "
        "the manifest is not written"
    )
    assert not (out / "mixture.json").exists()
    return out, proc


def stage_json(out: Path, source: str, stage: str) -> dict:
    (folder,) = (out / source).glob(f"{stage}-*")
    return json.loads((folder / "stage.json").read_text())


def shard_stats(out: Path, source: str, name: str, stage: str = "extract") -> dict:
    return next(s for s in stage_json(out, source, stage)["shards"] if s["name"] == name)


def kept(out: Path, source: str, name: str) -> list[dict]:
    """The documents the extract stage kept from one input file, in order."""
    index = shard_stats(out, source, name)["index"]
    (folder,) = (out / source).glob("extract-*")
    return list(read_records(str(folder / f"part-{index:05d}.jsonl.zst")))


def test_build_succeeds_and_every_stage_balances(built):
    out, proc = built
    assert "Traceback" not in proc.stderr
    n_stages = 0
    for source in FORMATS:
        previous = None
        for stage in STAGES:
            if not list((out / source).glob(f"{stage}-*")):
                continue
            doc = stage_json(out, source, stage)
            counts = doc["counts"]
            assert counts["docs_in"] == counts["docs_kept"] + sum(counts["removed"].values()), (source, stage)
            for s in doc["shards"]:
                assert s["docs_in"] == s["docs_kept"] + sum(s["removed"].values()), (source, stage, s["name"])
            if previous is not None:  # each stage reads exactly what the one before it kept
                assert counts["docs_in"] == previous["docs_kept"], (source, stage)
            previous = counts
            n_stages += 1
        # every bad file of the folder is a shard of the source's first stage
        names = [s["name"] for s in stage_json(out, source, "extract")["shards"]]
        assert names == _files(source)
    assert n_stages >= 8
    tally("bad_inputs", sum(len(_files(f)) for f in FORMATS))
    tally("crashes", 0)


def test_truncated_crawl_keeps_every_page_before_the_cut(built):
    out, proc = built
    name = "warc/truncated-crawl.warc.gz"
    planted = PROVENANCE[name]["planted"]
    stats = shard_stats(out, "warc", name)
    assert stats["docs_in"] == planted["complete_html_responses"] + planted["cut_html_responses"]
    assert stats["removed"] == {"read/truncated_record": planted["cut_html_responses"]}
    # the damage is named on the console too, with the file
    assert any(line.startswith("WARNING") and name in line for line in proc.stderr.splitlines())
    # the pages kept are the first pages of the undamaged shard, with the same text
    with open(CORPORA / "crawl" / "docs-00000.warc.gz", "rb") as f:
        whole = [
            (r.headers.get("WARC-Target-URI"), r.reader.read(), r.http_charset)
            for r in ArchiveIterator(f, record_types=WarcRecordType.response, parse_http=True)
        ]
    extractor = HtmlExtractor()
    expected = [
        (url, extractor((html, cs, url))) for url, html, cs in whole[: planted["complete_html_responses"]]
    ]  # with its URL, as the stage extracts it (the learned extractor reads the URL to tell the page's type)
    assert [(d["metadata"]["url"], d["text"]) for d in kept(out, "warc", name)] == expected
    tally("bad_inputs", 1)
    tally("crashes", 0)


def test_pywb_archives_invalid_header_nonchunked_gzip_and_encoded_body(built):
    out, _ = built
    invalid = "warc/pywb-example-invalid-header.warc"
    nonchunked = "warc/pywb-example-nonchunked.warc.gz"
    # the same capture, once with a header FastWARC rejects and once gzipped as one member: the reader resyncs
    # past the bad header and loses no record
    a, b = shard_stats(out, "warc", invalid), shard_stats(out, "warc", nonchunked)
    assert a["skipped"].pop("warc/corrupt_region") == 1
    assert a["skipped"] == b["skipped"] and a["removed"] == b["removed"] == {}
    for name in (invalid, nonchunked):
        docs = kept(out, "warc", name)
        assert len(docs) == PROVENANCE[name]["planted"]["html_responses"]
    assert [d["text"] for d in kept(out, "warc", invalid)] == [
        d["text"] for d in kept(out, "warc", nonchunked)
    ]
    # a body stored gzip-encoded is decoded, not "extracted" as binary; warcio decodes it independently
    name = "warc/pywb-example2-content-encoding.warc.gz"
    with open(BAD / name, "rb") as f:
        (expected,) = [
            HtmlExtractor()((r.content_stream().read(), None))
            for r in WarcioIterator(f)
            if r.rec_type == "response"
        ]
    docs = kept(out, "warc", name)
    assert [d["text"] for d in docs] == [expected] and "\ufffd" not in expected and expected.strip()
    tally("bad_inputs", 3)
    tally("crashes", 0)


def test_non_html_responses_are_skipped(built):
    out, _ = built
    name = "warc/non-html.warc.gz"
    stats = shard_stats(out, "warc", name)
    assert stats["docs_in"] == 0
    assert stats["skipped"]["warc/not_html"] == PROVENANCE[name]["planted"]["non_html_responses"]
    tally("bad_inputs", 1)
    tally("crashes", 0)


@pytest.mark.parametrize("name", ["warc/wrong-charset.warc.gz", "warc/unknown-charset.warc.gz"])
def test_misdeclared_charsets_give_the_original_text(built, name):
    out, _ = built
    originals = crawl_pages()
    extractor = HtmlExtractor()
    pages = PROVENANCE[name]["pages"]
    docs = {d["metadata"]["url"]: d["text"] for d in kept(out, "warc", name)}
    assert shard_stats(out, "warc", name)["removed"] == {}
    for page in pages:
        expected = normalize_spaces(extractor((originals[page["url"]], "utf-8", page["url"])))
        assert docs[page["url"]] == expected, (page["bytes"], page["declared"])
    tally("bad_inputs", len(pages))
    tally("crashes", 0)


def test_deeply_nested_page_is_extracted(built):
    out, _ = built
    name = "warc/nested-10000.warc.gz"
    (page,) = PROVENANCE[name]["pages"]
    (doc,) = kept(out, "warc", name)
    assert doc["text"] == main_content_text(f"<p>{page['paragraph_html']}</p>")
    tally("bad_inputs", 1)
    tally("crashes", 0)


def test_empty_files_are_empty_shards(built):
    out, _ = built
    names = [
        rel for rel in PROVENANCE if Path(rel).parent.name in FORMATS and (BAD / rel).stat().st_size == 0
    ]
    assert len(names) == 3
    for name in names:
        stats = shard_stats(out, name.split("/")[0], name)
        assert stats["docs_in"] == 0 and stats["skipped"] == {"read/empty_file": 1}, name
    tally("bad_inputs", len(names))
    tally("crashes", 0)


# planted defect -> (where it is counted, reason); "kept" defects must leave their document in the output
JSONL_DEFECTS = {
    "invalid_utf8": ("counters", "read/invalid_utf8_replaced"),
    "raw_nul_in_string": ("removed", "read/invalid_json"),
    "not_json": ("removed", "read/invalid_json"),
    "missing_text": ("removed", "read/missing_text"),
    "text_not_string": ("removed", "read/text_not_string"),
    "not_an_object": ("removed", "read/not_an_object"),
}


@pytest.mark.parametrize(
    "name",
    [
        "jsonl/invalid-utf8-and-nul.jsonl",
        "jsonl/not-json.jsonl",
        "jsonl/missing-text.jsonl",
        "jsonl/text-not-string.jsonl",
    ],
)
def test_bad_jsonl_records_are_counted(built, name):
    out, _ = built
    planted = PROVENANCE[name]["planted"]
    stats = shard_stats(out, "jsonl", name)
    assert stats["docs_in"] == sum(planted.values())
    expected: dict[str, dict[str, int]] = {"removed": {}, "counters": {}}
    for defect, n in planted.items():
        if defect in JSONL_DEFECTS:
            where, reason = JSONL_DEFECTS[defect]
            expected[where][reason] = expected[where].get(reason, 0) + n
    assert stats["removed"] == expected["removed"]
    assert stats["counters"] == expected["counters"]
    docs = kept(out, "jsonl", name)
    assert len(docs) == stats["docs_in"] - sum(expected["removed"].values())
    # repaired records keep their text, with U+FFFD for the bytes that were not UTF-8; an escaped NUL stays
    assert sum("\ufffd" in d["text"] for d in docs) == planted.get("invalid_utf8", 0)
    assert sum("\x00" in d["text"] for d in docs) == planted.get("escaped_nul", 0)
    tally("bad_inputs", 1)
    tally("crashes", 0)


def _complete_lines(name: str) -> tuple[list[bytes], bytes]:
    """What an independent decoder gets out of a truncated compressed file: complete lines, and the cut line."""
    data = (BAD / name).read_bytes()
    if name.endswith(".gz"):
        text = zlib.decompressobj(wbits=31).decompress(data)
    else:
        text = zstandard.ZstdDecompressor().decompressobj().decompress(data)
    *lines, partial = text.split(b"\n")
    return [line for line in lines if line.strip()], partial


@pytest.mark.parametrize("name", ["jsonl/truncated.jsonl.gz", "jsonl/truncated.jsonl.zst"])
def test_truncated_compressed_jsonl_keeps_the_lines_before_the_cut(built, name):
    out, _ = built
    lines, partial = _complete_lines(name)
    assert lines, "the cut should leave complete lines to keep"
    stats = shard_stats(out, "jsonl", name)
    assert stats["skipped"] == {"read/corrupt_region": 1}
    assert stats["removed"] == ({"read/truncated_record": 1} if partial.strip() else {})
    originals = [
        normalize_spaces(orjson.loads(line)["text"]) for line in lines
    ]  # normalize_spaces: default on
    assert [d["text"] for d in kept(out, "jsonl", name)] == originals
    tally("bad_inputs", 1)
    tally("crashes", 0)


def _error_lines(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("error:")]


FILE_LEVEL = [
    pytest.param("file-level/no-text-column.parquet", "parquet", "content"),
    pytest.param("file-level/binary-text-column.parquet", "parquet", "content"),
    pytest.param("file-level/jsonl-named.parquet", "parquet", "content"),
    pytest.param("file-level/plain-named.jsonl.gz", "jsonl", "text"),
    pytest.param("file-level/arc-named.warc.gz", "warc", "text"),
]


@pytest.mark.parametrize(("name", "fmt", "field"), FILE_LEVEL)
def test_file_level_problem_stops_the_build_with_one_line(tmp_path, name, fmt, field):
    mixture = write_mixture(tmp_path, ONE_SOURCE.format(root=BAD, fmt=fmt, path=name, field=field))
    proc = run_build("--mixture", str(mixture), "--output", str(tmp_path / "out"))
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 2
    (line,) = _error_lines(proc)
    assert str(BAD / name) in line
    if fmt == "parquet" and "column" in PROVENANCE[name]["what"]:
        assert f"field {field!r}" in line
    assert not (tmp_path / "out" / "only").exists()  # stopped before any stage ran
    tally("bad_inputs", 1)
    tally("crashes", 0)


def test_empty_glob_stops_the_build_with_one_line(tmp_path):
    pattern = "jsonl/no-such-file-*.jsonl"
    mixture = write_mixture(tmp_path, ONE_SOURCE.format(root=BAD, fmt="jsonl", path=pattern, field="text"))
    proc = run_build("--mixture", str(mixture), "--output", str(tmp_path / "out"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = _error_lines(proc)
    assert str(mixture) in line and "sources.only.paths[0]" in line and pattern in line
    tally("bad_inputs", 1)
    tally("crashes", 0)


@pytest.mark.parametrize(("name", "fmt", "field"), [p.values for p in FILE_LEVEL])
def test_check_shard_names_the_file_and_field(name, fmt, field):
    with pytest.raises(InputError) as info:
        check_shard(str(BAD / name), fmt, field)
    assert info.value.file == str(BAD / name) and str(BAD / name) in str(info.value)
    if "column" in PROVENANCE[name]["what"]:
        assert info.value.field == field and f"field {field!r}" in str(info.value)
    tally("bad_inputs", 1)
    tally("crashes", 0)


def test_check_shard_passes_files_whose_damage_is_counted():
    """The pre-flight check must not stop a build for damage the readers count record by record."""
    names = [rel for rel in PROVENANCE if Path(rel).parent.name in FORMATS]
    for name in names:
        fmt = FORMATS[Path(name).parent.name]
        check_shard(str(BAD / name), fmt, "content" if fmt == "parquet" else "text")
    tally("bad_inputs", len(names))
    tally("crashes", 0)


MEASURED = """\
import resource, subprocess, sys
proc = subprocess.run(sys.argv[2:])
with open(sys.argv[1], "w") as f:
    f.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024))
sys.exit(proc.returncode)
"""


def run_build_measured(*args: str, rss_file: Path) -> tuple[subprocess.CompletedProcess, int]:
    """``run_build`` under a fresh parent, so that the peak RSS it reports is this build's (bytes)."""
    cmd = [
        sys.executable,
        "-c",
        MEASURED,
        str(rss_file),
        sys.executable,
        "-m",
        "pipelines.build_mixture",
        *args,
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    return proc, int(rss_file.read_text())


@pytest.mark.parametrize("mb", [16, pytest.param(64, marks=pytest.mark.slow)])
def test_one_huge_document_goes_through_with_bounded_memory(tmp_path, fixture_texts, mb):
    """A 16 MB (``make test-all``: 64 MB) document (real text from every fixture corpus, concatenated into one
    record) is extracted and tokenized whole, with peak memory a small multiple of its size (64 MB: ~50 s)."""
    target = mb << 20
    parts, size = [], 0
    while size < target:
        text = fixture_texts[len(parts) % len(fixture_texts)]
        parts.append(text)
        size += len(text.encode("utf-8")) + 2
    doc = "\n\n".join(parts)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "huge.jsonl").write_bytes(orjson.dumps({"id": f"huge-{mb}mb", "text": doc}) + b"\n")
    mixture = write_mixture(
        tmp_path, ONE_SOURCE.format(root=tmp_path / "data", fmt="jsonl", path="huge.jsonl", field="text")
    )
    out = tmp_path / "out"
    proc, peak = run_build_measured(
        "--mixture", str(mixture), "--output", str(out), rss_file=tmp_path / "rss"
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert stage_json(out, "only", "extract")["counts"]["chars_out"] == len(doc)  # whole, not cut
    tok = stage_json(out, "only", "tokenize")
    assert tok["counts"]["docs_in"] == tok["counts"]["docs_kept"] == tok["cache"]["rows"] == 1
    assert tok["cache"]["tokens"] > len(doc) // 8  # GPT-2 gives a few characters per token on this text
    assert peak < (1 << 30) + 24 * len(doc.encode("utf-8")) < 3 << 30, f"peak RSS {peak / 2**20:.0f} MiB"
    tally("bad_inputs", 1)
    tally("crashes", 0)


def test_content_encoded_bodies_are_decoded(tmp_path):
    """A page stored as the server sent it, compressed with each HTTP content coding (or wrongly labelled, or cut
    short by the server), reads as the page itself or is removed with a reason; never as compressed bytes."""
    import brotli  # FastWARC's own dependency

    url = "https://debian-handbook.info/browse/de-DE/stable/sect.inetd.html"
    page = crawl_pages()[url]
    raw_deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    bodies = [  # (Content-Encoding, body as stored)
        ("gzip", gzip.compress(page, mtime=0)),
        ("deflate", zlib.compress(page)),
        ("deflate", raw_deflate.compress(page) + raw_deflate.flush()),  # as some servers send it
        ("br", brotli.compress(page)),
        ("zstd", zstandard.ZstdCompressor().compress(page)),
        ("gzip, br", brotli.compress(gzip.compress(page, mtime=0))),
        ("utf-8", page),  # a header some servers send with a plain body
        ("gzip", page),  # a crawler that stored the body decoded and kept the header
    ]
    cut_short = ("gzip", gzip.compress(page, mtime=0)[:2000])
    path = tmp_path / "encoded.warc.gz"
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for coding, body in [*bodies, cut_short]:
            headers = StatusAndHeaders(
                "200 OK",
                [("Content-Type", "text/html; charset=utf-8"), ("Content-Encoding", coding)],
                protocol="HTTP/1.1",
            )
            record = writer.create_warc_record(
                url, "response", payload=io.BytesIO(body), http_headers=headers
            )
            writer.write_record(record)
    seen = ReadTally()
    docs = list(read_warc(Shard(0, str(path), path.name), "s", seen))
    assert [d["html"] for d in docs] == [page] * len(bodies)
    assert seen.records == len(bodies) + 1 and dict(seen.unusable) == {"read/bad_content_encoding": 1}
    tally("bad_inputs", len(bodies) + 1)
    tally("crashes", 0)
