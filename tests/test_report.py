"""What a build did, made visible: the HTML report (opened in headless Chromium), inspect, lineage, --help with
examples for every command, and the mixture reference generated from the schema."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

SECTIONS = ("mixture", "funnel", "scores", "lengths", "duplicates", "contamination", "samples")


PACKAGES = ("chromium", "chromium-driver")  # Debian's browser and its driver: the same version, always


def _chromium() -> tuple[str, str] | None:
    """Debian's chromium and chromedriver, installed here when missing (CI runs as root); None if they cannot be."""

    def found() -> tuple[str, str] | None:
        browser = shutil.which("chromium") or shutil.which("chromium-browser")
        driver = shutil.which("chromedriver")
        return (browser, driver) if browser and driver else None

    if found() or shutil.which("apt-get") is None:
        return found()
    install = ["apt-get", "install", "-y", "--no-install-recommends", *PACKAGES]
    try:
        subprocess.run(install, capture_output=True, timeout=900, check=False)
        if not found():
            subprocess.run(["apt-get", "update"], capture_output=True, timeout=300, check=False)
            subprocess.run(install, capture_output=True, timeout=900, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return found()


@pytest.fixture(scope="module")
def report(demo, tmp_path_factory):
    out, _ = demo
    target = tmp_path_factory.mktemp("report") / "report.html"
    proc = subprocess.run(
        [sys.executable, "-m", "datapipe.cli", "report", str(out), "--html", str(target)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return target


def test_demo_build_ends_with_the_per_source_table_and_token_plan(demo):
    _, stdout = demo
    tail = stdout[stdout.index("\nsource ") :]
    manifest = json.loads((demo[0] / "mixture.json").read_text())
    for comp in manifest["components"]:
        assert re.search(rf"^{comp['name']} +\d+ +\d+", tail, re.M)  # docs in / out per source
    assert "mixture at 5,000,000 training tokens:" in tail and "warning: repeats" in tail


def test_report_is_one_file_with_every_section_and_plot(report):
    page = report.read_text()
    for section in SECTIONS:
        assert f'<section id="{section}">' in page
    assert page.count('<img class="plot"') >= 5
    assert 'src="http' not in page and "<link" not in page  # self-contained: nothing to fetch
    assert (
        'class="n warn"' in page
    )  # the YAML's train_tokens: a component repeated more than 4 times is flagged
    assert (
        'alt="dolmino_dclm / quality: quality/fixture_quality (cut-off 0.5)"' in page
    )  # the YAML's threshold
    assert 'alt="dolmino_dclm / extract: langid/score (cut-off 0.65)"' in page
    # removed documents are shown escaped, per reason
    assert re.search(r"<h3>dolmino_dclm / filter: filter/", page)
    assert "<script>alert" not in page


def test_report_renders_in_headless_chromium(report, tmp_path):
    installed = _chromium()
    if installed is None:
        pytest.skip(
            "chromium is not installed and could not be installed with apt-get (needs root and Debian)"
        )
    base = [installed[0], "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    shot = tmp_path / "report.png"
    subprocess.run(
        [*base, f"--screenshot={shot}", "--window-size=1200,4000", f"file://{report}"],
        capture_output=True,
        timeout=120,
        check=True,
    )
    dom = subprocess.run(
        [*base, "--virtual-time-budget=5000", "--dump-dom", f"file://{report}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    rendered = int(re.search(r'data-plots-rendered="(\d+)"', dom).group(1))
    total = int(re.search(r'data-plots="(\d+)"', dom).group(1))
    assert rendered == total >= 5, (rendered, total)
    for section in SECTIONS:
        assert f'id="{section}"' in dom
    import matplotlib.image as mpimg

    pixels = mpimg.imread(shot)
    assert pixels.shape[0] >= 1000 and pixels.std() > 0.05  # a page with content, not a blank screenshot


def test_inspect_stage_kept_removed_and_json(built_small):
    out, _ = built_small
    filt = next((out / "web").glob("filter-*"))
    stage = json.loads((filt / "stage.json").read_text())
    reason = sorted(stage["counts"]["removed"])[0]
    cmd = [sys.executable, "-m", "datapipe.cli", "inspect", str(filt), "--rows", "2"]
    shown = subprocess.run([*cmd, "--removed-by", reason, "--json"], cwd=REPO, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert doc["documents"] and all(d["text"] for d in doc["documents"])  # the first ones were sampled
    assert all(d["evidence"] for d in doc["documents"]), doc["documents"]  # with what the rule measured
    assert len(doc["documents"]) == min(2, stage["counts"]["removed"][reason])
    every = subprocess.run(
        [*cmd[:-1], "100000", "--removed-by", reason, "--json"], cwd=REPO, capture_output=True, text=True
    )
    assert len(json.loads(every.stdout)["documents"]) == stage["counts"]["removed"][reason]  # all, not 5
    kept = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert kept.returncode == 0 and "2 document(s) kept" in kept.stdout
    wrong = subprocess.run([*cmd, "--removed-by", "nope/none"], cwd=REPO, capture_output=True, text=True)
    assert wrong.returncode == 2 and "no document was removed by 'nope/none'" in wrong.stderr
    manifest = subprocess.run(
        [sys.executable, "-m", "datapipe.cli", "inspect", str(out), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    shares = {c["name"]: c["normalized_weight"] for c in json.loads(manifest.stdout)["components"]}
    assert abs(sum(shares.values()) - 1) < 1e-9


def test_stage_json_has_histograms_and_samples(built_small):
    out, _ = built_small
    ext = json.loads(next((out / "web").glob("extract-*")).joinpath("stage.json").read_text())
    tok = json.loads(next((out / "web").glob("tokenize-*")).joinpath("stage.json").read_text())
    assert sum(tok["counts"]["hists"]["tokens_per_doc"]["bins"].values()) == tok["counts"]["docs_kept"]
    dedup = json.loads(next((out / "prose").glob("dedup-*")).joinpath("stage.json").read_text())
    assert dedup["dedup"]["component_size_histogram"]
    assert sum(dedup["counts"]["hists"]["kept_chars"]["bins"].values()) == dedup["counts"]["docs_kept"]
    assert len(dedup["counts"]["samples"]["kept"]) == 5
    assert "hists" not in ext["shards"][0]  # per-shard summaries stay small


def test_every_command_has_help_with_an_example():
    commands = [
        ["inspect"],
        ["verify"],
        ["report"],
        ["lineage"],
        ["classifier", "train"],
        ["train"],
    ]
    for cmd in commands:
        out = subprocess.run(
            [sys.executable, "-m", "datapipe.cli", *cmd, "--help"], cwd=REPO, capture_output=True, text=True
        )
        assert out.returncode == 0 and "example" in out.stdout and "datapipe " + cmd[0] in out.stdout, cmd
    build = subprocess.run(
        [sys.executable, "-m", "pipelines.build_mixture", "--help"], cwd=REPO, capture_output=True, text=True
    )
    assert build.returncode == 0 and "example" in build.stdout.lower() and "--mixture" in build.stdout


def test_mixture_reference_matches_the_schema():
    from datapipe.config.schema_doc import render_reference

    text = (REPO / "docs" / "mixture-reference.md").read_text()
    assert text == render_reference(), (
        "regenerate: python -m datapipe.config.schema_doc > docs/mixture-reference.md"
    )
    from schemas import load

    for key in load("mixture")["properties"]:
        assert f"| `{key}` |" in text


def test_lineage_from_a_training_run_to_the_input_files(built_small, tmp_path):
    out, _ = built_small
    run = tmp_path / "run"
    train = subprocess.run(
        [
            sys.executable,
            "-m",
            "datapipe.cli",
            "train",
            "--mixture",
            str(out / "mixture.json"),
            "--model",
            "tiny",
        ]
        + ["--steps", "2", "--run-dir", str(run), "--peak-tflops", "1", "seq_len=32", "global_batch=8"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert train.returncode == 0, train.stderr[-2000:]
    proc = subprocess.run(
        [sys.executable, "-m", "datapipe.cli", "lineage", str(run)], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert text.startswith(f"run {run}") and "matches" in text
    manifest = json.loads((out / "mixture.json").read_text())
    experiment = json.loads((out / "experiment.json").read_text())
    for comp in manifest["components"]:
        assert f"component {comp['name']}" in text
        for stage in experiment["components"][comp["name"]]["stages"]:
            assert stage["dir"] in text
    for name in ("docs-00000.warc.gz", "iana.warc.gz", "stdlib-00000.parquet"):
        assert re.search(rf"<- \S+/{re.escape(name)} \(", text), name


def _commit(out_dir, shard, docs_in: int, docs_kept: int | None = None, bytes_in: int = 0) -> None:
    from datapipe.runtime.stage import stats_path

    stats = {
        "docs_in": docs_in,
        "docs_kept": docs_in if docs_kept is None else docs_kept,
        "bytes_in": bytes_in,
    }
    with open(stats_path(str(out_dir), shard), "w") as f:
        json.dump({"stats": stats}, f)


def test_a_first_stage_shows_the_share_of_input_bytes_read_within_a_shard(tmp_path):
    """Progress from inside shards, not only when they commit: a first stage's share done is its input bytes read
    (committed shards whole, a shard under way as far as its reader got) out of its files' sizes."""
    import time

    from datapipe import Shard
    from datapipe.orchestrate.progress import StageProgress
    from datapipe.runtime.heartbeat import progress_url

    shards = []
    for i, size in enumerate((1000, 3000, 4000)):
        (tmp_path / f"in-{i}").write_bytes(b"x" * size)
        shards.append(Shard(i, str(tmp_path / f"in-{i}"), f"in-{i}"))
    out = tmp_path / "extract"
    out.mkdir()
    progress = StageProgress("web extract", str(out), shards)
    assert progress.poll().share == 0 and progress.poll().started is None
    began = time.time() - 10
    _commit(out, shards[0], 100, bytes_in=1000)
    with open(progress_url(str(out), shards[1].part), "w") as f:
        json.dump({"started": began, "docs": 50, "bytes": 1500, "at": began + 5}, f)
    snap = progress.poll()
    assert (snap.committed, snap.docs, snap.running, snap.started) == (1, 150, 1, began)
    assert snap.share == (1000 + 1500) / 8000
    line = progress.line(snap, now=began + 10)
    assert line.startswith("web extract 1/3 shards  150 docs  15 docs/s") and " 31.2%" in line, line
    assert "ETA 22s" in line and "(1 under way)" in line, line  # 10 s for 31.25%: 22 s more


def test_a_resumed_stage_counts_this_runs_time_and_documents_only(tmp_path):
    """Shards an earlier run committed are reused: their start (an hour ago) is not this stage's start, their
    documents are not this run's rate, and the line says how many were reused (issue 39 item 11)."""
    import time

    from datapipe import Shard
    from datapipe.orchestrate.progress import StageProgress
    from datapipe.runtime.stage import TIMING_SUFFIX

    shards = []
    for i in range(3):
        (tmp_path / f"in-{i}").write_bytes(b"x" * 1000)
        shards.append(Shard(i, str(tmp_path / f"in-{i}"), f"in-{i}"))
    out = tmp_path / "extract"
    out.mkdir()
    now = time.time()
    _commit(out, shards[0], 500, bytes_in=1000)  # the earlier run's, begun an hour ago
    (out / f"{shards[0].part}{TIMING_SUFFIX}").write_text(json.dumps({"started": now - 3600, "seconds": 9}))
    progress = StageProgress("web extract", str(out), shards)
    assert progress.reused == {shards[0].part} and progress.own_seconds() is None
    _commit(out, shards[1], 100, bytes_in=1000)  # this run's, begun 10 s ago
    (out / f"{shards[1].part}{TIMING_SUFFIX}").write_text(json.dumps({"started": now - 10, "seconds": 10}))
    snap = progress.poll()
    assert (snap.committed, snap.docs, snap.started) == (2, 100, now - 10)
    assert 10 <= progress.own_seconds(now=now + 0.5) <= 11
    line = progress.line(snap, now=now)
    assert "100 docs  10 docs/s" in line and "ETA 10s" in line and "(1 reused)" in line, line


def test_a_later_stage_shows_the_share_of_documents_its_upstream_kept(tmp_path):
    """A later stage knows its exact total once the stage before it committed the same shards: the documents it
    kept for them."""
    from datapipe import Shard
    from datapipe.orchestrate.progress import StageProgress
    from datapipe.runtime.heartbeat import progress_url

    shards = [Shard(i, f"{tmp_path}/in-{i}", f"in-{i}") for i in range(2)]
    up, out = tmp_path / "extract", tmp_path / "filter"
    up.mkdir()
    out.mkdir()
    progress = StageProgress("web filter", str(out), shards, upstream=str(up))
    _commit(up, shards[0], 120, docs_kept=100)
    assert progress.poll().share == 0  # the second shard's total is not known yet: the share of shards
    _commit(up, shards[1], 400, docs_kept=300)
    with open(progress_url(str(out), shards[0].part), "w") as f:
        json.dump({"started": 1.0, "docs": 80, "bytes": None, "at": 2.0}, f)
    assert progress.poll().share == 80 / 400
    _commit(out, shards[0], 100)
    (out / f"{shards[0].part}.progress.json").unlink()
    assert progress.poll().share == 100 / 400 and progress.poll().docs == 100


def test_a_worker_writes_its_progress_while_it_works_and_removes_it_at_commit(tmp_path, monkeypatch):
    """run_shard: the heartbeat file exists while the shard is processed (documents so far), and is gone once the
    shard's stats.json commits it; its timing record says when it began."""
    import time

    from datapipe import Shard
    from datapipe.runtime.heartbeat import progress_url
    from datapipe.runtime.stage import run_shard
    from datapipe.runtime.stats import StageStats

    monkeypatch.setenv("DATAPIPE_HEARTBEAT_S", "0")  # every tick writes
    seen: list[dict] = []

    class Counting:
        name, source, out_dir = "count", "web", str(tmp_path)

        def has_output(self, shard):
            return False

        def process_shard(self, shard, beat=None):
            stats = StageStats()
            for i in range(3):
                beat.tick(i)
                seen.append(json.loads(Path(progress_url(self.out_dir, shard.part)).read_text()))
                stats.docs_in += 1
                stats.docs_kept += 1
            return stats

    before = time.time()
    shard = Shard(0, str(tmp_path / "in"), "in")
    run_shard(Counting(), shard)
    assert [s["docs"] for s in seen] == [0, 1, 2] and all(s["started"] >= before for s in seen)
    assert not (tmp_path / f"{shard.part}.progress.json").exists()
    timing = json.loads((tmp_path / f"{shard.part}.timing.json").read_text())
    assert before <= timing["started"] <= time.time()


def test_a_finished_stage_holds_no_file_a_killed_writer_left(tmp_path):
    """A worker killed mid-write (a Ray node, seen on a fresh clone) leaves ``.tmp-*`` beside the stage's parts
    while its shard runs again elsewhere; the stage's finish removes it before ``_SUCCESS``."""
    from datapipe import Shard
    from datapipe.runtime.stage import StageBase, finish_stage
    from datapipe.runtime.stats import StageStats

    class Done(StageBase):
        name, source, out_dir = "count", "web", str(tmp_path)

        def finalize(self, shards, stats):
            return {}

    stray = tmp_path / ".tmp-part-00001.progress.json.qs7bc754"
    stray.write_text("{")
    shard = Shard(0, str(tmp_path / "in"), "in")
    finish_stage(Done(), [shard], [StageStats(docs_in=1, docs_kept=1)], {})
    assert not stray.exists() and (tmp_path / "_SUCCESS").exists()


def test_wave_progress_reports_each_stage_with_its_own_time(tmp_path):
    """Two stages in one wave: a plain line per stage under way (not a terminal), and a report per stage in
    finishing order with the stage's own time (from its first shard's start, not the wave's). Waits on the
    display's events, never on a sleep."""
    import io
    import time

    from datapipe import Shard
    from datapipe.orchestrate.progress import WaveProgress
    from datapipe.runtime.heartbeat import progress_url

    shards = [Shard(i, f"{tmp_path}/in-{i}", f"in-{i}") for i in range(2)]
    dirs = [tmp_path / "filter", tmp_path / "dedup"]
    for d in dirs:
        d.mkdir()
    done: list[tuple[int, float]] = []
    reported = __import__("threading").Event()
    stream = io.StringIO()

    def on_done(i: int, seconds: float) -> None:
        done.append((i, seconds))
        reported.set()

    wave = WaveProgress(
        [("web filter", str(dirs[0]), shards, None), ("web dedup", str(dirs[1]), shards, str(dirs[0]))],
        on_done,
        stream=stream,
        interval_s=0.01,
        tick_s=0.01,
    )
    with wave:
        for k, d in enumerate(dirs):
            began = time.time() - 100 * (k + 1)  # the stage's first shard began 100 (200) s ago
            with open(progress_url(str(d), shards[0].part), "w") as f:
                json.dump({"started": began, "docs": 3, "bytes": 0, "at": began}, f)
            wave.shown.clear()
            assert wave.shown.wait(60)
            wave.shown.clear()
            assert wave.shown.wait(60)  # a display that began after the file was there
            for shard in shards:
                _commit(d, shard, 5)
            (d / f"{shards[0].part}.progress.json").unlink()
            reported.clear()
            (d / "_SUCCESS").write_text("")
            assert reported.wait(60)  # seen while the wave ran, not only at its end
    assert [i for i, _ in done] == [0, 1]
    assert 100 <= done[0][1] < 160 and 200 <= done[1][1] < 260, done
    lines = stream.getvalue().splitlines()
    assert any(line.startswith("web filter 0/2 shards  3 docs") for line in lines), lines
    assert any(line.startswith("web dedup ") for line in lines) and "\r" not in stream.getvalue()


@pytest.fixture(scope="module")
def browse(demo, tmp_path_factory):
    """``datapipe browse`` over the demo build on a free localhost port: (base URL, output, index folder).
    Waits for the line that names the address (printed once the socket listens), not for a time."""
    from datapipe.browse.launch import spawn, stop

    out, _ = demo
    index = tmp_path_factory.mktemp("browse-index")
    proc, url = spawn(str(out), str(index), cwd=str(REPO), wait_s=600)
    yield url, out, index
    stop(proc)


def _get(url: str) -> str:
    from urllib.request import urlopen

    with urlopen(url, timeout=60) as r:
        return r.read().decode()


def test_browse_index_holds_every_document_each_stage_saw(browse):
    """The browser's index against the stage folders it was built from: per stage, its documents in (kept and
    removed) are stage.json's counts; kept texts are the parts' texts; a removed document's text is the text it
    entered the stage with (the previous stage's part), and its evidence is the removal list's. Rows are kept
    first, then removed by reason (what lets a filtered view skip row groups)."""
    import duckdb

    from datapipe import read_records, read_removed
    from datapipe.report.collect import mixture_chains

    _, out, index = browse
    _, chains = mixture_chains(str(out))
    checked_removed_text = 0
    for source, chain in chains.items():
        previous: dict[str, str] = {}
        for rec in chain:
            if rec.stage == "tokenize":
                continue
            path = index / source / f"{rec.dirname}.parquet"
            rows = duckdb.sql(f"SELECT * FROM '{path}'").fetchall()
            names = [d[0] for d in duckdb.sql(f"SELECT * FROM '{path}' LIMIT 0").description]
            rows = [dict(zip(names, r, strict=True)) for r in rows]
            kept = {r["ref"]: r for r in rows if r["outcome"] == "kept"}
            removed = {r["ref"]: r for r in rows if r["outcome"] == "removed"}
            # file order: kept first, then removed grouped by reason, each in shard and input order
            order = [(r["outcome"] != "kept", r["reason"] or "", r["shard"], r["index"]) for r in rows]
            assert order == sorted(order), rec.url
            assert len(rows) == rec.counts["docs_in"] and len(kept) == rec.counts["docs_kept"], rec.url
            parts = {
                d["ref"]: d["text"]
                for p in sorted(rec.doc.get("parts", []))
                for d in read_records(f"{rec.url}/{p}")
            }
            assert {k: r["text"] for k, r in kept.items()} == parts, rec.url
            listed = {r["ref"]: r for r in read_removed(rec.url).to_pylist()}
            assert set(removed) == set(listed), rec.url
            for ref, r in removed.items():
                assert (r["reason"], r["evidence"], r["value"], r["related"]) == (
                    listed[ref]["reason"],
                    listed[ref]["evidence"],
                    listed[ref]["value"],
                    listed[ref]["related"],
                )
                if previous:
                    assert r["text"] == previous[ref], (rec.url, ref)
                    checked_removed_text += 1
            previous = parts
    assert checked_removed_text > 0


def test_browse_filters_return_what_they_say(browse):
    """Each filter of the documents view, over HTTP: every listed row satisfies it, and the count is the index's."""
    url, out, _ = browse
    home = _get(url)
    assert "dedup/minhash" in home and "filter/" in home
    page = _get(f"{url}docs?outcome=removed&reason=dedup/minhash")
    reasons = re.findall(r'<td class="removed">([^<]+)</td>', page)
    assert reasons and set(reasons) == {"dedup/minhash"}
    count = int(re.search(r'<p id="summary">([\d,]+) documents', page).group(1).replace(",", ""))
    assert count >= len(reasons)
    page = _get(f"{url}docs?outcome=kept&chars_min=2000&chars_max=3000")
    chars = [int(c.replace(",", "")) for c in re.findall(r'<td class="n chars">([\d,]+)</td>', page)]
    assert chars and all(2000 <= c <= 3000 for c in chars)
    word = "the"
    page = _get(f"{url}docs?text={word}&outcome=kept")
    refs = re.findall(r'href="/doc\?source=([^&]+)&(?:amp;)?ref=([^"]+)"', page)
    assert refs
    from urllib.parse import unquote

    for source, ref in refs[:5]:
        doc = _get(f"{url}doc?source={source}&ref={ref}")
        text = re.search(r'<pre class="doc" id="text">(.*?)</pre>', doc, re.S).group(1)
        assert word in text.lower(), unquote(ref)


def test_browser_shows_a_removal_its_value_and_its_kept_duplicate(browse, tmp_path):
    """The acceptance walk in a real headless Chromium driven by Selenium: from the funnels, filter to a removal
    reason (MinHash dedup), open a removed document, see its measured Jaccard and its kept copy; screenshots
    under the test's temporary folder."""
    installed = _chromium()
    if installed is None:
        pytest.skip(
            "chromium and chromedriver are not installed and could not be with apt-get (root, Debian)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    from datapipe import read_removed
    from datapipe.report.collect import mixture_chains

    url, out, _ = browse
    options = webdriver.ChromeOptions()
    options.binary_location = installed[0]
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1300,1600"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=installed[1]), options=options)
    try:
        driver.get(url)
        driver.save_screenshot(str(tmp_path / "1-funnels.png"))
        driver.find_element(By.CSS_SELECTOR, "a.reason[data-reason='dedup/minhash']").click()
        driver.save_screenshot(str(tmp_path / "2-removed-by-minhash.png"))
        cells = driver.find_elements(By.CSS_SELECTOR, "#documents td.removed")
        assert cells and {c.text for c in cells} == {"dedup/minhash"}
        link = driver.find_element(By.CSS_SELECTOR, "#documents a.doc")
        doc_id = link.text
        link.click()
        driver.save_screenshot(str(tmp_path / "3-document.png"))
        evidence = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#decisions td.evidence") if e.text]
        assert len(evidence) == 1 and evidence[0].startswith("jaccard_with_kept_copy="), evidence
        kept_link = driver.find_element(By.ID, "kept-copy-link")
        kept_id = kept_link.text
        assert driver.find_element(By.ID, "kept-copy").text.strip()
        # what the page says is what the dedup stage recorded
        _, chains = mixture_chains(str(out))
        rows = [
            r
            for chain in chains.values()
            for rec in chain
            if rec.stage == "dedup"
            for r in read_removed(rec.url).to_pylist()
            if r["id"] == doc_id and r["reason"] == "dedup/minhash"
        ]
        assert rows and rows[0]["related"] == kept_id
        shown = driver.find_element(By.CSS_SELECTOR, "#decisions td.value:not(:empty)").text
        assert abs(float(shown) - rows[0]["value"]) < 1e-9
        kept_link.click()
        driver.save_screenshot(str(tmp_path / "4-kept-copy.png"))
        members = driver.find_element(By.ID, "cluster-members").text
        assert driver.find_element(By.ID, "kept-copy-link").text == kept_id and doc_id in members, members
    finally:
        driver.quit()
    shots = sorted(p.name for p in tmp_path.glob("*.png"))
    assert len(shots) == 4 and all((tmp_path / s).stat().st_size > 10_000 for s in shots), shots


def test_report_has_contents_and_links_that_open_browser_views(browse, tmp_path):
    """The static report heads with a table of contents, and its tables, plots and samples link to views of the
    running browser: every such link answers with the view it names (a reason's removed documents, a sample's
    own page)."""
    from html import unescape
    from urllib.parse import parse_qs, urlparse

    url, out, _ = browse
    target = tmp_path / "report.html"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "datapipe.cli",
            "report",
            str(out),
            "--html",
            str(target),
            "--browse-url",
            url,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    page = target.read_text()
    toc = re.search(r'<nav id="toc">(.*?)</nav>', page, re.S).group(1)
    assert all(f'href="#{s}"' in toc for s in SECTIONS)
    base = re.escape(url.rstrip("/"))
    links = sorted({unescape(h) for h in re.findall(rf'href="({base}[^"]*)"', page)})
    reasons = [h for h in links if "/docs?" in h and "reason=" in h]
    docs = [h for h in links if "/doc?" in h]
    plots_linked = re.findall(
        r'<a class="view" href="[^"]+" title="open in datapipe browse"><img class="plot"', page
    )
    assert reasons and docs and len(plots_linked) >= 5
    for href in reasons[:12]:
        reason = parse_qs(urlparse(href).query)["reason"][0]
        shown = re.findall(r'<td class="removed">([^<]+)</td>', _get(href))
        assert shown and set(shown) == {reason}, href
    for href in docs[:6]:
        assert '<table id="decisions">' in _get(href), href


def test_beams_info_lines_go_to_the_build_log_not_the_console(built_small):
    """A local build's console holds datapipe's lines and problems; Beam's INFO lines are in the build's log file
    (``OUT/_logs/build-*.log``), which keeps every record at INFO and above."""
    out, proc = built_small
    assert " INFO " not in proc.stderr and "INFO apache_beam" not in proc.stdout + proc.stderr, proc.stderr[
        -2000:
    ]
    logs = sorted((out / "_logs").glob("build-*.log"))  # one per build run on this output
    assert logs and "INFO apache_beam" in logs[0].read_text()


def test_a_hostile_document_renders_as_text():
    """Crawled data is hostile: its text, id and URL are escaped, and a URL becomes a link only when http(s)."""
    from starlette.templating import Jinja2Templates

    from datapipe.browse.app import TEMPLATES

    page = (
        Jinja2Templates(directory=str(TEMPLATES))
        .env.get_template("doc.html")
        .render(
            name="n",
            output="o",
            source="web",
            ref="r",
            doc_id="<b>id</b>",
            url="javascript:alert(1)",
            stages=[],
            changes=[],
            cluster=None,
            text="<script>alert(1)</script>",
            text_stage="",
        )
    )
    assert "<script>alert" not in page and "&lt;script&gt;" in page and "<b>id</b>" not in page
    assert 'href="javascript' not in page and "javascript:alert(1)" in page


def test_browse_on_a_taken_port_is_one_line_before_any_index(built_small, tmp_path):
    """A port another program listens on: one line naming it and ``--port 0``, no traceback, no index built."""
    import socket

    out, _ = built_small
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    index = tmp_path / "index"
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "datapipe.cli",
                "browse",
                str(out),
                "--port",
                str(port),
                "--index-dir",
                str(index),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=REPO,
        )
    finally:
        holder.close()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert f"127.0.0.1:{port}" in line and "--port 0" in line, line
    assert not any(index.iterdir()) if index.exists() else True


def test_a_shard_begun_in_a_first_phase_counts_from_there(tmp_path):
    """A two-phase stage (dedup) signs each shard before its global phase, and the signing's heartbeat marks the
    shard's start: run_shard keeps that start in the shard's timing, so the stage's own time ("ran in") holds the
    global phase instead of starting at the shard phase. A shard with no first phase counts from its own start."""
    import time

    from datapipe import Shard
    from datapipe.runtime.heartbeat import Heartbeat
    from datapipe.runtime.stage import run_shard
    from datapipe.runtime.stats import StageStats

    class Copy:
        name, source, out_dir = "dedup", "web", str(tmp_path)

        def setup(self) -> None: ...

        def has_output(self, shard: Shard) -> bool:
            return False

        def process_shard(self, shard: Shard, beat=None) -> StageStats:
            stats = StageStats()
            stats.docs_in = stats.docs_kept = 1
            return stats

    signed, plain = Shard(0, "in-0", "in-0"), Shard(1, "in-1", "in-1")
    before = time.time()
    Heartbeat(str(tmp_path), signed.part, started=before - 100).tick(0)  # signed 100 s ago
    for shard in (signed, plain):
        run_shard(Copy(), shard)
    timing = {s.index: json.loads((tmp_path / f"{s.part}.timing.json").read_text()) for s in (signed, plain)}
    assert timing[0]["started"] == before - 100 and timing[1]["started"] >= before
    assert timing[0]["seconds"] < 60  # the shard's own processing time is unchanged
    assert not list(tmp_path.glob("*.progress.json"))
