"""A Common Crawl source in a build: its listing fetched once and stored with the build, the files its sample
names, each of them fetched into the build under the one policy, and the plan a dry run prints.

Where things lie (``<store>`` is ``<output>/<source>/crawl/``):

- ``<store>/<kind>.paths.gz``: the dump's listing as fetched, once; a later build (a rerun, a larger sample) reads
  it from there, so the files a build names never depend on a second fetch, and a reader of the build can check them;
- ``<store>/files/<file>``: a file being read (``.part`` while it comes, renamed when whole); the extract stage
  deletes it once its shard is committed, unless ``keep_files`` (then it is a local cache of the sample);
- ``<store>/files/.slots/<i>``: lock files, one per transfer the policy allows in flight: every process of a build
  on one machine takes one before it fetches (``fcntl`` locks, released by the kernel when a process dies).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import math
import os
import random
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from datapipe.crawl.fetch import Fetched, Missing, fetch
from datapipe.crawl.listing import CrawlFile, listing_path, parse_listing
from datapipe.crawl.policy import RETRY, FetchPolicy
from datapipe.crawl.sample import Sample, sample
from datapipe.io import fs

STORE = "crawl"  # <output>/<source>/crawl/
FILES = "files"


@dataclass(frozen=True)
class CrawlPlan:
    """The files a build reads from a dump: the sample of the listing, with where the listing came from."""

    base_url: str
    listing: str  # where it is stored (or, in a dry run, the URL it was read from)
    listing_sha256: str
    listed: int  # files the listing names
    files: tuple[CrawlFile, ...]

    def url(self, f: CrawlFile) -> str:
        return self.base_url + f.path


def store_dir(output: str, source: str) -> str:
    return fs.join(output, source, STORE)


def plan_files(
    crawl: str,
    kind: str,
    how: Sample,
    base_url: str,
    policy: FetchPolicy,
    store: str | None,
) -> CrawlPlan:
    """The sampled files of ``crawl``'s listing of ``kind``. The listing is read from ``store`` when an earlier
    build stored it there, else fetched (under ``policy``) and stored there; ``store`` None (a dry run, which
    writes nothing) reads it into a temporary file. A listing that cannot be had is :class:`Missing`."""
    rel = listing_path(crawl, kind)
    url = base_url + rel
    if store is not None:
        stored = fs.join(store, rel.rsplit("/", 1)[-1])
        if not fs.exists(stored):
            fs.makedirs(store)
            _fetch_to(url, stored, policy)
        data, where = fs.read_bytes(stored), stored
    else:
        with tempfile.TemporaryDirectory(prefix="datapipe-listing-") as tmp:
            local = os.path.join(tmp, "listing.paths.gz")
            _fetch_to(url, local, policy)
            with open(local, "rb") as f:
                data = f.read()
        where = url
    listed = parse_listing(data, crawl, kind, where)
    return CrawlPlan(
        base_url, where, hashlib.sha256(data).hexdigest(), len(listed), tuple(sample(listed, how))
    )


def _fetch_to(url: str, dest: str, policy: FetchPolicy) -> Fetched:
    """``fetch`` into a local path, or through a local temporary file into any other URL (a bucket)."""
    if fs.is_local(dest):
        return fetch(url, fs.local_path(dest), policy)
    with tempfile.TemporaryDirectory(prefix="datapipe-fetch-") as tmp:
        local = os.path.join(tmp, "file")
        got = fetch(url, local, policy)
        with open(local, "rb") as f:
            fs.write_bytes_atomic(dest, f.read())
        return got


def files_dir(output_of_source: str) -> str:
    """Where a source's crawl files are fetched to: under the build when the build is on this machine, else (a
    bucket) in a temporary folder of this machine named for the source's folder."""
    folder = fs.join(output_of_source, STORE, FILES)
    if fs.is_local(folder):
        return fs.local_path(folder)
    digest = hashlib.sha256(folder.encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"datapipe-crawl-{digest}")


def fetch_into(url: str, folder: str, policy: FetchPolicy) -> tuple[str, Fetched]:
    """Fetch the crawl file ``url`` into ``folder`` (a local folder) whole, holding one of the policy's transfer
    slots while it comes; a copy already whole there (a killed build's) is used as it is. Returns its local path
    and what fetching it took; raises :class:`Missing`."""
    os.makedirs(folder, exist_ok=True)
    dest = os.path.join(folder, url.rsplit("/", 1)[-1])
    if os.path.exists(dest):
        return dest, Fetched(url, size=os.path.getsize(dest))
    with _slot(folder, policy.in_flight):
        return dest, fetch(url, dest, policy, rng=random.Random(url))


@contextlib.contextmanager
def _slot(folder: str, n: int) -> Iterator[None]:
    """One of ``n`` transfer slots of ``folder``, shared by every process of this machine: a free one if any, else
    wait for one (a process's own slot, by its id, so that waiters spread over them)."""
    slots = os.path.join(folder, ".slots")
    os.makedirs(slots, exist_ok=True)
    order = list(range(n))
    random.Random(os.getpid()).shuffle(order)
    for i in order:
        fd = os.open(os.path.join(slots, str(i)), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        break
    else:
        fd = os.open(os.path.join(slots, str(order[0])), os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        os.close(fd)  # releases the lock


@dataclass(frozen=True)
class FetchEstimate:
    """What fetching a plan's files takes: files, the bytes of those whose size was asked (``sized`` of them; the
    rest estimated at their mean), and the time at the policy's transfers in flight and assumed throughput."""

    files: int
    sized: int
    bytes: int
    seconds: float


SIZE_ASKED = (
    100  # a dry run asks the size of at most this many files (one HEAD request each), spread over the plan
)


def estimate_fetch(urls: list[str], policy: FetchPolicy) -> FetchEstimate:
    """Ask the size of up to :data:`SIZE_ASKED` of the files (spread over them, ``in_flight`` at a time) and
    estimate the whole: bytes, and seconds = bytes / (in_flight x mb_per_s)."""
    files = urls
    if not files:
        return FetchEstimate(0, 0, 0, 0.0)
    step = max(1, math.ceil(len(files) / SIZE_ASKED))
    asked = files[::step]
    with ThreadPoolExecutor(max_workers=policy.in_flight) as pool:
        sizes = list(pool.map(lambda u: _size(u, policy), asked))
    total = round(sum(sizes) * len(files) / len(sizes))
    seconds = total / (policy.in_flight * policy.mb_per_s * 1e6)
    return FetchEstimate(len(files), len(sizes), total, seconds)


def _size(url: str, policy: FetchPolicy) -> int:
    """A file's size from the source (an HTTP HEAD, or fsspec's), retried under the policy's back-off."""
    import urllib.error  # here, not at the top: see datapipe.crawl.fetch._try
    import urllib.request

    rng = random.Random(url)
    for attempt in range(policy.attempts):
        try:
            if not url.startswith(("http://", "https://")):
                return fs.size(url)
            request = urllib.request.Request(url, method="HEAD", headers={"User-Agent": policy.user_agent})
            with urllib.request.urlopen(request, timeout=policy.timeout_s) as r:
                return int(r.headers["Content-Length"])
        except urllib.error.HTTPError as e:
            if policy.verdict(e.code) != RETRY:
                raise Missing(f"{url}: HTTP {e.code} {e.reason}") from e
        except FileNotFoundError as e:
            raise Missing(f"{url}: no such file") from e
        except (OSError, ValueError, KeyError, TypeError):
            pass
        if attempt + 1 < policy.attempts:
            time.sleep(policy.wait(attempt, rng))
    raise Missing(f"{url}: its size could not be had after {policy.attempts} tries")
