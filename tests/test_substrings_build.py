"""The ``substrings`` stage in a build: real Python documentation pages with planted repeats (a licence block in
several documents, a disclaimer, a document that is almost all boilerplate), built on Beam, datatrove and the local
engine to the same bytes; the spans cut at character boundaries, their evidence, ``keep: first`` against ``none``,
``substrings/too_short``, and a later build run ``against`` this one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from datapipe import read_records, read_removed
from tests.conftest import (
    CORPORA,
    build_ok,
    build_on_both_engines,
    one_source_mixture,
    run_build,
    tree_digest,
)

LICENCE = (
    "Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated "
    "documentation files (the \u201cSoftware\u201d), to deal in the Software without restriction, including without "
    "limitation the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the "
    "Software, and to permit persons to whom the Software is furnished to do so, subject to the following "
    "conditions: the above copyright notice and this permission notice shall be included in all copies. \u00a9 "
)
MIN_BYTES = 200


def pages(n: int) -> list[str]:
    texts = [d["text"] for d in read_records(str(CORPORA / "prose" / "pydoc-tutorial-00000.jsonl.zst"))]
    assert len(texts) >= n
    return texts[:n]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Two shards: 12 pages, the licence block inserted in the middle of pages 2, 5, 7 and 10; page 9 is the
    licence and one short line (too short once the licence is cut)."""
    data = tmp_path_factory.mktemp("subdata")
    docs = []
    for i, text in enumerate(pages(12)):
        if i in (2, 5, 7, 10):
            half = len(text) // 2
            text = text[:half] + "\n" + LICENCE + "\n" + text[half:]
        if i == 9:
            text = LICENCE + "\nSee the FAQ."
        docs.append({"id": f"page-{i}", "text": text})
    for name, part in (("a.jsonl", docs[:6]), ("b.jsonl", docs[6:])):
        (data / name).write_text("".join(json.dumps(d) + "\n" for d in part), encoding="utf-8")
    return data


def mixture(
    data: Path, keep: str = "first", against: str = "", name: str = "subs", more: tuple[str, ...] = ()
) -> str:
    extra = f", against: [{against}]" if against else ""
    stages = (
        f"dedup: {{exact: true, substrings: {{min_bytes: {MIN_BYTES}, keep: {keep}, min_chars: 40{extra}}}}}"
    )
    return one_source_mixture(name, "docs", ["a.jsonl", "b.jsonl", *more], stages, root=str(data))


def kept_docs(out: Path) -> dict[str, dict]:
    (stage,) = (out / "docs").glob("substrings-*")
    return {d["id"]: d for p in sorted(stage.glob("part-*.jsonl.zst")) for d in read_records(str(p))}


