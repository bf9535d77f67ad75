"""Fuzzing the readers and HTML extraction with random bytes and with real fixture files damaged at random.

Allowed outcomes: documents whose accounting balances (every document counted in is yielded or removed with a
reason), or :class:`InputError` naming the file. Anything else (another exception, a hang) fails the test. Inputs are
real files from the fixture corpora, truncated at random offsets, with bytes flipped, garbage inserted, stretches
deleted or duplicated; and plain random bytes under every file name the readers treat differently.

Bounded and deterministic: ``derandomize=True`` (the same examples on every run, no example database), a fixed
number of examples per test, a hypothesis ``deadline`` and a hard per-example time limit (SIGALRM) that turns a hang
into a failure. The whole file runs in well under a minute on two cores.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import signal
import time
import zlib
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from fastwarc.warc import ArchiveIterator, WarcRecordType
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from datapipe import HtmlExtractor, InputError, ReadTally, Shard, check_shard, read_shard
from datapipe.extract.html import decode_html
from datapipe.extract.sandbox import Failed, Sandbox
from datapipe.io.warc import read_warc
from tests.conftest import CORPORA, REPO
from tests.reliability import tally

pytestmark = pytest.mark.reliability

BAD = REPO / "tests" / "fixtures" / "bad"
PER_EXAMPLE_S = 10.0  # hard limit: an example running this long is a hang


def fuzz_settings(n: int, deadline_ms: int = 2000) -> settings:
    return settings(
        max_examples=n,
        deadline=deadline_ms,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


class Hang(Exception):
    """An example ran past PER_EXAMPLE_S."""


@contextlib.contextmanager
def time_limit(seconds: float = PER_EXAMPLE_S):
    def on_alarm(signum, frame):
        raise Hang(f"no result after {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ----------------------------------------------------------------------------------------------- seed files


def _first_members(path: Path, n: int) -> bytes:
    """The first ``n`` records (gzip members) of a real crawl shard: a small, whole WARC file."""
    with open(path, "rb") as f:
        starts = [r.stream_pos for r in ArchiveIterator(f, parse_http=False)]
    return path.read_bytes()[: starts[n]]


# warcinfo + 4 request/response pairs
CRAWL_HEAD = _first_members(CORPORA / "crawl" / "docs-00000.warc.gz", 9)
WARC_SEEDS = {
    ".warc.gz": [
        CRAWL_HEAD,
        (BAD / "warc" / "pywb-example-nonchunked.warc.gz").read_bytes(),
        (BAD / "warc" / "pywb-example2-content-encoding.warc.gz").read_bytes(),
        (BAD / "warc" / "wrong-charset.warc.gz").read_bytes()[:12_000],
    ],
    ".warc": [gzip.decompress(CRAWL_HEAD), (BAD / "warc" / "pywb-example-invalid-header.warc").read_bytes()],
}
FORTUNES = (
    zstandard.ZstdDecompressor()
    .decompressobj()
    .decompress((CORPORA / "fortunes" / "fortunes-en.jsonl.zst").read_bytes())
)
FORTUNE_LINES = FORTUNES.splitlines(keepends=True)[:60]
JSONL_SEEDS = {
    ".jsonl": [b"".join(FORTUNE_LINES), (BAD / "jsonl" / "invalid-utf8-and-nul.jsonl").read_bytes()],
    ".jsonl.gz": [gzip.compress(b"".join(FORTUNE_LINES), mtime=0)],
    # two frames, as a parallel compressor writes them
    ".jsonl.zst": [
        zstandard.ZstdCompressor(write_checksum=True).compress(b"".join(FORTUNE_LINES[:30]))
        + zstandard.ZstdCompressor().compress(b"".join(FORTUNE_LINES[30:]))
    ],
}


def _parquet_bytes(compression: str) -> bytes:
    rows = pq.read_table(CORPORA / "code" / "stdlib-00000.parquet").slice(0, 6)
    sink = pa.BufferOutputStream()
    pq.write_table(rows, sink, compression=compression, row_group_size=2)
    return sink.getvalue().to_pybytes()


PARQUET_SEEDS = [_parquet_bytes("zstd"), _parquet_bytes("none")]


def _html_pages() -> list[tuple[bytes, str | None]]:
    pages = []
    with open(CORPORA / "crawl" / "docs-00001.warc.gz", "rb") as f:
        for r in ArchiveIterator(f, record_types=WarcRecordType.response, parse_http=True):
            body = r.reader.read()
            if len(body) < 8000:
                pages.append((body, r.http_charset))
    with open(BAD / "warc" / "wrong-charset.warc.gz", "rb") as f:
        for r in ArchiveIterator(f, record_types=WarcRecordType.response, parse_http=True):
            pages.append((r.reader.read()[:8000], r.http_charset))
    return pages


HTML_PAGES = _html_pages()
# charset labels as HTTP headers carry them: right, wrong, unknown, and Python codecs that are no web charset
LABELS = [
    None,
    "",
    "utf-8",
    "UTF8",
    "iso-8859-1",
    "windows-1252",
    "shift_jis",
    "x-sjis",
    "euc-jp",
    "gb2312",
    "koi8-r",
    "utf-16",
    "utf-16be",
    "utf-32",
    "utf-7",
    "iso-2022-jp",
    "x-unknown-foo",
    "idna",
    "punycode",
    "undefined",
    "base64",
    "rot13",
    "unicode_escape",
    "utf-8\x00",
]


@st.composite
def damaged(draw, seeds: list[bytes]) -> bytes:
    """A seed file with 1-4 random edits: truncation, byte flips, inserted garbage, deletions, duplications."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        if not data:
            break
        op = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "duplicate"]))
        pos = draw(st.integers(0, len(data) - 1))
        if op == "truncate":
            del data[pos:]
        elif op == "flip":
            data[pos] ^= draw(st.integers(1, 255))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=64))
        elif op == "delete":
            del data[pos : pos + draw(st.integers(1, 4096))]
        else:
            data[pos:pos] = data[pos : pos + draw(st.integers(1, 4096))]
    return bytes(data)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def write(folder: Path, suffix: str, data: bytes) -> Path:
    path = folder / f"input{suffix}"
    path.write_bytes(data)
    return path


