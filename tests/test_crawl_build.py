"""A build that reads a Common Crawl dump by name (issue 65), through a real HTTP server on the loopback interface
serving a miniature dump made from the fixture WARCs, with faults: the listing stored with the build, the documents
the same as a build of the same files from disk, throttling and cut transfers survived and counted, a refused file
stopping the build with one line naming it (or allowed, and named), a killed build resuming without fetching again
what it committed, the dry run's plan, a local mirror through fsspec, and the config's one-line errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import CORPORA, REPO, run_build, write_mixture
from tests.crawl_server import CRAWL, CrawlServer, build_crawl_tree

FILES = 8  # in the miniature dump, over 3 segments
FAST = "{base_s: 0.01, cap_s: 0.05, attempts: 6, timeout_s: 3}"  # the real limits, in hundredths


def _mixture(folder: Path, base_url: str, files: int = 5, extra: str = "", fetch: str = FAST) -> Path:
    return write_mixture(
        folder,
        f"""\
name: cc
data_root: {folder}
tokenizer: {{path: "builtin:gpt2"}}
sources:
  web:
    weight: 1
    commoncrawl:
      crawl: {CRAWL}
      sample: {{files: {files}, seed: 1}}
      base_url: "{base_url}"
      fetch: {fetch}
{extra}""",
    )


@pytest.fixture
def dump(tmp_path: Path):
    root = tmp_path / "bucket"
    paths = build_crawl_tree(root, sorted((CORPORA / "crawl").glob("docs-*.warc.gz")), FILES, 3)
    with CrawlServer(root) as server:
        yield server, root, paths


def _stage(out: Path, name: str = "extract") -> Path:
    (folder,) = (out / "web").glob(f"{name}-*")
    return folder


def _sampled(out: Path) -> list[str]:
    shards = json.loads((_stage(out) / "stage.json").read_text())["shards"]
    return [s["name"] for s in shards]


def _gets(server: CrawlServer) -> list[str]:
    return [p for p, _ in server.requests if p.endswith(".warc.gz")]


def test_a_dump_read_by_name_is_the_same_as_its_files_read_from_disk(dump, tmp_path: Path) -> None:
    server, root, _ = dump
    out = tmp_path / "out"
    mix = _mixture(tmp_path, server.url)
    proc = run_build("--mixture", str(mix), "--output", str(out), "--engine", "local")
    assert proc.returncode == 0, proc.stderr
    sampled = _sampled(out)
    assert len(sampled) == 5
    server.faults["/" + sampled[1]] = ["503", "slowdown", "cut:5000"]  # for the second build below
    # the listing is stored with the build, and the files, once committed, are not kept
    assert (out / "web" / "crawl" / "warc.paths.gz").read_bytes() == (
        root / "crawl-data" / CRAWL / "warc.paths.gz"
    ).read_bytes()
    assert not list((out / "web" / "crawl" / "files").glob("*.warc.gz"))
    # the same files from disk: the same documents, byte for byte (the shard names are the paths in the dump)
    local = write_mixture(
        tmp_path,
        f"name: cc\ndata_root: {root}\ntokenizer: {{path: 'builtin:gpt2'}}\nsources:\n  web:\n    weight: 1\n"
        f"    format: warc\n    paths: [{', '.join(sampled)}]\n",
        name="local.yaml",
    )
    disk = tmp_path / "disk"
    proc = run_build("--mixture", str(local), "--output", str(disk), "--engine", "local")
    assert proc.returncode == 0, proc.stderr
    for part in sorted(_stage(out).glob("part-*.jsonl.zst")):
        assert part.read_bytes() == (_stage(disk) / part.name).read_bytes(), part.name
    # through faults: waited out, resumed, counted; the same documents again
    again = tmp_path / "again"
    proc = run_build("--mixture", str(mix), "--output", str(again), "--engine", "local")
    assert proc.returncode == 0, proc.stderr
    cov = json.loads((_stage(again) / "stage.json").read_text())["crawl"]
    assert cov["planned"] == cov["fetched"] == 5 and cov["missing"] == 0
    assert cov["throttled"] == 2 and cov["resumed"] == 1 and cov["retried"] == 3
    assert cov["records"] == json.loads((_stage(again) / "stage.json").read_text())["counts"]["docs_in"] > 0
    for part in sorted(_stage(again).glob("part-*.jsonl.zst")):
        assert part.read_bytes() == (_stage(out) / part.name).read_bytes(), part.name
    report = subprocess.run(
        [sys.executable, "-m", "datapipe.cli", "report", str(again)], capture_output=True, text=True, cwd=REPO
    )
    assert "5 of 5 file(s) fetched" in report.stdout, report.stdout + report.stderr
    assert "2 throttled, 1 resumed, 0 missing" in (again / "report.html").read_text()
    from starlette.testclient import TestClient

    from datapipe.browse.app import create_app

    home = TestClient(create_app(str(again), str(tmp_path / "index"), say=lambda _: None)).get("/")
    assert f"crawl web: {CRAWL} warc: 5 of 5 file(s) fetched, 8 request(s), 3 retried" in home.text


def test_a_refused_file_stops_the_build_naming_it_and_a_rerun_fetches_only_it(dump, tmp_path: Path) -> None:
    server, _, _ = dump
    out = tmp_path / "out"
    mix = _mixture(tmp_path, server.url)
    refused = _planned(server, mix, out)[0]
    server.faults[refused] = ["403"]
    server.requests.clear()
    proc = run_build("--mixture", str(mix), "--output", str(out), "--engine", "local")
    assert proc.returncode != 0
    (line,) = [x for x in proc.stderr.splitlines() if "missing" in x]
    assert "1 of 5 crawl file(s) missing, 0 allowed" in line and "HTTP 403" in line
    assert refused.lstrip("/") in line
    assert len(_gets(server)) == 5  # a refusal is not retried
    server.requests.clear()
    proc = run_build("--mixture", str(mix), "--output", str(out), "--engine", "local")
    assert proc.returncode == 0, proc.stderr
    # only the missing file is fetched again; the listing is read from the build
    assert [p for p, _ in server.requests] == [refused]


def _planned(server: CrawlServer, mix: Path, out: Path) -> list[str]:
    """The files the dry run says the build reads, as the server's paths."""
    dry = run_build("--mixture", str(mix), "--output", str(out), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    return [
        x.strip().removeprefix(server.url) for x in dry.stdout.splitlines() if x.strip().endswith(".warc.gz")
    ]


def test_missing_files_the_mixture_allows_are_named(dump, tmp_path: Path) -> None:
    server, _, _ = dump
    mix = _mixture(tmp_path, server.url, files=2)
    absent = _planned(server, mix, tmp_path / "out")[0]
    server.faults[absent] = ["404"]
    proc = run_build("--mixture", str(mix), "--output", str(tmp_path / "out"), "--engine", "local")
    assert proc.returncode != 0 and "1 of 2 crawl file(s) missing, 0 allowed" in proc.stderr
    mix.write_text(mix.read_text().replace("      fetch:", "      allow_missing: 1\n      fetch:"))
    server.faults[absent] = ["404"]
    out = tmp_path / "allowed"
    proc = run_build("--mixture", str(mix), "--output", str(out), "--engine", "local")
    assert proc.returncode == 0, proc.stderr
    cov = json.loads((_stage(out) / "stage.json").read_text())["crawl"]
    assert cov["missing"] == 1 and cov["fetched"] == 1 and cov["allow_missing"] == 1
    ((missing),) = cov["missing_files"]
    assert missing["file"] == absent.lstrip("/") and "HTTP 404" in missing["why"]


def test_a_killed_build_resumes_without_fetching_again_what_it_committed(dump, tmp_path: Path) -> None:
    server, _, _ = dump
    out = tmp_path / "out"
    mix = _mixture(tmp_path, server.url, fetch="{base_s: 0.01, cap_s: 0.05, attempts: 6, timeout_s: 120}")
    stalled = _planned(server, mix, out)[-1]
    server.faults[stalled] = ["stall:120"]  # the build hangs on its last file until it is killed
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pipelines.build_mixture",
            "--mixture",
            str(mix),
            "--output",
            str(out),
            "--engine",
            "local",
            "--processes",
            "1",
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not any(
            p == stalled for p, _ in server.requests
        ):  # wait for the event: the stalled GET arrived
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        committed = sorted((out / "web").glob("extract-*/part-*.stats.json"))
        assert len(committed) == 4
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    server.requests.clear()
    again = run_build("--mixture", str(mix), "--output", str(out), "--engine", "local")
    assert again.returncode == 0, again.stderr
    assert [p for p, _ in server.requests] == [stalled]


def test_the_dry_run_plans_files_bytes_and_time_and_fetches_no_file(dump, tmp_path: Path) -> None:
    server, root, _ = dump
    out = tmp_path / "out"
    dry = run_build(
        "--mixture", str(_mixture(tmp_path, server.url, files=6)), "--output", str(out), "--dry-run"
    )
    assert dry.returncode == 0, dry.stderr
    urls = [line.strip() for line in dry.stdout.splitlines() if line.strip().endswith(".warc.gz")]
    assert len(urls) == 5  # the first five named, then "and 1 more"
    size = sum((root / u.removeprefix(server.url + "/")).stat().st_size for u in urls)
    (line,) = [x for x in dry.stdout.splitlines() if x.startswith("fetch web:")]
    assert f"{CRAWL} warc from {server.url}/: 6 file(s)" in line and "every size asked" in line
    assert "at 10 in flight x 20 MB/s" in line and size / 1e6 < float(line.split(" MB")[0].split()[-1]) + 0.01
    assert "and 1 more" in dry.stdout
    assert not (out / "web").exists()  # nothing stored: a dry run writes nothing
    assert [p for p, _ in server.requests] == [f"/crawl-data/{CRAWL}/warc.paths.gz"]  # sizes by HEAD only


def test_a_local_mirror_is_read_through_fsspec(dump, tmp_path: Path) -> None:
    _, root, _ = dump
    out = tmp_path / "out"
    proc = run_build(
        "--mixture",
        str(_mixture(tmp_path, f"file://{root}", files=3)),
        "--output",
        str(out),
        "--engine",
        "local",
    )
    assert proc.returncode == 0, proc.stderr
    cov = json.loads((_stage(out) / "stage.json").read_text())["crawl"]
    assert cov["fetched"] == 3 and cov["records"] > 0


@pytest.mark.parametrize(
    ("block", "field", "says"),
    [
        ("commoncrawl: {crawl: CC-MAIN-24, sample: {files: 1}}", "commoncrawl.crawl", "CC-MAIN"),
        (
            "commoncrawl: {crawl: CC-MAIN-2024-10, sample: {files: 1, fraction: 0.1}}",
            "commoncrawl.sample",
            "",
        ),
        (
            "commoncrawl: {crawl: CC-MAIN-2024-10, sample: {files: 1}}\n    format: warc",
            "sources.web",
            "one of",
        ),
        ("format: warc", "sources.web", "give format and paths, or commoncrawl"),
        (
            "commoncrawl: {crawl: CC-MAIN-2024-10, sample: {files: 1}, fetch: {base_s: 9, cap_s: 1}}",
            "fetch",
            "cap_s",
        ),
    ],
)
def test_a_wrong_commoncrawl_block_is_one_line_naming_the_field(tmp_path: Path, block, field, says) -> None:
    mix = write_mixture(
        tmp_path,
        f"name: cc\ntokenizer: {{path: 'builtin:gpt2'}}\nsources:\n  web:\n    weight: 1\n    {block}\n",
    )
    proc = run_build("--mixture", str(mix), "--output", str(tmp_path / "o"), "--dry-run")
    assert proc.returncode != 0
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and field in lines[0] and says in lines[0], proc.stderr


def test_a_wet_dump_reads_common_crawls_own_text(tmp_path: Path, fixture_texts: list[str]) -> None:
    """``kind: wet``: the listing ``wet.paths.gz`` and files of conversion records, each record's text a document
    (no extraction)."""
    import gzip
    import io

    from warcio.warcwriter import WARCWriter

    root = tmp_path / "bucket"
    texts = fixture_texts[:6]
    paths = []
    for i in range(2):
        path = f"crawl-data/{CRAWL}/segments/1707947473347.{i}/wet/CC-MAIN-20240220211055-20240221001055-0000{i}.warc.wet.gz"
        (root / path).parent.mkdir(parents=True)
        with open(root / path, "wb") as f:
            w = WARCWriter(f, gzip=True)
            for j, text in enumerate(texts[i * 3 : i * 3 + 3]):
                data = text.encode()
                w.write_record(
                    w.create_warc_record(
                        f"https://example.org/{i}/{j}",
                        "conversion",
                        payload=io.BytesIO(data),
                        length=len(data),
                    )
                )
        paths.append(path)
    (root / f"crawl-data/{CRAWL}/wet.paths.gz").write_bytes(gzip.compress(("\n".join(paths) + "\n").encode()))
    with CrawlServer(root) as server:
        mix = _mixture(tmp_path, server.url, files=2)
        mix.write_text(mix.read_text().replace("      sample:", "      kind: wet\n      sample:"))
        out = tmp_path / "out"
        proc = run_build("--mixture", str(mix), "--output", str(out), "--engine", "local")
    assert proc.returncode == 0, proc.stderr
    cov = json.loads((_stage(out) / "stage.json").read_text())["crawl"]
    assert cov["kind"] == "wet" and cov["fetched"] == 2 and cov["records"] == 6
    assert (out / "web" / "crawl" / "wet.paths.gz").exists()


def test_s3_without_s3fs_is_one_line_saying_what_to_install(tmp_path: Path) -> None:
    pytest.importorskip("fsspec")
    if __import__("importlib").util.find_spec("s3fs") is not None:
        pytest.skip("s3fs is installed: the listing would be asked of AWS")
    mix = _mixture(tmp_path, "s3://commoncrawl/")
    proc = run_build("--mixture", str(mix), "--output", str(tmp_path / "o"), "--dry-run")
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert proc.returncode != 0 and len(lines) == 1, proc.stderr
    assert "sources.web.commoncrawl" in lines[0] and "datapipe[s3]" in lines[0]
