"""A Common Crawl dump's name and listing.

Common Crawl publishes, per dump, one listing per kind of file: ``crawl-data/<crawl>/<kind>.paths.gz``, a gzipped
text file of paths relative to the bucket, one a line, such as
``crawl-data/CC-MAIN-2024-10/segments/1707947473347.0/warc/CC-MAIN-20240220211055-20240221001055-00000.warc.gz``.
A dump is cut into segments (about a hundred) and each segment into files of its kinds (WARC: the responses; WET:
their plain text). The segment is what a sample is stratified on (:mod:`datapipe.crawl.sample`): the segments were
crawled one after the other, so "the first N files" is the first days of a crawl, not a sample of it.

A listing is checked line by line before anything is planned: a line that is not a path of this dump and kind is
an error naming the listing, the line and what was expected, never a file silently skipped.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass

from datapipe.errors import DatapipeError

# CC-MAIN-2024-10; the main crawls since 2013 are named so (the year and the week the crawl began)
CRAWL = re.compile(r"CC-MAIN-\d{4}-\d{2}")
KINDS = {"warc": (".warc.gz",), "wet": (".warc.wet.gz",)}  # what a listing's files end with, per kind
# the folder of a file of each kind inside its segment
_FOLDER = {"warc": "warc", "wet": "wet"}


class ListingError(DatapipeError):
    """A listing, or a line of it, is not what Common Crawl publishes for the dump and kind asked for."""


@dataclass(frozen=True, order=True)
class CrawlFile:
    """One file of a dump: its path relative to the bucket (``crawl-data/...``) and its segment's name."""

    path: str
    segment: str

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def check_crawl(crawl: str, where: str) -> str:
    """``crawl`` when it names a dump (``CC-MAIN-2024-10``); else a :class:`ListingError` naming ``where``."""
    if not isinstance(crawl, str) or not CRAWL.fullmatch(crawl):
        raise ListingError(
            f"{where}: expected a Common Crawl dump name such as CC-MAIN-2024-10, got {crawl!r}"
        )
    return crawl


def check_kind(kind: str, where: str) -> str:
    if kind not in KINDS:
        raise ListingError(f"{where}: expected one of {', '.join(KINDS)}, got {kind!r}")
    return kind


def listing_path(crawl: str, kind: str) -> str:
    """The listing's path relative to the bucket: ``crawl-data/<crawl>/<kind>.paths.gz``."""
    return f"crawl-data/{check_crawl(crawl, 'crawl')}/{check_kind(kind, 'kind')}.paths.gz"


def parse_listing(data: bytes, crawl: str, kind: str, source: str = "") -> list[CrawlFile]:
    """The files a listing names (gzipped, as published, or already inflated), in its order. Every line must be
    ``crawl-data/<crawl>/segments/<segment>/<kind folder>/<file of that kind>``, and no path may repeat; ``source``
    (the listing's URL or file) names it in an error."""
    where = source or listing_path(crawl, kind)
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            raise ListingError(f"{where}: the listing is not a complete gzip file ({e})") from e
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as e:
        raise ListingError(f"{where}: byte {e.start}: a listing holds ASCII paths only") from e
    prefix = f"crawl-data/{crawl}/segments/"
    ends = KINDS[check_kind(kind, "kind")]
    out: list[CrawlFile] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        path = line.strip()
        if not path:
            continue
        parts = path[len(prefix) :].split("/") if path.startswith(prefix) else []
        if len(parts) != 3 or parts[1] != _FOLDER[kind] or not parts[0] or not parts[2].endswith(ends):
            raise ListingError(
                f"{where}: line {number}: expected {prefix}<segment>/{_FOLDER[kind]}/<file>{ends[0]}, "
                f"got {path[:120]!r}"
            )
        if path in seen:
            raise ListingError(f"{where}: line {number}: {path} is listed twice")
        seen.add(path)
        out.append(CrawlFile(path, parts[0]))
    if not out:
        raise ListingError(f"{where}: the listing names no file")
    return out
