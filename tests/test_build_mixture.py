"""The walking path end to end on the DirectRunner: mixture YAML -> stages -> token caches -> mixture.json."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from datapipe import (
    DatapipeError,
    TokenCache,
    TokenizerConfig,
    load_manifest,
    load_tokenizer,
    open_component,
    read_manifest,
    read_records,
)
from datapipe.store.identity import TokenizerIdentity
from tests.conftest import REPO, run_build, tree_digest, write_mixture


def _stage_dir(out: Path, source: str, stage: str) -> Path:
    (d,) = [p for p in (out / source).iterdir() if p.name.startswith(stage + "-")]
    return d


ORDER = ("extract", "filter", "dedup", "paragraphs", "tokenize")


def _stages(out: Path, source: str) -> list[Path]:
    """A source's stage folders in pipeline order."""
    return sorted((out / source).iterdir(), key=lambda p: ORDER.index(p.name.split("-")[0]))


def test_builds_every_source_and_manifest(built_small):
    out, proc = built_small
    doc = read_manifest(str(out))
    m = load_manifest(str(out))
    assert [c["name"] for c in doc["components"]] == ["web", "code", "prose"]
    assert doc["seed"] == 7
    assert abs(sum(c["normalized_weight"] for c in doc["components"]) - 1) < 1e-9
    assert doc["components"][0]["normalized_weight"] == pytest.approx(3 / 5.5)
    for c in doc["components"]:
        cache = open_component(m, c["name"])
        assert cache.num_rows == c["rows"] > 0 and cache.num_tokens == c["tokens"] > 0
    assert "manifest:" in proc.stdout and "total" in proc.stdout


def test_a_pages_headline_is_its_title_metadata_not_its_text(built_small):
    """The extract stage keeps each page's headline as ``metadata.title``, out of the text (issue 40 item 1)."""
    from datapipe import read_records

    out, _ = built_small
    docs = [d for p in sorted((out / "web").glob("extract-*/part-*.jsonl.zst")) for d in read_records(str(p))]
    titled = [d for d in docs if d["metadata"].get("title")]
    assert len(titled) >= 0.9 * len(docs) > 0
    assert not any(d["text"].startswith(d["metadata"]["title"] + "\n") for d in titled)


def test_cache_holds_exactly_the_tokenized_documents_in_order(built_small):
    out, _ = built_small
    tok = load_tokenizer(TokenizerConfig("builtin:gpt2", add_eos=True))
    for source in ("web", "code", "prose"):
        upstream = _stages(out, source)[-2]  # the stage whose documents tokenize read
        parts = sorted(upstream.glob("part-*.jsonl.zst"))
        docs = [d for p in parts for d in read_records(str(p))]
        # deterministic order: shard order, then document order within the shard
        keys = [(int(p.name[5:10]), i) for p in parts for i, _ in enumerate(read_records(str(p)))]
        assert keys == sorted(keys)
        expected = tok.encode_batch([d["text"] for d in docs])
        cache = TokenCache.open(str(_stage_dir(out, source, "tokenize")), expect_tokenizer=tok.identity)
        assert cache.num_rows == len(docs)
        got = [r.tolist() for r in cache.input_ids.rows()]
        assert got == expected
        assert all(r[-1] == tok.identity.eos_id for r in got)


def test_accounting_balances(built_small):
    """Every stage: in == kept + removed by reason, and each stage's input is the previous stage's output."""
    out, _ = built_small
    for source in ("web", "code", "prose"):
        stages = _stages(out, source)
        docs = [json.loads((d / "stage.json").read_text()) for d in stages]
        for prev, doc in zip([None, *docs], docs, strict=False):
            c = doc["counts"]
            assert c["docs_in"] == c["docs_kept"] + sum(c["removed"].values())
            if prev is not None:
                assert c["docs_in"] == prev["counts"]["docs_kept"]
            assert all(
                k.split("/")[0] in ("read", "extract", "langid", "filter", "dedup", "paragraphs")
                for k in c["removed"]
            )
        tk = docs[-1]
        assert tk["cache"]["tokens"] == tk["counts"]["tokens"]
        assert all((d / "_SUCCESS").exists() for d in stages)
        assert not (stages[-1] / "shards").exists()
    web = [json.loads((d / "stage.json").read_text())["counts"] for d in _stages(out, "web")]
    assert web[0]["skipped"]["warc/request"] > 0 and web[0]["skipped"]["warc/not_html"] > 0
    assert web[0]["removed"]["langid/language"] > 0  # the crawl holds non-English handbook pages
    assert sum(v for k, v in web[1]["removed"].items() if k.startswith("filter/")) > 0
    prose = [json.loads((d / "stage.json").read_text())["counts"] for d in _stages(out, "prose")]
    assert prose[0]["removed"] == {} and prose[1]["removed"]["dedup/exact"] >= 2  # the planted exact copies
    reports = [json.loads((d / "stage.json").read_text()) for d in _stages(out, "prose")]
    assert reports[1]["dedup"]["components"] >= 1 and reports[2]["dedup"]["counters"]["lines"] > 0


