"""Fetch one file of a crawl whole: politely (:class:`~datapipe.crawl.policy.FetchPolicy`), resumably, checked.

The file is streamed into ``<dest>.part`` and renamed to ``dest`` only once it is whole: its length is the
server's (``Content-Length``, or the total of ``Content-Range``) and every gzip member in it is complete. A transfer
that breaks (a dropped connection, a body cut short, a read that stalls past the policy's timeout) is resumed with
an HTTP range request from the last byte written, after the policy's back-off; a server that answers a range with
the whole file (200) is read from the start again. A ``.part`` left by a killed build is resumed the same way, so
a restarted build fetches nothing twice. Throttling (503, 429, S3's ``SlowDown``) is waited out with jittered
back-off; a refusal (403) or an absent file (404) stops at once; a file still not had after the policy's attempts
or its longest wait is reported missing (:class:`Missing`), never skipped silently.

Two transports, one loop: ``http(s)://`` through urllib (one GET at a time per file, a ``Range`` header and a
streamed body are all this needs, and the standard library keeps the transport's failures plain to classify), and
any other URL through fsspec (``s3://commoncrawl/`` with credentials and ``s3fs``, a mounted mirror, a local
folder), resumed by seeking to the last byte written. Both follow the same policy, checks and rename.
"""

from __future__ import annotations

import os
import random
import re
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from datapipe.crawl.policy import OK, RETRY, RETRY_STATUSES, FetchPolicy
from datapipe.errors import DatapipeError
from datapipe.io import fs

CHUNK = 1 << 20
_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


class Missing(DatapipeError):
    """A file that could not be had: refused, absent, damaged at the source, or still failing after the policy's
    attempts. The message names the URL and why."""


@dataclass
class Fetched:
    """What fetching one file took: its size, the requests made, how many answers asked to wait (429, 5xx, S3's
    ``SlowDown``), how many transfers resumed from a byte past 0, and the seconds spent waiting in back-off."""

    url: str
    size: int = 0
    requests: int = 0
    throttled: int = 0
    resumed: int = 0
    waited_s: float = 0.0


class _Broken(Exception):
    """The transfer broke after some bytes were written (resume from there)."""


