"""An HTTP response body as the server meant it: transfer framing and content codings undone, within a size cap.

Crawlers store the body as it came over the wire, so it may still carry its framing (``Transfer-Encoding:
chunked``: chunk sizes in hex between the pieces) and its content codings (gzip, deflate, br, zstd). Both are
undone here, in that order, and never beyond ``limit`` bytes: a 2 MB gzip body that inflates to 2 GiB is stopped at
the cap (:class:`TooLarge`) instead of being held whole.

Why our own chunked decoder: FastWARC's ``ChunkedReader`` rejects chunk extensions (``5;name=value``, valid HTTP)
and returns a body that lacks its last (zero-size) chunk as if it were whole, and such a body is a page cut short.
The rules (RFC 9112, 7.1): a hex size, optional extensions after ``;``, CRLF, the data, CRLF; a zero size ends the
body (trailer fields after it are ignored). A body that does not start with a chunk header was stored de-chunked
under the original header (some crawlers do that) and is used as it is.
"""

from __future__ import annotations

import io
import re
import zlib

import zstandard
from fastwarc.stream_io import BrotliReader

_CHUNK = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?\r?\n")
_ZSTD_STEP = 1 << 12  # compressed bytes per zstd step: its output stays under ~128 MiB, whatever the ratio
_BR_STEP = 1 << 20  # decoded bytes per brotli step


class TooLarge(Exception):
    """The body is larger than the cap once decoded."""


class Truncated(Exception):
    """The body ends before its framing says it does."""


def dechunk(body: bytes, limit: int) -> bytes:
    """The data of a chunked body. Raises :class:`Truncated` when a chunk or the last chunk is missing, and
    :class:`TooLarge` past ``limit``; a body that does not start with a chunk header is returned as it is."""
    out: list[bytes] = []
    size = pos = 0
    while True:
        m = _CHUNK.match(body, pos)
        if m is None:
            if pos == 0:
                return body  # not chunked after all
            raise Truncated(f"no chunk header at byte {pos}")
        n = int(m.group(1), 16)
        pos = m.end()
        if n == 0:
            return b"".join(out)
        if pos + n > len(body):
            raise Truncated(f"a chunk of {n} bytes at byte {pos} runs past the body's end")
        size += n
        if size > limit:
            raise TooLarge(f"over {limit} bytes")
        out.append(body[pos : pos + n])
        pos += n
        if body.startswith(b"\r\n", pos):
            pos += 2
        elif body.startswith(b"\n", pos):
            pos += 1
        elif pos < len(body):
            raise Truncated(f"chunk data at byte {pos - n} is not followed by a line end")


def _inflate(body: bytes, wbits: int, limit: int) -> bytes:
    d = zlib.decompressobj(wbits=wbits)
    out = d.decompress(body, limit + 1)
    if len(out) > limit:
        raise TooLarge(f"over {limit} bytes")
    if not d.eof:
        raise zlib.error("incomplete or truncated stream")
    return out


def _unzstd(body: bytes, limit: int) -> bytes:
    d = zstandard.ZstdDecompressor().decompressobj()
    out: list[bytes] = []
    size = 0
    for i in range(0, len(body), _ZSTD_STEP):
        piece = d.decompress(body[i : i + _ZSTD_STEP])
        size += len(piece)
        if size > limit:
            raise TooLarge(f"over {limit} bytes")
        out.append(piece)
        if d.eof:
            break
    if not d.eof:
        raise zstandard.ZstdError("the zstd frame ends early")
    return b"".join(out)


def undo_coding(body: bytes, coding: str, limit: int) -> bytes:
    """``body`` without one content coding. Raises :class:`TooLarge` past ``limit`` and the codec's error on
    corrupt or truncated data; an unknown coding name (``identity``, ``utf-8``, ``none``) leaves the body as it is."""
    if coding in ("gzip", "x-gzip"):
        return _inflate(body, 47, limit)  # 47: a gzip or zlib header, whichever is there
    if coding == "deflate":  # zlib-wrapped by the standard, raw deflate from some servers
        return _inflate(body, 47 if body[:1] == b"\x78" else -15, limit)
    if coding == "br":  # read in steps: FastWARC's reader allocates the size asked for up front
        reader = BrotliReader(io.BytesIO(body))
        out: list[bytes] = []
        size = 0
        while piece := reader.read(_BR_STEP):
            size += len(piece)
            if size > limit:
                raise TooLarge(f"over {limit} bytes")
            out.append(piece)
        return b"".join(out)
    if coding == "zstd":
        return _unzstd(body, limit)
    return body