def test_rerun_skips_every_stage_and_changes_nothing(built_small, small_mixture):
    out, _ = built_small
    before = tree_digest(out)
    proc = run_build("--mixture", str(small_mixture), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("skipped (cached)") == 9 and " ran in " not in proc.stdout
    assert tree_digest(out) == before
    dry = run_build("--mixture", str(small_mixture), "--output", str(out), "--dry-run")
    lines = dry.stdout.splitlines()
    assert (
        sum("cached" in line and "shard(s)" in line for line in lines) == 9 and "would run" not in dry.stdout
    )
    assert (
        sum(line.rstrip().endswith("cached") for line in lines) == 9
    )  # the resource plan: nothing left to do


def test_dry_run_plans_documents_time_memory_and_disk(built_small, small_mixture, tmp_path):
    """The resource plan's document counts, sampled from the inputs, against what the build counted."""
    out, _ = built_small
    dry = run_build("--mixture", str(small_mixture), "--output", str(tmp_path / "o"), "--dry-run")
    assert dry.returncode == 0, dry.stderr[-3000:]
    rows = {}
    for line in dry.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[0] in ("web", "code", "prose") and parts[2].replace(",", "").isdigit():
            rows[(parts[0], parts[1])] = [float(p.replace(",", "")) for p in parts[2:8]]
    for source in ("web", "code", "prose"):
        truth = json.loads((_stage_dir(out, source, "extract") / "stage.json").read_text())["counts"][
            "docs_in"
        ]
        docs, _, seconds, rss, disk, _ = rows[(source, "extract")]
        assert 0.75 * truth <= docs <= 1.25 * truth, (source, docs, truth)
        assert seconds >= 0 and rss > 100 and disk >= 0
    assert rows[("prose", "dedup")][5] > 0  # the dedup keys it will shuffle
    assert re.search(r"total: ~\d+ s, peak ~\d+ MiB a worker, ~[1-9][\d,]* MiB written to", dry.stdout)


def test_dry_run_does_no_work(tmp_path):
    """A dry run of a mixture whose quality stage needs a classifier trained: the plan names where the model will
    be, and nothing is trained or written."""
    out = tmp_path / "o"
    dry = run_build("--mixture", "dclm_phase3.yaml", "--output", str(out), "--dry-run")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert re.search(r"classifier fixture_quality +would be trained first, to .*/classifiers/", dry.stdout)
    assert not out.exists() or list(out.iterdir()) == []


def test_a_flag_neither_ours_nor_beams_is_refused(tmp_path):
    """``--ouput`` is no option of the launcher or of Beam (which would drop it with a warning and build into the
    default folder): one line naming it and the near miss, before any work; real Beam flags pass."""
    bad = run_build("--mixture", "dclm_phase3.yaml", "--ouput", str(tmp_path / "o"), "--dry-run")
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        "error: unknown option(s): --ouput (did you mean --output?): neither build_mixture's (see --help) nor a "
        "Beam pipeline option"
    )
    assert not (tmp_path / "o").exists()
    good = run_build(
        "--mixture",
        "dclm_phase3.yaml",
        "--output",
        str(tmp_path / "o"),
        "--dry-run",
        "--direct_num_workers=2",
    )
    assert good.returncode == 0, good.stderr[-2000:]


@pytest.mark.parametrize(
    "flags, said",
    [
        (["--runner=FooRunner"], "error: --runner FooRunner: Unexpected pipeline runner: FooRunner"),
        (
            ["--runner=DataflowRunner"],
            "error: --runner DataflowRunner: Missing GCS path option: temp_location.",
        ),
        (
            [
                "--runner=DataflowRunner",
                "--project=my-project-123",
                "--region=us-central1",
                "--temp_location=gs://my-bucket/tmp",
                "--staging_location=gs://my-bucket/staging",
            ],
            "error: --runner DataflowRunner: the output {out} is on this machine, where Dataflow's workers cannot "
            "write; give --output gs://...",
        ),
    ],
    ids=["unknown-runner", "dataflow-without-options", "dataflow-local-output"],
)
def test_what_the_runner_cannot_do_is_one_line_before_work(tmp_path, flags, said):
    """A runner Beam does not know, Dataflow without the options its validator asks for or with an output folder
    its workers cannot reach: one line before any work (no classifier trained, nothing written)."""
    out = tmp_path / "o"
    proc = run_build("--mixture", "dclm_phase3.yaml", "--output", str(out), *flags)
    assert proc.returncode == 2, proc.stderr[-2000:]
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(said.format(out=out)), line
    assert not out.exists()


