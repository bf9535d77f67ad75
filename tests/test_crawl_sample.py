"""A Common Crawl dump's listing and the sample a build reads of it (issue 65): checked line by line,
deterministic in the seed, stratified across segments, nested; and the fetch policy's verdicts and back-off."""

from __future__ import annotations

import gzip
import random
from collections import Counter

import pytest

from datapipe.crawl.listing import CrawlFile, ListingError, listing_path, parse_listing
from datapipe.crawl.policy import OK, RETRY, STOP, FetchPolicy
from datapipe.crawl.sample import Sample, expected, sample
from datapipe.errors import DatapipeError

CRAWL = "CC-MAIN-2024-10"


def _listing(segments: dict[str, int], kind: str = "warc") -> bytes:
    """A listing as Common Crawl publishes it (gzipped), with ``n`` files in each segment; segments uneven."""
    end = ".warc.gz" if kind == "warc" else ".warc.wet.gz"
    lines = []
    for seg, n in segments.items():  # file names are numbered through the dump, as Common Crawl's
        for _ in range(n):
            lines.append(
                f"crawl-data/{CRAWL}/segments/{seg}/{kind}/CC-MAIN-20240220211055-20240221001055-{len(lines):05d}{end}"
            )
    return gzip.compress(("\n".join(lines) + "\n").encode())


SEGMENTS = {
    f"1707947{473347 + 97 * i}.{i % 3}": 40 + 7 * (i % 5) for i in range(12)
}  # 12 segments, 40-68 files


def _files() -> list[CrawlFile]:
    return parse_listing(_listing(SEGMENTS), CRAWL, "warc")


def test_a_listing_is_read_in_order_with_its_segments() -> None:
    files = _files()
    assert len(files) == sum(SEGMENTS.values())
    assert Counter(f.segment for f in files) == Counter(SEGMENTS)
    assert files[0].path.startswith(f"crawl-data/{CRAWL}/segments/") and files[0].name.endswith(".warc.gz")
    assert listing_path(CRAWL, "wet") == f"crawl-data/{CRAWL}/wet.paths.gz"
    wet = parse_listing(_listing({"1707947473347.0": 3}, "wet"), CRAWL, "wet")
    assert len(wet) == 3


@pytest.mark.parametrize(
    "data,message",
    [
        (b"crawl-data/CC-MAIN-2024-10/segments/1.0/warc/x.warc.gz\nnot a path\n", "line 2: expected"),
        (b"crawl-data/CC-MAIN-2023-50/segments/1.0/warc/x.warc.gz\n", "line 1: expected"),  # another dump
        (b"crawl-data/CC-MAIN-2024-10/segments/1.0/wet/x.warc.wet.gz\n", "line 1: expected"),  # another kind
        (b"crawl-data/CC-MAIN-2024-10/segments/1.0/warc/x.warc.gz\n" * 2, "line 2: .* listed twice"),
        (b"\n\n", "the listing names no file"),
        (
            gzip.compress(b"crawl-data/CC-MAIN-2024-10/segments/1.0/warc/x.warc.gz\n")[:-6],
            "the listing is not a complete gzip",
        ),
    ],
    ids=["not a path", "another dump", "another kind", "twice", "empty", "cut gzip"],
)
def test_a_bad_listing_is_an_error_naming_the_line(data: bytes, message: str) -> None:
    with pytest.raises(ListingError, match=f"warc.paths.gz: {message}"):
        parse_listing(
            data, CRAWL, "warc", "https://data.commoncrawl.org/crawl-data/CC-MAIN-2024-10/warc.paths.gz"
        )


def test_a_bad_dump_name_or_kind_is_refused() -> None:
    with pytest.raises(ListingError, match="CC-MAIN-2024-10, got 'CC-MAIN-24-10'"):
        listing_path("CC-MAIN-24-10", "warc")
    with pytest.raises(ListingError, match="expected one of warc, wet, got 'wat'"):
        listing_path(CRAWL, "wat")


def test_the_sample_is_deterministic_in_the_seed_and_not_the_listing_order() -> None:
    files = _files()
    a = sample(files, Sample(fraction=0.1, seed=7))
    assert a == sample(list(reversed(files)), Sample(fraction=0.1, seed=7))[::-1]
    assert a == sample(files, Sample(fraction=0.1, seed=7))
    assert a != sample(files, Sample(fraction=0.1, seed=8))
    assert a != sorted(files)[: len(a)]  # not "the first N files"


def test_samples_are_nested() -> None:
    files = _files()
    previous: set[str] = set()
    for fraction in (0.01, 0.05, 0.1, 0.25, 0.5, 1.0):
        now = {f.path for f in sample(files, Sample(fraction=fraction, seed=3))}
        assert previous <= now
        previous = now
    assert len(previous) == len(files)
    previous = set()
    for n in range(
        1, len(files) + 1, 7
    ):  # one file more at a time would be the same: the threshold only grows
        now = {f.path for f in sample(files, Sample(files=n, seed=3))}
        assert len(now) == n and previous <= now
        previous = now
    # a fraction's files are the N smallest keys for its size
    tenth = sample(files, Sample(fraction=0.1, seed=3))
    assert tenth == sample(files, Sample(files=len(tenth), seed=3))


@pytest.mark.parametrize(
    "how", [Sample(fraction=0.1, seed=1), Sample(fraction=0.33, seed=2), Sample(files=50, seed=5)]
)
def test_every_segment_is_sampled_in_proportion(how: Sample) -> None:
    files = _files()
    got = Counter(f.segment for f in sample(files, how))
    slack = 1.0 if how.fraction is not None else 2.0
    for segment, share in expected(files, how).items():
        assert abs(got[segment] - share) <= slack, (segment, got[segment], share)


def test_a_sample_larger_than_the_dump_or_malformed_is_refused() -> None:
    with pytest.raises(DatapipeError, match="10000 asked, the listing names"):
        sample(_files(), Sample(files=10_000))
    for bad in (
        {},
        {"files": 3, "fraction": 0.1},
        {"files": 0},
        {"fraction": 0.0},
        {"fraction": 1.5},
        {"files": True},
    ):
        with pytest.raises(DatapipeError, match="sample"):
            Sample(**bad)  # type: ignore[arg-type]


def test_the_policy_retries_throttling_and_stops_on_refusal() -> None:
    policy = FetchPolicy()
    assert (policy.in_flight, policy.base_s, policy.cap_s) == (
        10,
        1.0,
        3600.0,
    )  # Common Crawl's published limits
    assert [policy.verdict(s) for s in (200, 206, 503, 429, None, 403, 404)] == [
        OK,
        OK,
        RETRY,
        RETRY,
        RETRY,
        STOP,
        STOP,
    ]
    assert policy.verdict(400, b"<Error><Code>SlowDown</Code></Error>") == RETRY
    rng = random.Random(0)
    waits = [policy.wait(a, rng) for a in range(20)]
    assert all(0 <= w <= min(3600.0, 2.0**a) for a, w in enumerate(waits))
    assert max(policy.wait(30, rng) for _ in range(200)) > 1800  # up to an hour, jittered
    assert (
        len({round(policy.wait(5, rng), 6) for _ in range(50)}) == 50
    )  # clients throttled together spread out
    with pytest.raises(ValueError):
        FetchPolicy(base_s=10, cap_s=1)
