"""Removals carry their evidence beside each stage's parts (issue 24, item 1): what the rule measured, on a real
build (the small mixture: WARC pages through language ID and RefinedWeb's rules, JSONL through dedup)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pyarrow.parquet as pq

from datapipe import read_removed
from tests.conftest import REPO, build_ok, one_source_mixture


def _stages(out):
    """Stages that remove documents (the token cache keeps every document it is given)."""
    return sorted(
        p for p in out.glob("*/*") if (p / "stage.json").exists() and not p.name.startswith("tokenize-")
    )


def test_every_removed_document_is_listed_with_its_reason_and_evidence(built_small):
    out, _ = built_small
    seen_reasons: set[str] = set()
    for stage in _stages(out):
        doc = json.loads((stage / "stage.json").read_text())
        parts = sorted(stage.glob("part-*.stats.json"))
        assert len(list(stage.glob("part-*.removed.parquet"))) == len(parts), stage
        rows = read_removed(str(stage)).to_pylist()
        removed = doc["counts"]["removed"]
        # records the reader could not make a document of (read/...) have no document to list
        per_doc = {k: v for k, v in removed.items() if not k.startswith("read/")}
        listed: dict[str, int] = {}
        for row in rows:
            listed[row["reason"]] = listed.get(row["reason"], 0) + 1
        assert listed == per_doc, stage
        for row in rows:
            seen_reasons.add(row["reason"])
            if row["reason"].startswith(("filter/", "langid/")):
                assert row["evidence"] and row["measure"], row
            if row["reason"] == "langid/language":
                assert re.fullmatch(r"language=\S+ not in eng_Latn \(score \d\.\d\d\)", row["evidence"]), row
            if row["reason"] == "langid/score":
                assert row["value"] < row["threshold"] == 0.65, row
            if row["reason"].startswith("filter/gopher_short_doc"):
                assert row["value"] < row["threshold"] and row["evidence"].startswith("words="), row
        for reason, samples in doc.get("samples", {}).items():
            if reason.startswith(("filter/", "langid/")):
                assert all(s.get("evidence") for s in samples), (stage, reason)
        for part in stage.glob("part-*.removed.parquet"):  # in input order, each document once
            index = pq.read_table(part).column("index").to_pylist()
            assert index == sorted(set(index)), part
    assert any(r.startswith("filter/") for r in seen_reasons) and any(
        r.startswith("langid/") for r in seen_reasons
    )


def test_a_duplicate_names_its_kept_copy_and_their_jaccard(tmp_path):
    """Dedup removals name the copy that stayed (its id, a document the stage kept) and, for MinHash, the exact
    Jaccard of the two documents' shingle sets, recomputed here from their texts. Corpus: Python library pages,
    some twice, some again with a sentence added (near duplicates)."""
    from datapipe import read_records
    from datapipe.config.stages import MinHashConfig
    from datapipe.dedup.minhash import Shingler, jaccard
    from tests.conftest import CORPORA

    faq = [d["text"] for d in read_records(str(CORPORA / "prose" / "pydoc-library-00000.jsonl.zst"))]
    faq = [t for t in faq if len(t.split()) > 300][:12]
    docs = [{"id": f"faq-{i}", "text": t} for i, t in enumerate(faq)]
    docs += [{"id": f"copy-{i}", "text": faq[i]} for i in (1, 4)]
    docs += [
        {"id": f"near-{i}", "text": faq[i] + "\n\nOne sentence more, added to this copy only."}
        for i in (2, 5, 7)
    ]
    data = tmp_path / "data"
    data.mkdir()
    (data / "faq.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    stages = "dedup: {exact: true, minhash: {preset: fineweb, keep_edges: true}}"
    out = build_ok(tmp_path, one_source_mixture("dups", "faq", ["faq.jsonl"], stages, root=str(data)))
    (stage,) = (out / "faq").glob("dedup-*")
    rows = read_removed(str(stage)).to_pylist()
    kept = {
        d["id"]: d["text"] for part in sorted(stage.glob("part-*.jsonl.zst")) for d in read_records(str(part))
    }
    (extract,) = (out / "faq").glob("extract-*")  # the dedup stage's input
    read = [d for part in sorted(extract.glob("part-*.jsonl.zst")) for d in read_records(str(part))]
    given = {d["id"]: d["text"] for d in read}
    shingle = Shingler(MinHashConfig.preset("fineweb").ngram)
    reasons = {}
    for row in rows:
        reasons[row["id"]] = row["reason"]  # the JSONL's own ids, kept through every stage
        if row["reason"] == "dedup/exact":
            match = re.fullmatch(r"kept_copy=(\S+) \(same text after normalization\)", row["evidence"])
            assert match and match.group(1) in kept, row
        else:
            match = re.fullmatch(r"jaccard_with_kept_copy=([0-9.]+) \(kept copy (\S+)\)", row["evidence"])
            assert match and match.group(2) in kept, row
            expected = jaccard(shingle(given[row["id"]]), shingle(kept[match.group(2)]))
            assert abs(row["value"] - expected) < 1e-4 and 0.7 < row["value"] < 1, (row, expected)
    assert reasons == {
        "copy-1": "dedup/exact",
        "copy-4": "dedup/exact",
        "near-2": "dedup/minhash",
        "near-5": "dedup/minhash",
        "near-7": "dedup/minhash",
    }
    # the clusters, exported and inspected by the documents' own ids
    cli = [sys.executable, "-m", "datapipe.cli"]
    exported = subprocess.run([*cli, "export-clusters", str(stage)], cwd=REPO, capture_output=True, text=True)
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    assert {c["kept"]: sorted(r["id"] for r in c["removed"]) for c in lines} == {
        "faq-1": ["copy-1"],
        "faq-2": ["near-2"],
        "faq-4": ["copy-4"],
        "faq-5": ["near-5"],
        "faq-7": ["near-7"],
    }
    # the verified MinHash edges, by the same ids, with the Jaccard recomputed here
    edges = subprocess.run(
        [*cli, "export-clusters", str(stage), "--edges"], cwd=REPO, capture_output=True, text=True
    )
    assert edges.returncode == 0, edges.stderr
    found = {(e["a"], e["b"]): e["jaccard"] for e in map(json.loads, edges.stdout.splitlines())}
    pairs = {tuple(sorted(p)) for p in found}  # exact copies are MinHash edges too (Jaccard 1)
    assert pairs == {
        ("copy-1", "faq-1"),
        ("copy-4", "faq-4"),
        ("faq-2", "near-2"),
        ("faq-5", "near-5"),
        ("faq-7", "near-7"),
    }
    for (a, b), j in found.items():
        assert abs(j - jaccard(shingle(given[a]), shingle(given[b]))) < 1e-4, (a, b)
    shown = subprocess.run(
        [*cli, "inspect", str(stage), "--cluster", "near-5"], cwd=REPO, capture_output=True, text=True
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("cluster of faq-5: 2 copies, 1 removed\n")
    assert "removed  near-5" in shown.stdout and "dedup/minhash, jaccard 0.9" in shown.stdout
    missing = subprocess.run(
        [*cli, "inspect", str(stage), "--cluster", "faq-0"], cwd=REPO, capture_output=True, text=True
    )
    assert missing.returncode == 2 and "'faq-0' is in no duplicate cluster here" in missing.stderr


def test_documents_keep_their_own_ids_through_every_stage(built_small):
    """A document's ``id`` is its id in the input (the JSONL ``id``, the WARC-Record-ID) in every stage's parts,
    and ``ref`` says where it was read. The JSONL ids are read here from the raw files, line by line."""
    import gzip

    import zstandard

    from datapipe import read_records
    from tests.conftest import CORPORA

    out, _ = built_small

    def lines(path):
        raw = path.read_bytes()
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
        elif path.suffix == ".zst":
            raw = zstandard.ZstdDecompressor().stream_reader(raw).read()
        return raw.decode("utf-8").splitlines()

    own = {}
    for path in sorted((CORPORA / "prose").glob("pydoc-*")) + sorted((CORPORA / "fortunes").glob("*")):
        rel = str(path.relative_to(CORPORA))
        for n, line in enumerate(lines(path)):
            if line.strip():
                own[f"{rel}:{n}"] = json.loads(line).get("id")
    checked = 0
    for stage in sorted(p for p in out.glob("*/*") if list(p.glob("part-*.jsonl.zst"))):
        for part in sorted(stage.glob("part-*.jsonl.zst")):
            for d in read_records(str(part)):
                if stage.parent.name == "web":
                    assert d["id"] == d["metadata"]["warc_record_id"] and d["id"].startswith("<urn:uuid:"), d[
                        "id"
                    ]
                    assert re.fullmatch(r"crawl/\S+\.warc\.gz:\d+", d["ref"]), d["ref"]
                elif stage.parent.name == "prose":
                    assert d["id"] == (own[d["ref"]] or d["ref"]), (stage.name, d["ref"], d["id"])
                checked += 1
    assert checked > 100


def test_keep_removed_writes_the_removed_documents_per_reason(tmp_path):
    """``keep_removed: true`` on a source: every document stage also writes the documents it removed, one folder
    per reason, each document as it was with ``metadata.removed`` saying why; the same documents, in the same
    order, as its removal list. It is another version of the stages (their config says so)."""
    from datapipe import read_records
    from tests.conftest import CORPORA

    out = build_ok(
        tmp_path,
        f"name: keep\ndata_root: {CORPORA}\ntokenizer: {{path: builtin:gpt2}}\nsources:\n  web:\n    weight: 1\n"
        "    format: warc\n    paths: [crawl/docs-*.warc.gz]\n    keep_removed: true\n"
        "    langid: {languages: [en], min_score: 0.65}\n    filters: {preset: refinedweb}\n",
    )
    checked = set()
    for stage in _stages(out):
        assert json.loads((stage / "stage.json").read_text())["config"]["keep_removed"] is True
        rows = read_removed(str(stage)).to_pylist()
        for reason in {r["reason"] for r in rows}:
            listed = [(r["id"], r["evidence"]) for r in rows if r["reason"] == reason]
            folder = stage / "removed" / reason
            docs = [d for part in sorted(folder.glob("part-*.jsonl.zst")) for d in read_records(str(part))]
            assert [d["id"] for d in docs] == [i for i, _ in listed], (stage, reason)
            for d, (_, evidence) in zip(docs, listed, strict=True):
                assert d["metadata"]["removed"] == f"{reason}: {evidence}" if evidence else reason, d[
                    "metadata"
                ]
                assert d["text"].strip(), d["id"]  # the document itself, not only its id
            checked.add(reason.split("/")[0])
    assert checked >= {"langid", "filter"}, checked
    # the browser's index then has the text of the first stage's removals too (its input was raw WARC)
    import duckdb

    from datapipe.browse.index import build_index
    from datapipe.report.collect import mixture_chains

    _, chains = mixture_chains(str(out))
    (first, *_) = build_index(chains, str(tmp_path / "index"))
    texts = duckdb.sql(f"SELECT text FROM '{first.path}' WHERE outcome = 'removed'").fetchall()
    assert first.stage == "extract" and texts and all(t and t.strip() for (t,) in texts)