# ----------------------------------------------------------------------------------------------- checks


def read_controlled(path: Path, fmt: str, text_field: str = "text", events: bool = True) -> list[dict] | None:
    """Read ``path`` as ``fmt`` with the only outcomes allowed; None when it is an InputError naming the file.

    With ``events`` (inside a hypothesis test), the outcome is recorded: ``pytest --hypothesis-show-statistics``
    then shows which kinds of damage the examples reached."""
    stats = ReadTally()
    shard = Shard(0, str(path), path.name)
    try:
        with time_limit():
            if fmt == "warc":
                docs = list(read_warc(shard, "s", stats))
            else:
                docs = list(read_shard(shard, "s", fmt, text_field, "id", stats))
    except InputError as e:
        assert e.file == str(path) and str(path) in str(e)
        if events:
            event(f"{fmt}: refused")
        return None
    assert stats.records == len(docs) + sum(stats.unusable.values()), stats
    for outcome in [f"{'some' if docs else 'no'} documents", *sorted({*stats.unusable, *stats.not_records})]:
        if events:
            event(f"{fmt}: {outcome}")
    assert all(n > 0 for n in [*stats.unusable.values(), *stats.not_records.values()])
    for doc in docs:
        assert isinstance(doc["id"], str) and doc["id"] and doc["ref"].startswith(path.name + ":")
        if "html" in doc:
            assert (
                isinstance(doc["html"], bytes) and doc["charset"] is None or isinstance(doc["charset"], str)
            )
        else:
            assert isinstance(doc["text"], str)
            orjson.dumps(doc)  # the extract stage writes it as it is
    return docs


def check_controlled(path: Path, fmt: str, text_field: str = "text") -> None:
    """The pre-flight check may only pass or raise an InputError naming the file."""
    try:
        with time_limit():
            check_shard(str(path), fmt, text_field)
    except InputError as e:
        assert e.file == str(path)


def passed(examples: list[int]) -> None:
    """Record what a test proved, once every one of its examples passed (a failing test records nothing)."""
    tally("bad_inputs", sum(examples))
    tally("crashes", 0)


# ----------------------------------------------------------------------------------------------- readers


@pytest.mark.parametrize("fmt", ["warc", "jsonl"])
def test_reader_on_random_bytes(folder, fmt):
    examples: list[int] = []
    suffixes = [".warc.gz", ".warc", ".warc.lz4"] if fmt == "warc" else list(JSONL_SEEDS)

    @fuzz_settings(400)
    @given(suffix=st.sampled_from(suffixes), data=st.binary(max_size=4096))
    def check(suffix, data):
        path = write(folder, suffix, data)
        read_controlled(path, fmt)
        check_controlled(path, fmt)
        examples.append(1)

    check()
    passed(examples)


