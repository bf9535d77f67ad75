"""``datapipe browse`` over real builds, through the app's own test client (in process: no port, no waiting):
the evidence each stage recorded shows in its columns (the MinHash threshold, the quality score of a document the
quality stage removed), a duplicate's kept copy is another document than the duplicate (also when the two share
an id, or the kept copy is in an earlier build), a filter the page cannot apply is said, not ignored, and an empty
view says so. The builds are of JSONL documents written here, whose copies keep their original's id."""

from __future__ import annotations

import json
import random
import re
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlparse

import pytest

from tests.conftest import CORPORA, mixture_head, run_build, write_mixture

WORDS = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi "
    "chi psi omega river stone cloud maple harbor lantern meadow copper violet ember"
)

FIRST = (
    mixture_head("twins", seed=1, eos=True)
    + """\
  exact:
    weight: 1
    format: jsonl
    paths: [a.jsonl]
    dedup: {{exact: true}}
  near:
    weight: 1
    format: jsonl
    paths: [a.jsonl]
    dedup: {{exact: true, minhash: {{preset: fineweb}}}}
  scored:
    weight: 1
    format: jsonl
    paths: [a.jsonl]
    quality:
      classifiers: [{{name: fixture_quality, model: "recipe:fixture_quality"}}]
      select: {{classifier: fixture_quality, keep_fraction: 0.5}}
"""
)

LATER = (
    mixture_head("later", seed=1, eos=True)
    + """\
  again:
    weight: 1
    format: jsonl
    paths: [b.jsonl]
    dedup: {{exact: true, against: [{earlier}]}}
"""
)


def _text(seed: int, lines: int = 10) -> str:
    rng = random.Random(seed)
    words = WORDS.split()
    return "\n".join(" ".join(rng.choice(words) for _ in range(14)) for _ in range(lines))


def _client(out: Path, index: Path) -> Any:
    from starlette.testclient import TestClient

    from datapipe.browse.app import create_app

    return TestClient(create_app(str(out), str(index), say=lambda _: None))


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, Any]:
    """Two builds. The first holds six documents, an exact copy of one and a near copy of another, each copy
    under its original's id (as re-crawls and re-exports keep them): deduplicated exactly (``exact``), exactly and
    by MinHash (``near``), and scored by a quality classifier that keeps the better half (``scored``). The second,
    deduplicated against the first, holds one of the first's documents again, under its id."""
    root = tmp_path_factory.mktemp("browse-builds")
    (root / "data").mkdir()
    docs = [{"id": f"doc-{i}", "text": _text(i)} for i in range(6)]
    near = docs[3]["text"].split("\n")
    near[4] = near[4].replace(" ", "  ", 1) + " coda"
    a = [*docs, dict(docs[1]), {"id": "doc-3", "text": "\n".join(near)}]
    b = [dict(docs[2]), {"id": "doc-new", "text": _text(99)}]
    for name, rows in (("a.jsonl", a), ("b.jsonl", b)):
        (root / "data" / name).write_text("".join(json.dumps(d) + "\n" for d in rows))
    first, later = root / "first", root / "later"
    for mixture, out in (
        (write_mixture(root, FIRST.format(root=root / "data"), "first.yaml"), first),
        (write_mixture(root, LATER.format(root=root / "data", earlier=first), "later.yaml"), later),
    ):
        proc = run_build("--mixture", str(mixture), "--output", str(out))
        assert proc.returncode == 0, proc.stderr[-3000:]
    return {
        "client": _client(first, root / "index-first"),
        "later": _client(later, root / "index-later"),
        "index": root / "index-first",
        "out": first,
    }


def _stage(out: Path, source: str, stage: str) -> tuple[int, Any]:
    from datapipe.report.collect import mixture_chains

    _, chains = mixture_chains(str(out))
    return next((step, rec) for step, rec in enumerate(chains[source]) if rec.stage == stage)


