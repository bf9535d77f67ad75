"""What a build did, made visible: the HTML report (opened in headless Chromium), inspect, lineage, --help with
examples for every command, and the mixture reference generated from the schema."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO

SECTIONS = ("mixture", "funnel", "scores", "lengths", "duplicates", "contamination", "samples")


def _chromium() -> str | None:
    """Debian's chromium, installed here when missing (CI runs as root); None if it cannot be."""
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    if shutil.which("apt-get") is None:
        return None
    try:
        subprocess.run(
            ["apt-get", "install", "-y", "--no-install-recommends", "chromium"],
            capture_output=True,
            timeout=900,
            check=False,
        )
        if not shutil.which("chromium"):
            subprocess.run(["apt-get", "update"], capture_output=True, timeout=300, check=False)
            subprocess.run(
                ["apt-get", "install", "-y", "--no-install-recommends", "chromium"],
                capture_output=True,
                timeout=900,
                check=False,
            )
    except (OSError, subprocess.SubprocessError):
        return None
    return shutil.which("chromium")


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
    browser = _chromium()
    if browser is None:
        pytest.skip(
            "chromium is not installed and could not be installed with apt-get (needs root and Debian)"
        )
    base = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
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


def test_progress_lines_follow_committed_shards(tmp_path):
    import io
    import time

    from datapipe.build.progress import StageProgress
    from datapipe.io.shards import Shard
    from datapipe.stage import stats_path

    shards = [Shard(i, f"file://{tmp_path}/in-{i}", f"in-{i}") for i in range(4)]
    stream = io.StringIO()  # not a terminal: plain periodic lines
    with StageProgress("web filter", str(tmp_path), shards, stream=stream, interval_s=0.05) as progress:
        for shard in shards[:3]:
            with open(stats_path(str(tmp_path), shard), "w") as f:
                json.dump({"stats": {"docs_in": 10, "bytes_in": 2**20}}, f)
            time.sleep(0.12)
        assert progress.poll() == (3, 30, 3 * 2**20)
    lines = stream.getvalue().splitlines()
    assert lines and all(line.startswith("web filter ") for line in lines)
    assert (
        "3/4 shards  30 docs  3.0 MiB" in lines[-1] and "ETA" in lines[-1] and "\r" not in stream.getvalue()
    )


def test_wave_progress_reports_each_stage_as_its_success_appears(tmp_path):
    """Two stages in one wave: progress lines for the one under way, and a report per stage in finishing order."""
    import io
    import time

    from datapipe.build.progress import WaveProgress
    from datapipe.io.shards import Shard
    from datapipe.stage import stats_path

    shards = [Shard(i, f"file://{tmp_path}/in-{i}", f"in-{i}") for i in range(2)]
    dirs = [tmp_path / "filter", tmp_path / "dedup"]
    for d in dirs:
        d.mkdir()
    done: list[tuple[int, float]] = []
    stream = io.StringIO()
    with WaveProgress(
        [("web filter", str(dirs[0]), shards), ("web dedup", str(dirs[1]), shards)],
        lambda i, s: done.append((i, s)),
        stream=stream,
        interval_s=0.05,
        tick_s=0.02,
    ):
        for d in dirs:
            for shard in shards:
                with open(stats_path(str(d), shard), "w") as f:
                    json.dump({"stats": {"docs_in": 5, "bytes_in": 100}}, f)
                time.sleep(0.1)
            (d / "_SUCCESS").write_text("")
            time.sleep(0.1)
        assert [i for i, _ in done] == [0, 1]  # seen while the wave ran, not only at its end
    assert all(0.1 < s < 2.0 for _, s in done)
    lines = stream.getvalue().splitlines()
    assert any(line.startswith("web filter 2/2 shards") for line in lines)
    assert any(line.startswith("web dedup ") for line in lines)