def test_every_engine_cuts_the_same_spans(corpus, tmp_path):
    from tests.conftest import write_mixture

    mix = write_mixture(tmp_path, mixture(corpus))
    beam = build_on_both_engines(mix, tmp_path)
    local = tmp_path / "local"
    proc = run_build("--mixture", str(mix), "--output", str(local), "--engine", "local", "--processes", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    skip = ("_datatrove/", "experiment")
    ours = {k: v for k, v in tree_digest(local).items() if not k.startswith(skip[0]) and skip[1] not in k}
    theirs = {k: v for k, v in tree_digest(beam).items() if not k.startswith(skip[0]) and skip[1] not in k}
    assert ours == theirs

    docs = kept_docs(beam)
    assert "page-2" in docs and LICENCE[:60] in docs["page-2"]["text"]  # the first occurrence stays
    # (page-2 repeats 208 bytes of itself, a natural repeat of the tutorial's: that copy goes)
    for later in ("page-5", "page-7", "page-10"):
        cut = docs[later]
        assert LICENCE[:60] not in cut["text"] and "Permission is hereby" not in cut["text"]
        evidence = cut["metadata"]["substrings"]
        assert evidence["bytes_removed"] >= len(LICENCE.encode()) - 2
        licence = [s for s in evidence["first_spans"] if s["end"] - s["start"] >= len(LICENCE.encode()) - 2]
        (copy,) = licence[0]["copies"]
        assert copy[2] == 2  # the kept copy: the build's third document (page-2), at the licence's offset
        cut["text"].encode("utf-8")  # whole characters: the quotes and the copyright sign were not cut in two
    (stage,) = (beam / "docs").glob("substrings-*")
    removed = {r["id"]: r for r in read_removed(str(stage)).to_pylist()}
    assert removed["page-9"]["reason"] == "substrings/too_short"
    # the browser's row of a cut document names its spans and where each copy is kept
    from datapipe.browse.index import shard_rows
    from datapipe.report.collect import mixture_chains

    _, chains = mixture_chains(str(beam))
    step, rec = next((i, r) for i, r in enumerate(chains["docs"]) if r.stage == "substrings")
    rows = {
        r["id"]: r for shard in (0, 1) for r in shard_rows(rec, step, shard, chains["docs"][step - 1], None)
    }
    assert "repeated span(s) cut" in str(rows["page-5"]["evidence"])
    assert "copy of document 2 at byte" in str(rows["page-5"]["evidence"])
    removed_row = rows["page-9"]
    assert removed_row["reason"] == "substrings/too_short" and "repeated spans removed" in str(
        removed_row["evidence"]
    )
    record = json.loads((stage / "stage.json").read_text())
    assert record["counts"]["counters"]["substrings/documents_cut"] == 5  # 5, 7, 10, 9 (too short) and 2
    assert record["substrings"]["chunks"] >= 1 and record["substrings"]["bytes"] > 5000


def test_keep_none_cuts_every_copy_and_a_later_build_cuts_what_an_earlier_one_holds(corpus, tmp_path):
    (tmp_path / "a").mkdir()
    first = build_ok(tmp_path / "a", mixture(corpus, keep="none"))
    docs = kept_docs(first)
    assert all("Permission is hereby" not in d["text"] for d in docs.values())  # page-2's copy too
    (earlier,) = (first / "docs").glob("substrings-*")
    # the same pages again in a new build, against the earlier one, and one new page with the licence in it: the
    # pages the earlier build holds are cut to nothing, and the new page loses the licence, which is there already
    new = read_records(str(CORPORA / "prose" / "pydoc-howto-00000.jsonl.gz"))
    text = next(new)["text"]
    row = {"id": "new", "text": text[:2000] + "\n" + LICENCE + "\n" + text[2000:4000]}
    (corpus / "c.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    (tmp_path / "b").mkdir()
    later = build_ok(tmp_path / "b", mixture(corpus, against=str(earlier), name="again", more=("c.jsonl",)))
    (only,) = kept_docs(later).values()
    assert only["id"] == "new" and "Permission is hereby" not in only["text"] and text[:2000] in only["text"]
    (copy,) = [s for s in only["metadata"]["substrings"]["first_spans"] if s["end"] - s["start"] > 300][0][
        "copies"
    ]
    assert copy[2] < 0  # the kept copy is in the earlier build (its documents are numbered below zero)
    (stage,) = (later / "docs").glob("substrings-*")
    reasons = {r["reason"] for r in read_removed(str(stage)).to_pylist()}
    assert reasons == {"substrings/too_short"}


def test_the_dry_run_plans_the_phase_within_its_budget(corpus, tmp_path):
    from tests.conftest import write_mixture

    text = mixture(corpus).replace("min_chars: 40", "min_chars: 40, budget_mb: 320")
    proc = run_build(
        "--mixture", str(write_mixture(tmp_path, text)), "--output", str(tmp_path / "o"), "--dry-run"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = [ln for ln in proc.stdout.splitlines() if " substrings " in ln]
    peak, budget = re.search(r"peak (\d+) MB of (\d+)", line).groups()
    assert "in 1 chunks of" in line and "disk" in line and int(peak) <= int(budget) == 320, line
