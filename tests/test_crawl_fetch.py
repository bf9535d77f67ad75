"""Fetching a crawl's file through a real HTTP server with faults (issue 65): throttling waited out with jittered
back-off, a refusal stopping at once, a cut or stalled transfer resumed from its last byte, a killed fetch resumed
without fetching again what it had, a file damaged at the source reported missing; the file written only whole."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from datapipe.crawl.fetch import Missing, fetch
from datapipe.crawl.policy import FetchPolicy
from tests.conftest import CORPORA
from tests.crawl_server import CrawlServer

NAME = "/crawl-data/CC-MAIN-2024-10/segments/1707947473347.0/warc/CC-MAIN-20240220211055-20240221001055-00000.warc.gz"
FAST = FetchPolicy(base_s=0.001, cap_s=0.01, timeout_s=2.0, attempts=8)  # the real limits, in milliseconds


@pytest.fixture
def crawl(tmp_path: Path):
    root = tmp_path / "bucket"
    (root / NAME.lstrip("/")).parent.mkdir(parents=True)
    shutil.copy(
        CORPORA / "crawl" / "docs-00000.warc.gz", root / NAME.lstrip("/")
    )  # a real WARC file, gzipped
    with CrawlServer(root) as server:
        yield server, (root / NAME.lstrip("/")).read_bytes(), tmp_path / "got.warc.gz"


def _fetch(server: CrawlServer, dest: Path, policy: FetchPolicy = FAST, waits: list[float] | None = None):
    return fetch(
        server.url + NAME,
        str(dest),
        policy,
        rng=random.Random(0),
        sleep=(waits if waits is not None else []).append,
    )


def test_a_file_is_fetched_whole_with_a_user_agent(crawl) -> None:
    server, data, dest = crawl
    got = _fetch(server, dest)
    assert dest.read_bytes() == data and not Path(str(dest) + ".part").exists()
    assert (got.size, got.requests, got.throttled, got.resumed) == (len(data), 1, 0, 0)
    assert server.requests == [(NAME, None)]


def test_throttling_is_waited_out_with_jittered_back_off(crawl) -> None:
    server, data, dest = crawl
    server.faults[NAME] = ["503", "slowdown", "429", "500"]
    waits: list[float] = []
    got = _fetch(server, dest, waits=waits)
    assert dest.read_bytes() == data
    assert got.throttled == 4 and got.requests == 5 and len(waits) == 4
    assert all(0 <= w <= min(FAST.cap_s, FAST.base_s * 2**k) for k, w in enumerate(waits))


@pytest.mark.parametrize("status", ["403", "404"])
def test_a_refusal_or_an_absent_file_stops_at_once(crawl, status: str) -> None:
    server, _, dest = crawl
    server.faults[NAME] = [status]
    with pytest.raises(Missing, match=f"00000.warc.gz: HTTP {status} .*not retried"):
        _fetch(server, dest)
    assert len(server.requests) == 1 and not dest.exists()


def test_a_cut_connection_resumes_from_the_last_byte(crawl) -> None:
    server, data, dest = crawl
    server.faults[NAME] = ["cut:100000", "cut:50000"]
    got = _fetch(server, dest)
    assert dest.read_bytes() == data
    assert got.resumed == 2 and [r for _, r in server.requests] == [None, "bytes=100000-", "bytes=150000-"]


def test_a_stalled_read_is_a_retry(crawl) -> None:
    server, data, dest = crawl
    server.faults[NAME] = ["stall:30"]
    got = _fetch(server, dest, FetchPolicy(base_s=0.001, cap_s=0.01, timeout_s=0.5, attempts=6))
    # the first request stalls past the timeout; a busy machine may stall a later one too, never the result
    assert dest.read_bytes() == data and got.requests >= 2 and server.requests[0] == (NAME, None)


def test_a_server_that_ignores_ranges_is_read_again_from_the_start(crawl) -> None:
    server, data, dest = crawl
    server.faults[NAME] = ["cut:70000", "norange"]
    got = _fetch(server, dest)
    assert dest.read_bytes() == data and got.resumed == 0 and got.requests == 2


def test_a_killed_fetch_resumes_without_fetching_again(crawl) -> None:
    server, data, dest = crawl
    Path(str(dest) + ".part").write_bytes(data[:200_000])  # what a killed build left
    got = _fetch(server, dest)
    assert dest.read_bytes() == data and server.requests == [(NAME, "bytes=200000-")] and got.resumed == 1


def test_a_file_still_failing_is_reported_missing(crawl) -> None:
    server, _, dest = crawl
    server.faults[NAME] = ["503"] * 20
    with pytest.raises(Missing, match="00000.warc.gz: missing after 8 requests .*last: HTTP 503"):
        _fetch(server, dest)
    assert not dest.exists()


def test_a_file_damaged_at_the_source_is_missing_not_retried(crawl, tmp_path: Path) -> None:
    server, data, dest = crawl
    (server.root / NAME.lstrip("/")).write_bytes(data[:-10])  # served whole, but its last gzip member is cut
    with pytest.raises(Missing, match="ends inside a gzip member"):
        _fetch(server, dest)
    assert len(server.requests) == 1 and not dest.exists() and not Path(str(dest) + ".part").exists()
