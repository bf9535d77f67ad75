"""Exact-substring dedup (datapipe/substrings): the chunked algorithm against brute force, planted repeats within
and across documents and chunk borders, characters cut at span edges, keep first vs none, an earlier build as a
prior, the evidence, the plan, and a killed run resumed to identical bytes."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from datapipe import substrings as S
from datapipe.substrings.apply import kept_ranges, spans_of
from datapipe.substrings.kernels import KEPT, runs_of
from datapipe.substrings.reference import join_runs, reference_runs
from datapipe.substrings.steps import runs_path
from datapipe.substrings.work import RUN

REPO = Path(__file__).resolve().parents[1]


def build(
    work: Path,
    parts: list[list[str]],
    k: int,
    chunk: int,
    keep: tuple[str, ...] = ("first", "none"),
    priors: tuple[Path, ...] = (),
    threads: int = 2,
) -> S.Layout:
    for i, texts in enumerate(parts):
        S.write_part(work, i, texts)
    layout = S.freeze(work, len(parts), k, chunk, priors)
    S.run(work, keep=keep, threads=threads)
    return layout


def results(work: Path, keep: str, lines: bool = False) -> list[S.Result]:
    layout = S.read_layout(work)
    return [r for p in range(len(layout.part_bytes)) for r in S.apply_part(work, p, keep, lines)]


def chunked_runs(work: Path, keep: str) -> np.ndarray:
    layout = S.read_layout(work)
    rows = [np.fromfile(runs_path(work, keep, c), RUN) for c in range(layout.chunks)]
    return join_runs(np.concatenate(rows)) if rows else np.empty(0, RUN)


def brute_runs(prior: list[bytes], texts: list[bytes], k: int, keep: str) -> np.ndarray:
    """The definition, literally: every window's occurrences from a dictionary."""
    every = prior + texts
    skip = sum(map(len, prior))
    seen: dict[bytes, list[int]] = {}
    at = 0
    for t in every:
        for i in range(len(t) - k + 1):
            seen.setdefault(t[i : i + k], []).append(at + i)
        at += len(t)
    copy = np.full(at - skip, KEPT, np.int64)
    for places in seen.values():
        for p in places:
            if p < skip:
                continue
            if keep == "first" and places[0] != p:
                copy[p - skip] = places[0] - skip
            elif keep == "none" and len(places) > 1:
                copy[p - skip] = (places[0] if places[0] != p else places[1]) - skip
    s, c, q = runs_of(copy, 0)
    rows = np.empty(len(s), RUN)
    rows["start"], rows["count"], rows["copy"] = s, c, q
    return rows


def text_bytes(parts: list[list[str]]) -> list[bytes]:
    return [t.encode("utf-8", "surrogatepass") for texts in parts for t in texts]


def check_evidence(work: Path, keep: str, docs: list[bytes], prior: list[bytes] = ()) -> None:  # type: ignore[assignment]
    """Every piece's bytes equal its copy's; under ``first`` the copy is earlier in document order."""
    for r in results(work, keep):
        data = docs[r.doc]
        for span in r.spans:
            assert 0 <= span.start < span.end <= len(data)
            for piece in span.pieces:
                source = docs[piece.doc] if piece.doc >= 0 else prior[len(prior) + piece.doc]
                n = piece.end - piece.start
                assert data[piece.start : piece.end] == source[piece.offset : piece.offset + n]
                if keep == "first":
                    assert (piece.doc, piece.offset) < (r.doc, piece.start)


LOREM = (
    "Permission is hereby granted, free of charge, to any person obtaining a copy of this software and "
    "associated documentation files, to deal in the Software without restriction. "
)


def test_planted_repeats_within_and_across_documents_and_chunk_borders(tmp_path):
    rng = random.Random(1)

    def filler(n: int) -> str:
        return "".join(rng.choice("abcdefghij klmnop\n") for _ in range(n))

    block = LOREM[:120]  # each copy between its own marks (Q..Z are not in the filler): it repeats exactly
    docs = [
        filler(299) + "Q" + block + "R" + filler(199),  # the first occurrence
        filler(149)
        + "S"
        + block
        + "T"
        + filler(89)
        + block[:50]
        + filler(40),  # a copy; a copy shorter than k
        filler(999) + "U" + block + "V" + filler(9),  # straddles the 512-byte chunk border
        block + "W" + filler(99) + "X" + block,  # twice in one document
    ]
    k = 64
    build(tmp_path, [docs[:2], docs[2:]], k, 512)
    assert S.read_layout(tmp_path).chunks >= 4
    texts = text_bytes([docs])
    for keep in ("first", "none"):
        assert np.array_equal(chunked_runs(tmp_path, keep), brute_runs([], texts, k, keep))
    got = {r.doc: r for r in results(tmp_path, "first")}
    assert got[0].spans == ()
    assert [(s.start, s.end) for s in got[1].spans] == [(150, 270)]
    assert got[1].spans[0].pieces == (S.Piece(150, 270, 0, 300),)
    assert [(s.start, s.end) for s in got[2].spans] == [(1000, 1120)]
    assert [(s.start, s.end, s.pieces[0].doc) for s in got[3].spans] == [(0, 120, 0), (221, 341, 0)]
    assert got[1].text == docs[1][:150] + docs[1][270:]
    none = {r.doc: r for r in results(tmp_path, "none")}
    assert [(s.start, s.end) for s in none[0].spans] == [(300, 420)]  # the first copy goes too
    assert none[0].spans[0].pieces[0].doc == 1  # named by the earliest other occurrence
    check_evidence(tmp_path, "first", texts)
    check_evidence(tmp_path, "none", texts)