def fetch(
    url: str,
    dest: str,
    policy: FetchPolicy,
    *,
    rng: random.Random | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Fetched:
    """Fetch ``url`` into the local file ``dest`` (see the module's docstring); raise :class:`Missing` when it
    cannot be had. ``rng`` jitters the back-off (seeded per file by the caller for a reproducible schedule)."""
    rng = rng or random.Random(url)
    part = dest + ".part"
    done = Fetched(url)
    attempt = 0
    try_once = _try if url.startswith(("http://", "https://")) else _try_fsspec
    while True:
        have = os.path.getsize(part) if os.path.exists(part) else 0
        status, why = try_once(url, part, have, policy, done)
        if status == OK:
            _check_gzip(part, url)
            os.replace(part, dest)
            done.size = os.path.getsize(dest)
            return done
        if attempt + 1 >= policy.attempts or done.waited_s >= policy.give_up_s:
            raise Missing(
                f"{url}: missing after {done.requests} requests and {done.waited_s:.0f} s of back-off (last: {why})"
            )
        wait = policy.wait(attempt, rng)
        sleep(wait)
        done.waited_s += wait
        attempt += 1


def _try(url: str, part: str, have: int, policy: FetchPolicy, done: Fetched) -> tuple[str, str]:
    """One request: (``ok``, "") when the part file is now whole, else (``retry``, why); raises :class:`Missing` on
    an answer that stops."""
    # urllib and http.client (~0.013 s) are imported where a file is fetched: the extract stage imports this module,
    # and with it every build's local-engine fork server, whose import of the workers' stack is the build's critical
    # path at its start, for a crawl source only
    import http.client
    import urllib.error
    import urllib.request

    headers = {"User-Agent": policy.user_agent}
    if have:
        headers["Range"] = f"bytes={have}-"
    done.requests += 1
    try:
        response = urllib.request.urlopen(
            urllib.request.Request(url, headers=headers), timeout=policy.timeout_s
        )
    except urllib.error.HTTPError as e:
        body = e.read(512) if e.fp is not None else b""
        if policy.verdict(e.code, body) == RETRY:
            done.throttled += e.code in RETRY_STATUSES or b"SlowDown" in body
            return RETRY, f"HTTP {e.code}"
        if e.code == 416 and have:  # the part file is longer than the file: start again
            os.remove(part)
            return RETRY, "HTTP 416 on resume"
        raise Missing(f"{url}: HTTP {e.code} {e.reason} (not retried: the file is refused or absent)") from e
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:  # refused or dropped, timed out
        return RETRY, f"{type(e).__name__}: {getattr(e, 'reason', e)}"
    with response:
        if response.status == 206:
            m = _RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
            if m is None or int(m.group(1)) != have:
                os.remove(part)  # an answer for other bytes than asked: trust none of it
                return RETRY, f"a range answer for other bytes ({response.headers.get('Content-Range')!r})"
            total = int(m.group(3)) if m.group(3) != "*" else None
            mode = "ab"
            done.resumed += 1
        else:
            length = response.headers.get("Content-Length")
            total = int(length) if length is not None and length.isdigit() else None
            mode, have = "wb", 0  # the whole file (a server that ignores ranges sends it all again)
        try:
            with open(part, mode) as f:
                while chunk := response.read(CHUNK):
                    f.write(chunk)
                    have += len(chunk)
        except (OSError, ValueError, http.client.HTTPException) as e:  # broke or stalled mid-body
            return RETRY, f"the transfer broke at byte {have} ({type(e).__name__})"
    if total is None:
        raise Missing(f"{url}: the server gave no length, so a whole file cannot be told from a cut one")
    return _whole(have, total, part)


def _whole(have: int, total: int, part: str) -> tuple[str, str]:
    """(``ok``, "") when the part file holds exactly the ``total`` bytes the source says the file has."""
    if have < total:
        return RETRY, f"the body ended at byte {have} of {total}"
    if have > total:
        os.remove(part)
        return RETRY, f"the body ran to byte {have}, past the {total} the server said"
    return OK, ""


def _try_fsspec(url: str, part: str, have: int, policy: FetchPolicy, done: Fetched) -> tuple[str, str]:
    """One read of a file through fsspec (an object store, a mount, a local folder), from byte ``have`` on: a file
    not there or refused stops (:class:`Missing`); throttling (S3's ``SlowDown``, a 503) and any other failure of
    the transport is a retry."""
    done.requests += 1
    try:
        total = fs.size(url)
        with fs.fsspec_open(url, "rb") as src, open(part, "ab" if have else "wb") as out:
            if have:
                src.seek(have)
                done.resumed += 1
            while chunk := src.read(CHUNK):
                out.write(chunk)
                have += len(chunk)
    except (FileNotFoundError, PermissionError, IsADirectoryError) as e:
        raise Missing(f"{url}: {type(e).__name__}: {e} (not retried: the file is refused or absent)") from e
    except ImportError as e:  # fsspec names the package its protocol needs (s3fs for s3://)
        raise DatapipeError(f"{url}: {e} (for s3://: pip install 'datapipe[s3]')") from e
    except Exception as e:  # noqa: BLE001 - every other failure of a transport (each raises its own) is a retry
        said = str(e)
        done.throttled += "SlowDown" in said or "503" in said or "429" in said
        return RETRY, f"{type(e).__name__}: {said[:200]}"
    return _whole(have, total, part)


def _check_gzip(path: str, url: str) -> None:
    """Every gzip member in the file is complete (a WARC or WET file is a series of members, one a record); a file
    that ends inside a member or holds bytes that are no gzip, whole as the server sends it, is damaged at the
    source: :class:`Missing`, not retried. Inflated in steps of at most 16 MiB, whatever a member holds."""
    member: zlib._Decompress | None = None
    try:
        with open(path, "rb") as f:
            if f.read(2) != b"\x1f\x8b":
                return  # not gzip: nothing to check
            f.seek(0)
            while chunk := f.read(CHUNK):
                data = chunk
                while data:
                    if member is None:
                        member = zlib.decompressobj(zlib.MAX_WBITS | 16)
                    member.decompress(data, 1 << 24)
                    if member.eof:
                        data, member = member.unused_data, None
                    else:
                        data = member.unconsumed_tail
    except zlib.error as e:
        os.remove(path)
        raise Missing(f"{url}: the file as served is not whole gzip ({e}; damaged at the source)") from e
    if member is not None:
        os.remove(path)
        raise Missing(f"{url}: the file as served ends inside a gzip member (damaged at the source)")
