"""A folder of HTML pages as a source (``format: html``, issue 66): one document a file, its id the path under the
data root, its URL from a sidecar or ``url_prefix``, gzipped pages too; the same text as the same pages read from a
WARC; a file that is not a page named in one line before any work. The folder is written from the fixture crawl's
real pages (the Debian Python docs and Handbook)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import zstandard
from fastwarc.warc import ArchiveIterator, WarcRecordType

from tests.conftest import CORPORA, run_build, write_mixture

WARC = CORPORA / "crawl" / "docs-00000.warc.gz"


def _pages() -> list[tuple[str, bytes]]:
    """(URL, HTML bytes) of the fixture WARC's HTML responses."""
    out = []
    with open(WARC, "rb") as f:
        for rec in ArchiveIterator(f, record_types=WarcRecordType.response, parse_http=True):
            if "html" in (rec.http_content_type or ""):
                out.append((rec.headers["WARC-Target-URI"], rec.reader.read()))
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The pages as a folder tree by their URLs' paths; every fifth gzipped, the first with a ``.url`` sidecar.
    Returns the root and each file's URL by its path under the root."""
    root = tmp_path_factory.mktemp("html") / "site"
    urls = {}
    for i, (url, html) in enumerate(_pages()):
        parts = urlsplit(url)
        rel = f"{parts.netloc}{parts.path}".rstrip("/")
        if not rel.endswith((".html", ".htm")):
            rel += "/index.html"
        if i % 5 == 4:
            rel += ".gz"
            html = gzip.compress(html, mtime=0)
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(html)
        urls[rel] = url
    first = sorted(urls)[0]
    (root / (first + ".url")).write_text("https://mirror.example/first-page\n")
    urls[first] = "https://mirror.example/first-page"
    return root, urls


def _docs(out: Path, stage: str = "extract") -> list[dict]:
    (folder,) = (out / "web").glob(f"{stage}-*")
    docs = []
    for part in sorted(folder.glob("part-*.jsonl.zst")):
        text = zstandard.ZstdDecompressor().stream_reader(part.open("rb")).read().decode()
        docs += [json.loads(line) for line in text.splitlines()]
    return docs


def test_a_folder_of_pages_builds_one_document_a_file(site, tmp_path: Path) -> None:
    root, urls = site
    mix = write_mixture(
        tmp_path,
        f"name: pages\ndata_root: {root}\ntokenizer: {{path: 'builtin:gpt2'}}\nsources:\n  web:\n    weight: 1\n"
        "    format: html\n    paths: ['**/*.html', '**/*.html.gz']\n    url_prefix: 'https://'\n",
    )
    out = tmp_path / "out"
    proc = run_build("--mixture", str(mix), "--output", str(out), "--engine", "local")
    assert proc.returncode == 0, proc.stderr
    stage = json.loads(next((out / "web").glob("extract-*/stage.json")).read_text())
    assert stage["counts"]["docs_in"] == len(urls)
    kept = _docs(out)
    assert kept and all(d["id"] == d["ref"] == d["metadata"]["file"] for d in kept)
    for d in kept:  # a sidecar's URL, else url_prefix + the path less .gz (here: the page's own URL)
        want = urls[d["id"]] if d["id"] == sorted(urls)[0] else "https://" + d["id"].removesuffix(".gz")
        assert d["metadata"]["url"] == want
    # the same pages through a WARC: the same texts
    warc_mix = write_mixture(
        tmp_path,
        f"name: pages\ndata_root: {CORPORA}\ntokenizer: {{path: 'builtin:gpt2'}}\nsources:\n  web:\n"
        f"    weight: 1\n    format: warc\n    paths: [crawl/{WARC.name}]\n",
        name="warc.yaml",
    )
    proc = run_build("--mixture", str(warc_mix), "--output", str(tmp_path / "warc"), "--engine", "local")
    assert proc.returncode == 0, proc.stderr
    by_url = {d["metadata"]["url"]: d["text"] for d in _docs(tmp_path / "warc")}
    same = [d for d in kept if d["metadata"]["url"] in by_url]
    assert len(same) >= len(kept) - 2  # the sidecar's page has another URL
    assert [d["id"] for d in same if d["text"] != by_url[d["metadata"]["url"]]] == []


def test_a_file_that_is_not_a_page_is_one_line_before_any_work(site, tmp_path: Path) -> None:
    root, _ = site
    mix = write_mixture(
        tmp_path,
        f"name: pages\ndata_root: {root}\ntokenizer: {{path: 'builtin:gpt2'}}\nsources:\n  web:\n    weight: 1\n"
        "    format: html\n    paths: ['**/*.ht*']\n",  # the sidecars too
    )
    proc = run_build("--mixture", str(mix), "--output", str(tmp_path / "o"), "--dry-run")
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert proc.returncode != 0 and len(lines) == 1, proc.stderr
    assert ".url: not an HTML page by its name" in lines[0]


def test_url_prefix_belongs_to_html_sources(tmp_path: Path) -> None:
    mix = write_mixture(
        tmp_path,
        f"name: m\ndata_root: {CORPORA}\ntokenizer: {{path: 'builtin:gpt2'}}\nsources:\n  web:\n    weight: 1\n"
        "    format: warc\n    paths: [crawl/iana.warc.gz]\n    url_prefix: 'https://x/'\n",
    )
    proc = run_build("--mixture", str(mix), "--output", str(tmp_path / "o"), "--dry-run")
    assert proc.returncode == 2 and "sources.web.url_prefix: only a folder of HTML pages" in proc.stderr


def test_the_extractor_takes_a_page_as_text_or_bytes() -> None:
    from datapipe.extract.html import HtmlExtractor

    url, html = _pages()[0]
    extractor = HtmlExtractor()
    as_bytes = extractor.extract(html)
    assert as_bytes.text and extractor.extract(html.decode("utf-8")).text == as_bytes.text
    assert "its text, its bytes" in (HtmlExtractor.extract.__doc__ or "")
