"""A folder of HTML pages as input (``format: html``): one document a file, for the extractor as a crawl's pages are.

Each ``.html`` / ``.htm`` file (optionally gzipped: ``.html.gz``) is one page. Its ``id`` and ``ref`` are its path
relative to the data root (a file is where its one document was read); its URL, in ``metadata.url`` (which the
learned extractor reads for the page's type), is the first line of a sidecar file beside it, ``<file>.url``, when
there is one, else the source's ``url_prefix`` followed by that relative path (without ``.gz``), else the path. The
page's bytes go to the extractor with no declared charset: it is detected (a ``<meta charset>``, else the bytes),
as for a WARC response that declares none. A page over the size cap is removed as ``read/too_large`` unread; a gzip
file that does not inflate is removed as ``read/corrupt_record``.
"""

from __future__ import annotations

import gzip
import io
import logging
import zlib
from collections.abc import Iterator
from typing import IO

from datapipe.errors import InputError
from datapipe.io import fs
from datapipe.io.shards import Shard
from datapipe.io.tally import ReadTally

log = logging.getLogger(__name__)

SUFFIXES = (".html", ".htm", ".xhtml", ".html.gz", ".htm.gz")
FILES_PER_SHARD = 256  # pages a shard reads (a bundle: see datapipe.io.shards.make_bundles)
SIDECAR = ".url"


def check_html(url: str, f: IO[bytes], _text_field: str) -> None:
    """A page's file is named as one (``.html``, ``.htm``, gzipped too) and, when gzipped, starts as gzip: a
    glob that caught other files is one line naming the file before any work."""
    if not url.lower().endswith(SUFFIXES):
        raise InputError(url, f"not an HTML page by its name (format html reads {', '.join(SUFFIXES)})")
    if url.lower().endswith(".gz") and f.read(2) != b"\x1f\x8b":
        raise InputError(url, "named .gz but not gzip")


def page_url(url: str, name: str, url_prefix: str) -> str:
    """A page's URL: its sidecar's first line, else ``url_prefix`` + its relative path (less a ``.gz``: the URL is
    the page's, not its compressed file's), else that path."""
    sidecar = url + SIDECAR
    if fs.exists(sidecar):
        line = fs.read_text(sidecar).strip().splitlines()
        if line and line[0].strip():
            return line[0].strip()
    page = name.removesuffix(".gz")
    return url_prefix + page if url_prefix else page


def read_html_files(
    shard: Shard, source: str, tally: ReadTally, max_html_bytes: int, url_prefix: str = ""
) -> Iterator[dict]:
    """The shard's pages, one record each: ``html`` (bytes) and ``charset`` (None) for the extractor."""
    for url, name in shard.files():
        tally.records += 1
        size = fs.size(url)
        if not url.lower().endswith(".gz") and size > max_html_bytes:
            log.warning("%s: %d bytes, over the cap of %d; removed unread", url, size, max_html_bytes)
            tally.unusable_record("read/too_large")
            continue
        raw = fs.read_bytes(url)
        tally.bytes += len(raw)
        data: bytes | None = raw
        if url.lower().endswith(".gz"):
            try:
                data = _inflate(raw, max_html_bytes)
            except (OSError, EOFError, zlib.error) as e:
                log.warning("%s: not whole gzip (%s); removed", url, e)
                tally.unusable_record("read/corrupt_record")
                continue
            if data is None:
                log.warning("%s: over the cap of %d bytes once inflated; removed", url, max_html_bytes)
                tally.unusable_record("read/too_large")
                continue
        yield {
            "id": name,
            "ref": name,
            "html": data,
            "charset": None,
            "source": source,
            "metadata": {"url": page_url(url, name, url_prefix), "file": name},
        }


def _inflate(data: bytes, limit: int) -> bytes | None:
    """The inflated bytes, or None past ``limit`` (never held whole beyond it)."""
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as g:
        out = g.read(limit + 1)
    return None if len(out) > limit else out