def _rows(builds: dict[str, Any], source: str, stage: str, where: str = "true") -> list[dict[str, Any]]:
    """The index rows of a stage of the first build."""
    import duckdb

    _, rec = _stage(builds["out"], source, stage)
    path = builds["index"] / source / f"{rec.dirname}.parquet"
    cur = duckdb.connect().execute(
        f"SELECT * FROM read_parquet('{path}') WHERE {where} ORDER BY shard, index"
    )
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def _decisions(page: str) -> list[dict[str, str]]:
    """The rows of a document page's decisions table, by column name."""
    table = re.search(r'<table id="decisions">(.*?)</table>', page, re.S).group(1)
    head = re.findall(r"<th>([^<]*)</th>", table)
    out = []
    for row in re.findall(r"<tr><td>(.*?)</tr>", table, re.S):
        cells = [
            unescape(re.sub(r"<[^>]+>", "", c)).strip()
            for c in re.findall(r"<td[^>]*>(.*?)</td>", "<td>" + row, re.S)
        ]
        out.append(dict(zip(head, cells, strict=True)))
    return out


def _cluster(page: str) -> str:
    found = re.search(r'<h2 id="cluster">(.*?)(?:<h2>Text|$)', page, re.S)
    assert found, "no duplicate cluster on the page"
    return unescape(found.group(1))


def _kept_ref(cluster: str) -> str | None:
    """The ref the kept-copy line links to (None: it links nowhere)."""
    link = re.search(r'<a id="kept-copy-link" href="([^"]+)"', cluster)
    return parse_qs(urlparse(link.group(1)).query)["ref"][0] if link else None


def test_minhash_removal_shows_the_stage_threshold(builds):
    """A MinHash duplicate's row holds the Jaccard it measured and the threshold the stage ran with (its
    stage.json), in the index and on the document's page."""
    step, rec = _stage(builds["out"], "near", "dedup")
    threshold = rec.doc["config"]["minhash"]["threshold"]
    rows = _rows(builds, "near", "dedup", "reason = 'dedup/minhash'")
    assert [r["id"] for r in rows] == ["doc-3"], rows
    assert rows[0]["threshold"] == threshold and rows[0]["value"] >= threshold, rows
    page = builds["client"].get("/doc", params={"source": "near", "ref": rows[0]["ref"]}).text
    dedup = next(d for d in _decisions(page) if d["stage"] == f"{step}. dedup")
    assert dedup["outcome"] == "dedup/minhash" and float(dedup["threshold"]) == threshold, dedup


def test_a_document_the_quality_stage_removed_shows_its_score(builds):
    """The quality column of a document the quality stage removed is the score it was removed for (it was never
    in a kept part, whose metadata holds the scores of the kept ones), and a quality range finds it."""
    client = builds["client"]
    step, _ = _stage(builds["out"], "scored", "quality")
    every = _rows(builds, "scored", "quality")
    removed = [r for r in every if r["outcome"] == "removed"]
    assert removed and all(r["quality"] is not None and r["quality"] == r["value"] for r in removed), removed
    page = client.get("/docs", params={"source": "scored", "step": step, "outcome": "removed"}).text
    shown = re.findall(r'<td class="n quality">([^<]*)</td>', page)
    assert len(shown) == len(removed) and all(shown), shown
    cut = max(r["quality"] for r in removed)
    below = client.get("/docs", params={"source": "scored", "step": step, "quality_max": cut}).text
    count = int(re.search(r'<p id="summary">([\d,]+) documents', below).group(1).replace(",", ""))
    assert (
        count == len([r for r in every if r["quality"] is not None and r["quality"] <= cut]) >= len(removed)
    )


def test_an_index_of_an_older_browser_is_rebuilt(builds, tmp_path):
    """An index written by an older browser (no version in its metadata) is rewritten, not reused: the fixes of
    its columns reach a build browsed before."""
    import pyarrow.parquet as pq

    from datapipe.browse.index import build_index, index_path, schema
    from datapipe.report.collect import mixture_chains

    _, chains = mixture_chains(str(builds["out"]))
    rec = chains["near"][0]
    stale = Path(index_path(str(tmp_path), rec))
    stale.parent.mkdir(parents=True)
    pq.write_table(schema().empty_table().replace_schema_metadata(None), stale)
    build_index({"near": chains["near"]}, str(tmp_path))
    assert pq.read_metadata(stale).num_rows == rec.counts["docs_in"] > 0


