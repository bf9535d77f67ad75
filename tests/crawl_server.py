"""A miniature Common Crawl for the tests: a real HTTP server on the loopback interface serving a folder, with
faults to order (issue 65). No test touches the internet.

``faults[path]`` is a list of what the next requests for ``path`` meet, one each, in order: ``"503"``, ``"429"``,
``"500"``, ``"403"``, ``"404"`` (that status), ``"slowdown"`` (503 with S3's ``SlowDown`` error document),
``"cut:N"`` (the headers promise the whole body; the connection closes after N bytes of it), ``"stall:S"`` (the
headers, then nothing for S seconds: a stalled read), ``"norange"`` (a range request answered with the whole file).
A request with no fault left is served properly, ranges included (``Range: bytes=N-``); ``HEAD`` answers a file's
length. ``requests`` records each GET's path and ``Range`` header.

:func:`build_crawl_tree` lays out a miniature dump (its listing, segments and WARC files) from real fixture WARCs.
"""

from __future__ import annotations

import gzip
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SLOWDOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)


class CrawlServer:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.faults: dict[str, list[str]] = {}
        self.requests: list[tuple[str, str | None]] = []
        self.release = threading.Event()  # set on stop: a stalled answer ends
        self._lock = threading.Lock()
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.crawl = self  # type: ignore[attr-defined]
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)

    def __enter__(self) -> CrawlServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()

    def next_fault(self, path: str, range_: str | None) -> str | None:
        with self._lock:
            self.requests.append((path, range_))
            queue = self.faults.get(path)
            return queue.pop(0) if queue else None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_HEAD(self) -> None:  # noqa: N802 (http.server's name)
        crawl: CrawlServer = self.server.crawl  # type: ignore[attr-defined]
        file = (crawl.root / self.path.split("?", 1)[0].lstrip("/")).resolve()
        if not file.is_file() or crawl.root.resolve() not in file.parents:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(file.stat().st_size))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        crawl: CrawlServer = self.server.crawl  # type: ignore[attr-defined]
        path = self.path.split("?", 1)[0]
        fault = crawl.next_fault(path, self.headers.get("Range"))
        if fault in ("503", "429", "500", "403", "404", "slowdown"):
            body = SLOWDOWN if fault == "slowdown" else b"no"
            self.send_response(503 if fault == "slowdown" else int(fault))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        file = (crawl.root / path.lstrip("/")).resolve()
        if not file.is_file() or crawl.root.resolve() not in file.parents:
            self.send_error(404)
            return
        data = file.read_bytes()
        start = 0
        range_ = self.headers.get("Range")
        if range_ and fault != "norange":
            start = int(range_.removeprefix("bytes=").split("-")[0])
            if start >= len(data):
                self.send_error(416)
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if fault and fault.startswith("cut:"):
            self.wfile.write(body[: int(fault[4:])])
            self.wfile.flush()
            self.close_connection = True
            return
        if fault and fault.startswith("stall:"):
            crawl.release.wait(float(fault[6:]))
            self.close_connection = True
            return
        self.wfile.write(body)


CRAWL = "CC-MAIN-2024-10"


def gzip_members(data: bytes) -> list[bytes]:
    """The gzip members of a file as they are (a WARC.gz holds one record a member)."""
    out = []
    while data:
        d = zlib.decompressobj(zlib.MAX_WBITS | 16)
        d.decompress(data)
        rest = d.unused_data
        out.append(data[: len(data) - len(rest)])
        data = rest
    return out


def build_crawl_tree(
    root: Path, warcs: list[Path], files: int, segments: int, crawl: str = CRAWL
) -> list[str]:
    """A miniature dump under ``root`` (``crawl-data/<crawl>/...``) as Common Crawl lays one out: the records of
    ``warcs`` cut, in their order and at record boundaries, into ``files`` WARC files spread over ``segments``
    segments (file ``i`` in segment ``i % segments``), and ``warc.paths.gz`` listing them. Returns the paths."""
    members = [m for w in warcs for m in gzip_members(w.read_bytes())]
    if len(members) < files:
        raise ValueError(f"{len(members)} records cannot make {files} files")
    paths = []
    for i in range(files):
        chunk = members[i * len(members) // files : (i + 1) * len(members) // files]
        segment = f"17079474733{i % segments:02d}.{i % segments}"
        path = f"crawl-data/{crawl}/segments/{segment}/warc/CC-MAIN-20240220211055-20240221001055-{i:05d}.warc.gz"
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(b"".join(chunk))
        paths.append(path)
    listing = root / "crawl-data" / crawl / "warc.paths.gz"
    listing.write_bytes(gzip.compress(("\n".join(paths) + "\n").encode(), mtime=0))
    return paths