def test_spans_shrink_to_whole_characters(tmp_path):
    """A repeat whose window edges fall inside multi-byte characters loses those characters' partial bytes:
    the removed bytes are whole characters and the text left decodes."""
    shared = "é" * 20 + "€😀" * 10  # 40 + 70 bytes
    a = "x" + shared + "y"
    b = "zz" + shared[1:] + "😀"  # starts on the second é; ends with one more 😀
    k = 16
    build(tmp_path, [[a, b]], k, 64)
    texts = text_bytes([[a, b]])
    for keep in ("first", "none"):
        assert np.array_equal(chunked_runs(tmp_path, keep), brute_runs([], texts, k, keep))
        for r in results(tmp_path, keep):
            data = texts[r.doc]
            for s in r.spans:
                data[s.start : s.end].decode("utf-8")  # whole characters
            assert r.text == "".join(
                data[x:y].decode() for x, y in kept_ranges([(s.start, s.end) for s in r.spans], len(data))
            )
    doc_b = results(tmp_path, "first")[1]
    assert [(s.start, s.end) for s in doc_b.spans] == [(2, 2 + len(shared[1:].encode()))]
    # a span cut inside a character is shrunk, never widened: bytes 1..5 of "aé€" are a partial é and a €
    data = "aé€b".encode()
    cut = spans_of(np.array([(2, 1, 100)], RUN), data, 0, 4, False)  # bytes 2..6: half é, €, b
    assert cut == [(3, 6, [(3, 6, 101)])]


def test_keep_first_keeps_one_copy_none_keeps_none(tmp_path):
    docs = ["intro one|" + LOREM, "intro two#" + LOREM, "intro three%" + LOREM + "| outro"]
    build(tmp_path, [docs], 100, 4096)
    first = results(tmp_path, "first")
    none = results(tmp_path, "none")
    assert [r.text for r in first] == [docs[0], "intro two#", "intro three%| outro"]
    assert [r.text for r in none] == ["intro one|", "intro two#", "intro three%| outro"]
    assert all(p.doc == 0 for r in first[1:] for s in r.spans for p in s.pieces)


def test_random_corpora_match_brute_force(tmp_path):
    """Small alphabets make repeats of every length; chunks as small as the window; 1-3 threads."""
    for seed in range(12):
        rng = random.Random(seed)
        alphabet = rng.choice(["ab", "abc\n", "aé😀"])
        k = rng.randint(8, 14)
        parts = [
            [
                "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 70)))
                for _ in range(rng.randint(0, 5))
            ]
            for _ in range(rng.randint(1, 3))
        ]
        work = tmp_path / str(seed)
        build(work, parts, k, rng.randint(k, 90), threads=rng.randint(1, 3))
        texts = text_bytes(parts)
        for keep in ("first", "none"):
            assert np.array_equal(chunked_runs(work, keep), brute_runs([], texts, k, keep)), (seed, keep)
            check_evidence(work, keep, texts)