@pytest.mark.parametrize("source", ["exact", "near"])
def test_a_duplicates_kept_copy_is_the_other_document(builds, source):
    """A removed copy's page names its kept copy as the surviving document: another ref, kept by the stage, and,
    as the two share an id, said to be another document of that id; the kept copy's own page calls itself the
    kept copy without a link to itself, and lists the removed copy."""
    client = builds["client"]
    removed = _rows(builds, source, "dedup", "outcome = 'removed'")
    assert [r["id"] for r in removed] == ["doc-1"] + (["doc-3"] if source == "near" else []), removed
    for r in removed:
        cluster = _cluster(client.get("/doc", params={"source": source, "ref": r["ref"]}).text)
        kept_ref = _kept_ref(cluster)
        assert kept_ref is not None and kept_ref != r["ref"], cluster
        assert "another document with this document's id" in cluster, cluster
        kept_page = client.get("/doc", params={"source": source, "ref": kept_ref}).text
        assert any(d["outcome"] == "kept" and d["stage"].endswith("dedup") for d in _decisions(kept_page))
        own = _cluster(kept_page)
        assert _kept_ref(own) is None and "this document" in own and r["ref"] in own, own


def test_a_kept_copy_in_an_earlier_build_is_not_the_duplicate_itself(builds):
    """Deduplicated against an earlier build, a removed document's kept copy is that build's document: the page
    says so, and does not present the removed document (of the same id) as its own kept copy."""
    client = builds["later"]
    page = client.get("/docs", params={"source": "again", "outcome": "removed"}).text
    refs = re.findall(r'<a class="doc" href="/doc\?source=again&(?:amp;)?ref=([^"]+)"', page)
    assert len(refs) == 1, page
    cluster = _cluster(client.get("/doc", params={"source": "again", "ref": unquote(unescape(refs[0]))}).text)
    assert _kept_ref(cluster) is None and "earlier build" in cluster, cluster


def test_bad_filters_are_said_in_one_line_with_status_400(builds):
    client = builds["client"]
    for params, said in (
        ({"quality_min": "abc"}, "quality_min: expected a number, got 'abc'"),
        ({"step": "first"}, "step: expected a whole number, got 'first'"),
        ({"min_score": "0.5"}, "unknown filter 'min_score'"),
        ({"outcome": "droped"}, "outcome: 'droped' is neither kept nor removed"),
        ({"source": "neer"}, "no source 'neer' (did you mean near?)"),
        ({"reason": "dedup/minhsh"}, "no reason 'dedup/minhsh' (did you mean dedup/minhash?)"),
        ({"page": "2x"}, "page: expected a whole number, got '2x'"),
    ):
        r = client.get("/docs?" + urlencode(params))
        assert r.status_code == 400, params
        error = re.findall(r'<p class="error" id="error">([^\n]*?)</p>', r.text)
        assert len(error) == 1 and said in unescape(error[0]), (params, error)
        assert '<p id="summary">' not in r.text and '<a class="doc"' not in r.text, params
    ok = client.get("/docs", params={"quality_min": "0.5", "source": "scored"})
    assert ok.status_code == 200 and 'id="error"' not in ok.text
    r = client.get("/cache", params={"component": "near", "row": "ten"})
    assert r.status_code == 400 and "row: expected a whole number, got 'ten'" in unescape(r.text)


def test_an_empty_view_says_no_documents_match(builds):
    client = builds["client"]
    for params in (
        {"text": "no such words anywhere zqxv"},
        {"chars_min": 10**9},
        {"outcome": "kept", "page": 10**6},
    ):
        page = client.get("/docs", params=params).text
        summary = unescape(re.search(r'<p id="summary">(.*?)</p>', page, re.S).group(1))
        assert "no documents match" in summary or "none on this page" in summary, summary
        assert "showing" not in summary and "1–0" not in summary, summary


def test_a_mistyped_filter_override_is_one_short_line_with_a_suggestion(tmp_path):
    """``overrides: {min_doc_word: 30}`` fails the build before any work, in one line that suggests the setting
    meant, not one listing every setting of the preset."""
    mixture = write_mixture(
        tmp_path,
        f"name: typo\ndata_root: {CORPORA}\nseed: 1\ntokenizer: {{path: 'builtin:gpt2'}}\nsources:\n  web:\n"
        "    weight: 1\n    format: warc\n    paths: [crawl/iana.warc.gz]\n"
        "    filters: {preset: refinedweb, overrides: {min_doc_word: 30}}\n",
    )
    proc = run_build("--mixture", str(mixture), "--output", str(tmp_path / "out"), "--dry-run")
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "did you mean min_doc_words?" in lines[0] and "max_avg_word_length" not in lines[0], lines
    assert len(lines[0]) < 200 + len(str(mixture)), lines
