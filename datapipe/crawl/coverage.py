"""What reading a Common Crawl source took, and whether the build may go on: counted per file where the file is
read (the extract stage's shard), summed over the stage, written into its ``stage.json`` (``crawl``), shown by the
report and the browser.

Per shard, in the stage's counters (so that shards merge by addition, like every other count):
``crawl/files`` (1), ``crawl/fetched`` (1 when fetched by this run, 0 when a whole copy a killed run left was read),
``crawl/requests``, ``crawl/retried`` (requests past a file's first), ``crawl/throttled`` (answers that asked to
wait: 429, 5xx, ``SlowDown``), ``crawl/resumed`` (transfers resumed from a byte past 0), ``crawl/bytes``,
``crawl/backoff_ms`` and ``crawl/missing`` (1 for a file that could not be had: its shard holds no documents and
a rerun tries it again).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from datapipe.crawl.fetch import Fetched
from datapipe.errors import DatapipeError

PREFIX = "crawl/"


class MissingFiles(DatapipeError):
    """More files of a Common Crawl source are missing than its mixture allows."""


def count(counters: Counter, got: Fetched | None, *, fetched: bool) -> None:
    """Count one file: ``got`` what fetching it took (None: missing), ``fetched`` whether this run fetched it."""
    counters[PREFIX + "files"] += 1
    if got is None:
        counters[PREFIX + "missing"] += 1
        return
    counters[PREFIX + "fetched"] += fetched
    counters[PREFIX + "requests"] += got.requests
    counters[PREFIX + "retried"] += max(0, got.requests - 1)
    counters[PREFIX + "throttled"] += got.throttled
    counters[PREFIX + "resumed"] += got.resumed
    counters[PREFIX + "bytes"] += got.size
    counters[PREFIX + "backoff_ms"] += round(got.waited_s * 1000)


def coverage(
    crawl: Mapping[str, object],
    counters: Mapping[str, int],
    missing: list[dict[str, str]],
    allow_missing: int,
    records: int,
) -> dict[str, object]:
    """``stage.json``'s ``crawl``: the dump, kind and sample (``crawl``), files planned, fetched, retried,
    throttled, resumed and missing (each missing file named, with why), records and bytes read."""
    c = {k.removeprefix(PREFIX): int(v) for k, v in counters.items() if k.startswith(PREFIX)}
    return {
        **crawl,
        "planned": c.get("files", 0),
        "fetched": c.get("fetched", 0),
        "requests": c.get("requests", 0),
        "retried": c.get("retried", 0),
        "throttled": c.get("throttled", 0),
        "resumed": c.get("resumed", 0),
        "backoff_s": round(c.get("backoff_ms", 0) / 1000, 3),
        "bytes": c.get("bytes", 0),
        "records": records,
        "missing": len(missing),
        "missing_files": missing,
        "allow_missing": allow_missing,
    }


def check(cov: Mapping[str, Any], source: str) -> None:
    """Raise :class:`MissingFiles` when more files are missing than allowed, naming them (the first five)."""
    missing = cov["missing_files"]
    if len(missing) <= cov["allow_missing"]:
        return
    named = "; ".join(f"{m['file']} ({m['why']})" for m in missing[:5])
    more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
    raise MissingFiles(
        f"{source}: {len(missing)} of {cov['planned']} crawl file(s) missing, {cov['allow_missing']} allowed "
        f"(commoncrawl.allow_missing): {named}{more}; a rerun tries them again"
    )