@pytest.mark.parametrize("dry", [False, True])
def test_unwritable_output_is_one_line_before_work(tmp_path, dry):
    """An output folder that cannot be made (here: under a file) is one error line before any work, in a dry run
    too (which checks without writing)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    out = blocker / "out"
    proc = run_build("--mixture", "dclm_phase3.yaml", "--output", str(out), *(["--dry-run"] if dry else []))
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert (
        line.startswith(f"error: {out}: cannot write the build's output there (") and "Traceback" not in line
    )


def test_resource_warnings_name_the_flag_that_makes_the_run_fit():
    from datapipe.orchestrate.estimate import StageEstimate, resource_warnings

    big = [StageEstimate("web", "dedup", False, 10**9, 1e6, 1e5, 3000.0, 1e6, shuffle_mb=6e5)]
    (workers, shuffle) = resource_warnings(big, 8, True, 16_000)
    assert "use --direct_num_workers=4" in workers and "--workers 4" in workers
    assert "use --global-shuffle files" in shuffle
    assert resource_warnings(big, 2, False, 16_000) == []
    assert resource_warnings([StageEstimate("web", "dedup", True, 10**9, 0, 0, 0, 0)], 64, True, 100) == []


def test_interrupted_stage_resumes_to_the_same_bytes(built_small, small_mixture, tmp_path):
    out, _ = built_small
    proc = run_build("--mixture", str(small_mixture), "--output", str(tmp_path / "o"), "--only", "web")
    assert proc.returncode == 0 and "manifest not written" in proc.stdout
    reference = tree_digest(tmp_path / "o" / "web")
    assert reference == {k[4:]: v for k, v in tree_digest(out).items() if k.startswith("web/")}
    # as if killed: the tokenize stage never committed, and extract lost one shard's commit marker and output
    tok = _stage_dir(tmp_path / "o", "web", "tokenize")
    for name in ("_SUCCESS", "stage.json", "shard_ledger.json"):
        (tok / name).unlink()
    ex = _stage_dir(tmp_path / "o", "web", "extract")
    (ex / "_SUCCESS").unlink()
    (ex / "part-00001.stats.json").unlink()
    (ex / "part-00001.jsonl.zst").unlink()
    proc = run_build("--mixture", str(small_mixture), "--output", str(tmp_path / "o"), "--only", "web")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count(" ran in ") == 2  # extract and tokenize; filter had committed
    assert tree_digest(tmp_path / "o" / "web") == reference


def test_changing_tokenizer_config_reruns_only_tokenize(built_small, small_mixture, tmp_path):
    text = small_mixture.read_text().replace("add_eos: true", "add_eos: true\n  add_bos: true")
    mix = write_mixture(tmp_path, text)
    out = tmp_path / "o"
    # reuse the built extract stages: copy them in
    src_out, _ = built_small
    for source in ("web", "code", "prose"):
        for stage in _stages(src_out, source)[:-1]:
            shutil.copytree(stage, out / source / stage.name)
    proc = run_build("--mixture", str(mix), "--output", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("skipped (cached)") == 6 and proc.stdout.count(" ran in ") == 3
    doc = read_manifest(str(out))
    assert doc["tokenizer"]["add_bos"] is True
    cache = open_component(load_manifest(str(out)), "code")
    row = cache.row(0).tolist()
    assert row[0] == doc["tokenizer"]["bos_id"] and row[-1] == doc["tokenizer"]["eos_id"]


def test_reader_refuses_other_tokenizer(built_small):
    out, _ = built_small
    path = str(_stage_dir(out, "code", "tokenize"))
    real = TokenCache.open(path).tokenizer
    other = TokenizerIdentity(**{**real.to_dict(), "sha256": "0" * 64, "name": "other"})
    with pytest.raises(DatapipeError, match="expected other"):
        TokenCache.open(path, expect_tokenizer=other)


def test_stage_dirs_are_versioned(built_small):
    out, _ = built_small
    names = sorted(os.listdir(out / "web"))
    assert [n.split("-")[0] for n in names] == ["extract", "filter", "tokenize"]
    assert all(len(n.split("-")[1]) == 8 for n in names)


def test_extracted_records_follow_the_document_schema(built_small):
    from datapipe.config.schema import validate

    out, _ = built_small
    for source in ("web", "code", "prose"):
        for part in sorted(_stage_dir(out, source, "extract").glob("part-*.jsonl.zst")):
            for doc in read_records(str(part)):
                validate(doc, "document", file=str(part))


def test_unwritable_report_path_is_one_line_before_rendering(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "datapipe.cli",
            "report",
            str(tmp_path / "no-build"),
            "--html",
            f"{blocker}/r.html",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: {blocker}: cannot write the report there ({blocker} is a file)"


def test_an_input_the_file_system_cannot_list_is_one_line(tmp_path):
    """hf:// without network (here: no name resolves; elsewhere the hub answers that the repository is not
    there): one line naming the field and the pattern, not the HTTP client's 96-line traceback."""
    mix = write_mixture(
        tmp_path,
        "name: h\ndata_root: hf://datasets/datapipe-tests/no-such-dataset\ntokenizer: {path: builtin:gpt2}\n"
        "sources:\n  s: {weight: 1, format: jsonl, paths: [data/*.jsonl]}\n",
    )
    proc = run_build("--mixture", str(mix), "--output", str(tmp_path / "out"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: {mix}: sources.s.paths[0]: cannot list 'hf://datasets/datapipe-tests/"), (
        line
    )