def test_real_text_in_many_chunks_matches_one_suffix_array(tmp_path, fixture_texts):
    """The fixture corpora's real pages (their own repeats: navigation, licence lines, translations) in at
    least 8 chunks, against the in-memory reference."""
    docs, size = [], 0
    for t in fixture_texts:
        docs.append(t)
        size += len(t.encode("utf-8", "surrogatepass"))
        if size > 1_500_000:
            break
    k = 100
    build(tmp_path, [docs[: len(docs) // 2], docs[len(docs) // 2 :]], k, size // 9)
    assert S.read_layout(tmp_path).chunks >= 9
    texts = text_bytes([docs])
    for keep in ("first", "none"):
        ref = reference_runs([], texts, k, keep)
        assert len(ref) > 50  # natural repeats exist
        assert np.array_equal(chunked_runs(tmp_path, keep), ref)
    check_evidence(tmp_path, "first", texts)


def test_an_earlier_build_as_prior_removes_what_one_build_of_both_removes(tmp_path):
    rng = random.Random(3)
    words = LOREM.split()

    def doc() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(20, 120)))

    a_docs = [doc() for _ in range(12)]
    b_docs = [doc() for _ in range(6)] + [a_docs[2][10:300] + " new", "fresh " + a_docs[5]]
    k = 40
    a = tmp_path / "a"
    build(a, [a_docs], k, 700)
    before = {p: p.read_bytes() for p in a.rglob("*") if p.is_file()}
    b = tmp_path / "b"
    build(b, [b_docs[:4], b_docs[4:]], k, 500, priors=(a,))
    assert {p: p.read_bytes() for p in a.rglob("*") if p.is_file()} == before  # the prior is not touched
    both = tmp_path / "both"
    build(both, [a_docs + b_docs], k, 600)
    skip = sum(len(t.encode()) for t in a_docs)
    for keep in ("first", "none"):
        mine = results(b, keep)
        one = results(both, keep)[len(a_docs) :]
        if keep == "first":  # one build of both removes from B exactly what B against A removes
            assert [r.text for r in mine] == [r.text for r in one]
        ref = reference_runs([t.encode() for t in a_docs], [t.encode() for t in b_docs], k, keep)
        assert np.array_equal(chunked_runs(b, keep), ref)
        check_evidence(b, keep, text_bytes([b_docs]), text_bytes([a_docs]))
    assert skip > 0
    kept = results(b, "first")
    assert any(p.doc < 0 for r in kept for s in r.spans for p in s.pieces)  # copies named in the prior


def test_lines_widen_spans_to_whole_lines(tmp_path):
    docs = ["head\n" + LOREM + "\ntail", "other line\n" + LOREM + " more\nend"]
    build(tmp_path, [docs], 60, 4096, keep=("first",))
    r = results(tmp_path, "first", lines=True)[1]
    assert r.text == "end"
    assert [(s.start, s.end) for s in r.spans] == [(0, len(docs[1]) - 3)]


def test_plan_sizes_chunks_from_the_budget():
    p = S.plan(10**9, budget_mb=900, min_bytes=500, threads=2)
    assert p.peak_mb <= 900 and p.chunk_bytes % (1 << 20) == 0
    assert p.chunks == -(-(10**9) // p.chunk_bytes) and p.pairs == p.chunks * (p.chunks - 1) // 2
    assert p.disk_mb > 1000 and p.seconds > 0 and "chunks" in p.line()
    small = S.plan(10**9, budget_mb=400)
    assert small.chunk_bytes < p.chunk_bytes and small.pairs > p.pairs and small.peak_mb <= 400
    with pytest.raises(ValueError):
        S.plan(10**9, budget_mb=100)


def test_units_rows_and_refusals(tmp_path):
    layout = build(tmp_path / "w", [["a" * 50 + LOREM, LOREM]], 30, 100, keep=("first",))
    rows = S.units(layout, "first")
    assert [row[0].row for row in rows] == ["sort", "match", "finish", "apply"]
    n = layout.chunks
    assert len(rows[0]) == n and len(rows[1]) == n * (n - 1) // 2 and len(rows[3]) == 1
    with pytest.raises(S.SubstringsError):
        S.freeze(tmp_path / "w", 1, 31, 100)  # frozen with other settings
    with pytest.raises(S.SubstringsError):
        S.freeze(tmp_path / "x", 1, 30, 100, priors=(tmp_path / "w",))  # no part written
    S.write_part(tmp_path / "y", 0, ["text"])
    with pytest.raises(S.SubstringsError):
        S.freeze(tmp_path / "y", 1, 40, 100, priors=(tmp_path / "w",))  # another window size


KILLED = """
import os, signal, sys
from datapipe import substrings as S
done = []
def after(unit):
    done.append(unit)
    if len(done) == int(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)
S.run(sys.argv[1], keep=("first", "none"), threads=2, after=after)
"""


@pytest.mark.reliability
def test_a_killed_run_resumes_to_identical_bytes(tmp_path):
    rng = random.Random(5)
    words = LOREM.split()
    docs = [" ".join(rng.choice(words) for _ in range(rng.randint(10, 200))) for _ in range(40)]
    fresh, killed = tmp_path / "fresh", tmp_path / "killed"
    build(fresh, [docs[:20], docs[20:]], 50, 2000)
    for i, texts in enumerate([docs[:20], docs[20:]]):
        S.write_part(killed, i, texts)
    S.freeze(killed, 2, 50, 2000)
    total = sum(len(row) for row in S.units(S.read_layout(killed), "first")[:3])
    for stop in (2, total // 2, total - 1):
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(KILLED), str(killed), str(stop)], cwd=REPO, timeout=120
        )
        assert proc.returncode == -signal.SIGKILL
    (killed / "chunks" / "chunk-00099.tmp").mkdir(parents=True)  # what a kill mid-unit leaves
    S.run(killed, keep=("first", "none"), threads=2)

    def files(root: Path) -> dict[str, bytes]:
        return {
            str(p.relative_to(root)): p.read_bytes()
            for p in root.rglob("*")
            if p.is_file() and ".tmp" not in str(p)
        }

    assert files(killed) == files(fresh)
    assert [r for r in results(killed, "first")] == [r for r in results(fresh, "first")]