@pytest.mark.parametrize("fmt", ["warc", "jsonl"])
def test_reader_on_damaged_real_files(folder, fmt):
    examples: list[int] = []
    seeds = WARC_SEEDS if fmt == "warc" else JSONL_SEEDS

    @fuzz_settings(1500)
    @given(data=st.data(), suffix=st.sampled_from(list(seeds)))
    def check(data, suffix):
        path = write(folder, suffix, data.draw(damaged(seeds[suffix])))
        docs = read_controlled(path, fmt)
        check_controlled(path, fmt)
        if fmt == "jsonl" and docs is None:  # only a file not starting like its compression is refused whole
            assert suffix != ".jsonl"
        examples.append(1)

    check()
    passed(examples)


def test_jsonl_damage_loses_only_what_it_destroys(folder):
    """A compressed file cut anywhere keeps every line an independent decoder gets out of it."""
    whole = JSONL_SEEDS[".jsonl.gz"][0]
    examples = []
    for cut in range(20, len(whole), max(1, len(whole) // 40)):
        path = write(folder, ".jsonl.gz", whole[:cut])
        lines = zlib.decompressobj(wbits=31).decompress(whole[:cut]).split(b"\n")[:-1]
        docs = read_controlled(path, "jsonl", events=False)
        assert [d["text"] for d in docs] == [orjson.loads(line)["text"] for line in lines if line.strip()]
        examples.append(1)
    passed(examples)


def test_parquet_reader_on_random_bytes(folder):
    examples: list[int] = []

    @fuzz_settings(200)
    @given(data=st.binary(max_size=4096))
    def check(data):
        path = write(folder, ".parquet", data)
        assert read_controlled(path, "parquet", "content") is None or not data  # refused, or empty
        check_controlled(path, "parquet", "content")
        examples.append(1)

    check()
    passed(examples)


def test_parquet_reader_on_damaged_real_files(folder):
    examples: list[int] = []

    @fuzz_settings(800)
    @given(data=st.data())
    def check(data):
        path = write(folder, ".parquet", data.draw(damaged(PARQUET_SEEDS)))
        read_controlled(path, "parquet", "content")
        check_controlled(path, "parquet", "content")
        examples.append(1)

    check()
    passed(examples)


def test_parquet_damage_costs_its_row_group_and_no_silent_loss(folder):
    """A byte flipped anywhere in a real Parquet file (zstd pages, row groups of 2): either the file is refused
    (its footer is hit), or every row the footer promises is counted, read or removed as ``read/corrupt_row_group``
    a whole row group at a time."""
    data = PARQUET_SEEDS[0]
    n_rows = pq.ParquetFile(io.BytesIO(data)).metadata.num_rows
    examples, outcomes = [], set()
    for pos in range(0, len(data), 61):
        damaged_file = bytearray(data)
        damaged_file[pos] ^= 0x55
        path = write(folder, ".parquet", bytes(damaged_file))
        stats = ReadTally()
        try:
            with time_limit():
                docs = list(
                    read_shard(Shard(0, str(path), path.name), "s", "parquet", "content", "id", stats)
                )
        except InputError as e:
            assert e.file == str(path)
            outcomes.add("refused")
            continue
        lost = stats.unusable.get("read/corrupt_row_group", 0)
        assert stats.records == n_rows == len(docs) + lost and lost % 2 == 0
        outcomes.add("row group lost" if lost else "read")
        examples.append(1)
    assert outcomes == {"refused", "row group lost", "read"}
    passed(examples)


def test_parquet_ids_of_any_type_can_be_written(folder):
    """Regression: a binary or decimal id column gave ids the part-file writer rejects; a document without an id
    of its own is named by where it was read."""
    import decimal

    rows = pq.read_table(CORPORA / "code" / "stdlib-00000.parquet").slice(0, 2).select(["content"])
    for ids, expected in [
        (pa.array([b"\x01\xff", b""], pa.binary()), ["01ff", "ids.parquet:1"]),
        (pa.array([decimal.Decimal("1.50"), None], pa.decimal128(5, 2)), ["1.50", "ids.parquet:1"]),
    ]:
        path = folder / "ids.parquet"
        pq.write_table(rows.append_column("id", ids), path)
        docs = read_controlled(path, "parquet", "content", events=False)
        assert [d["id"] for d in docs] == expected
    passed([2])


# a column of each kind a real Parquet export may hold next to the text
COLUMN_TYPES = {
    "int": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "float": (pa.float64(), st.floats(allow_nan=True, allow_infinity=True)),
    "bool": (pa.bool_(), st.booleans()),
    "binary": (pa.binary(), st.binary(max_size=16)),
    "string": (pa.string(), st.text(max_size=16)),
    "list": (pa.list_(pa.int32()), st.lists(st.integers(-5, 5), max_size=3)),
    "timestamp": (pa.timestamp("us"), st.datetimes()),
    "decimal": (pa.decimal128(10, 2), st.decimals(min_value=-1000, max_value=1000, places=2)),
}


def test_parquet_reader_on_odd_column_types(folder):
    """Any column type next to the text, the id column included: documents the next stage can write
    (regression: a binary or decimal id column made the extract stage fail writing its part file)."""
    examples: list[int] = []

    @fuzz_settings(100)
    @given(
        texts=st.lists(st.one_of(st.none(), st.text(max_size=40)), min_size=1, max_size=5),
        id_type=st.sampled_from(sorted(COLUMN_TYPES)),
        extra_type=st.sampled_from(sorted(COLUMN_TYPES)),
        data=st.data(),
    )
    def check(texts, id_type, extra_type, data):
        columns = {"content": pa.array(texts, pa.string())}
        for name, kind in (("id", id_type), ("extra", extra_type)):
            arrow_type, values = COLUMN_TYPES[kind]
            drawn = data.draw(st.lists(values, min_size=len(texts), max_size=len(texts)))
            columns[name] = pa.array(drawn, arrow_type)
        path = folder / "input.parquet"
        pq.write_table(pa.table(columns), path)
        docs = read_controlled(path, "parquet", "content")
        assert docs is not None and len(docs) == sum(t is not None for t in texts)
        examples.append(1)

    check()
    passed(examples)


# ----------------------------------------------------------------------------------------------- extraction


def test_decode_html_never_raises():
    examples: list[int] = []

    @fuzz_settings(1000, deadline_ms=1000)
    @given(payload=st.binary(max_size=2048), label=st.one_of(st.sampled_from(LABELS), st.text(max_size=12)))
    def check(payload, label):
        with time_limit():
            assert isinstance(decode_html(payload, label), str)
        examples.append(1)

    check()
    passed(examples)


def test_extraction_of_damaged_real_pages():
    examples: list[int] = []

    @fuzz_settings(600)
    @given(data=st.data(), label=st.sampled_from(LABELS))
    def check(data, label):
        page = data.draw(damaged([p for p, _ in HTML_PAGES]))
        with time_limit():
            assert isinstance(HtmlExtractor()((page, label)), str)
        examples.append(1)

    check()
    passed(examples)


DEEP = (
    "<div>" * 100_000 + "<p>never reached in time</p>" + "</div>" * 100_000
).encode()  # minutes to extract


def test_sandbox_gives_every_page_a_result_in_bounded_time():
    """Each page gets its text; a pathological page times out and the pages after it still come back; a worker
    process killed while idle (by the OOM killer, say) is replaced (regression: the next batch raised
    BrokenPipeError and failed the whole shard)."""
    examples: list[int] = []
    timeout = 1.0

    @fuzz_settings(3, deadline_ms=None)
    @example(pages=[0, 1, 2, 3], deep_at=1, kill_idle=True)
    @example(pages=[4], deep_at=0, kill_idle=False)
    @given(
        pages=st.lists(st.sampled_from(range(len(HTML_PAGES))), min_size=1, max_size=6),
        deep_at=st.one_of(st.none(), st.integers(0, 6)),
        kill_idle=st.booleans(),
    )
    def check(pages, deep_at, kill_idle):
        items = [HTML_PAGES[i] for i in pages]
        if deep_at is not None:
            items.insert(min(deep_at, len(items)), (DEEP, "utf-8"))
        box = Sandbox(HtmlExtractor(), timeout_s=timeout)
        try:
            with time_limit(30):
                assert box.run(HTML_PAGES[:1]) == [HtmlExtractor()(HTML_PAGES[0])]
                if kill_idle:
                    os.kill(box._proc.pid, signal.SIGKILL)
                    box._proc.join()
                t0 = time.perf_counter()
                results = box.run(items)
                elapsed = time.perf_counter() - t0
        finally:
            box.close()
        assert len(results) == len(items)
        for item, out in zip(items, results, strict=True):
            if item[0] is DEEP:
                assert out == Failed("timeout", f"> {timeout} s")
            else:
                assert out == HtmlExtractor()(item)  # the same text as in-process
        assert elapsed < timeout * (1 + (deep_at is not None)) + 5
        examples.append(len(items))

    check()
    passed(examples)


def test_sandbox_process_that_dies_fails_only_its_document():
    box = Sandbox(os._exit, timeout_s=5)  # os._exit(n) ends the worker process on every item
    try:
        with time_limit(30):
            results = box.run([3, 4])
    finally:
        box.close()
    assert results == [Failed("crash", "the extraction process died")] * 2 and box.restarts == 2
    passed([2])
