"""Deduplication: signatures equal datasketch's, components equal union-find, and accuracy on real near-duplicates.

The accuracy corpus is the Debian Administrator's Handbook's pages in 26 languages: many translations are partial,
so the same page in two languages is a natural near-duplicate anywhere from J = 0 to J = 1.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from datasketch import MinHash
from hypothesis import given, settings
from hypothesis import strategies as st

from datapipe import MinHasher, normalize, read_records, read_removed
from datapipe.config.stages import MinHashConfig
from datapipe.dedup.evaluate import all_pairs_jaccard, pair_metrics
from datapipe.dedup.graph import large_star, local_components, small_star, smallest_connected
from datapipe.dedup.minhash import Shingler, estimate, s_curve
from datapipe.dedup.store import read_edges, read_removals
from tests.conftest import CORPORA, build_ok, one_source_mixture, run_build, write_mixture

HANDBOOK = sorted((CORPORA / "handbook").glob("translations-*.jsonl.zst"))


@pytest.fixture(scope="module")
def handbook():
    docs = [d for p in HANDBOOK for d in read_records(str(p))]
    shingler = Shingler(5)
    sets = [shingler(d["text"]) for d in docs]
    return docs, sets, all_pairs_jaccard([d["text"] for d in docs])


def test_normalize_like_datatrove():
    assert normalize("Héllo,  WORLD!\n3.14 apples; 42 pears…") == "hello world 0 apples 0 pears"


def test_signatures_equal_datasketch(handbook):
    _, sets, _ = handbook
    for preset in ("fineweb", "marin"):
        cfg = MinHashConfig.preset(preset)
        ours = MinHasher(cfg).signatures(sets[:40])
        for row, shingles in zip(ours, sets[:40], strict=True):
            ref = MinHash(num_perm=cfg.num_perm, seed=cfg.seed, hashfunc=lambda x: x, scheme="affine64")
            ref.update_batch([int(h) for h in shingles])
            assert np.array_equal(row, ref.hashvalues)


def test_estimates_agree_with_datasketch_over_1000_pairs(handbook):
    """Independent sketches of the same shingles: datasketch's own hashing (SHA-1 of the bytes), seed and scheme."""
    _, sets, truth = handbook
    cfg = MinHashConfig.preset("fineweb")
    sigs = MinHasher(cfg).signatures(sets)
    theirs = []
    for s in sets:
        m = MinHash(num_perm=cfg.num_perm, seed=7)
        m.update_batch([int(h).to_bytes(8, "little") for h in s])
        theirs.append(m)
    pairs = random.Random(0).sample(sorted(truth), 1000)
    diffs = [abs(estimate(sigs[i], sigs[j]) - theirs[i].jaccard(theirs[j])) for i, j in pairs]
    similar = [p for p in pairs if truth[p] >= 0.3]
    print(f"mean |ours - datasketch| over 1000 pairs: {np.mean(diffs):.4f} ({len(similar)} with J >= 0.3)")
    assert np.mean(diffs) <= 0.03


def test_s_curve():
    assert s_curve(0.8, 14, 8) == pytest.approx(1 - (1 - 0.8**8) ** 14)
    assert s_curve(0.9, 14, 8) > 0.99 > 0.05 > s_curve(0.3, 14, 8)
    assert s_curve(0.9, 26, 11) > 0.95 and s_curve(0.5, 26, 11) < 0.02


def _rounds(edges: set, rounds: int) -> dict:
    """Large-star / small-star rounds the way the pipeline runs them: group by node, rewrite, repeat."""

    def grouped(es):
        adj = defaultdict(list)
        for a, b in es:
            adj[a].append(b)
            adj[b].append(a)
        return adj

    for _ in range(rounds):
        edges = {e for u, nbrs in grouped(edges).items() for e in large_star(u, nbrs)}
        edges = {e for u, nbrs in grouped(edges).items() for e in small_star(u, nbrs)}
    roots = {}
    for u, nbrs in grouped(edges).items():
        root = min(set(nbrs) | {u})
        assert root == u or len(set(nbrs)) == 1, "not a star after the rounds"
        roots[u] = root
    return roots


@settings(max_examples=60, deadline=None)
@given(st.sets(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=80))
def test_star_rounds_equal_union_find(raw):
    edges = {((0, a), (0, b)) for a, b in raw if a != b}
    expected = local_components(edges)
    got = _rounds(edges, 12)
    assert {u: r for u, r in expected.items() if u != r} == {u: r for u, r in got.items() if u != r}


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 60), st.lists(st.tuples(st.integers(0, 59), st.integers(0, 59)), max_size=120))
def test_compiled_components_equal_union_find(n, raw):
    """The global phase's compiled components (each node's smallest connected node) are the reference union-find's,
    loops, repeats and isolated nodes included."""
    edges = [(a % n, b % n) for a, b in raw]
    a = np.array([e[0] for e in edges], dtype=np.int64)
    b = np.array([e[1] for e in edges], dtype=np.int64)
    truth = local_components(edges)
    assert smallest_connected(a, b, n).tolist() == [truth.get(x, x) for x in range(n)]


def test_compiled_components_on_a_long_chain_and_a_reversed_one():
    n = 100_000
    up = np.arange(n - 1, dtype=np.int64)
    assert not smallest_connected(up, up + 1, n).any()
    assert not smallest_connected(up[::-1] + 1, up[::-1], n).any()


def test_long_chain_converges():
    chain = {((0, i), (0, i + 1)) for i in range(300)}
    assert set(_rounds(chain, 12).values()) == {(0, 0)}


def mixture_text(verify: bool) -> str:
    stages = f"dedup: {{exact: false, minhash: {{preset: fineweb, verify: {str(verify).lower()}, keep_edges: true}}}}"
    return one_source_mixture("dd", "handbook", ["handbook/translations-*.jsonl.zst"], stages)


def _build(tmp_path: Path, verify: bool, *extra: str) -> Path:
    mix = write_mixture(tmp_path, mixture_text(verify), f"v{verify}.yaml")
    out = tmp_path / f"out-{verify}"
    proc = run_build("--mixture", str(mix), "--output", str(out), *extra)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (stage,) = (out / "handbook").glob("dedup-*")
    return stage


def test_accuracy_on_natural_near_duplicates(handbook, tmp_path):
    _, _, truth = handbook
    sizes = [sum(1 for _ in read_records(str(p))) for p in HANDBOOK]
    stage = _build(tmp_path, verify=True)
    m = pair_metrics(str(stage), truth, sizes)
    print(
        f"verified: pair recall (J >= 0.85) {m.recall:.4f} over {m.positives} pairs; edge precision {m.precision}"
    )
    assert m.recall >= 0.95
    assert m.precision == 1.0 and m.low_edges == 0
    report = json.loads((stage / "stage.json").read_text())["dedup"]
    assert report["components"] > 0 and report["largest_components"][0]["ids"][0].startswith("handbook/")
    # without verification, LSH collisions alone become edges: some join pages that are not near-duplicates
    stage = _build(tmp_path, verify=False)
    u = pair_metrics(str(stage), truth, sizes)
    print(
        f"unverified: pair recall {u.recall:.4f}; edge precision {u.precision:.4f} ({u.low_edges} of {u.edges} below 0.8)"
    )
    assert u.recall >= m.recall and u.low_edges > 0


def test_exact_and_paragraph_dedup_keep_first_occurrences(tmp_path):
    fortunes = [d["text"] for d in read_records(str(CORPORA / "fortunes" / "fortunes-en.jsonl.zst"))]
    long = [t for t in fortunes if len(t) > 120][:6]
    shared = "This paragraph is repeated in several documents, as site boilerplate tends to be."
    rows0 = [
        {"text": long[0] + "\n" + shared},  # 0: first occurrence of `shared`: keeps it
        {"text": long[1]},  # 1
        {"text": long[1].upper()},  # 2: same as 1 once normalized -> exact duplicate
    ]
    rows1 = [
        {"text": long[2] + "\n" + shared},  # loses `shared`, keeps its own text
        {"text": shared + "\n" + "Short."},  # left with too little text -> removed
        {"text": long[3]},
    ]
    data = tmp_path / "data"
    data.mkdir()
    for name, rows in (("a.jsonl", rows0), ("b.jsonl", rows1)):
        (data / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = build_ok(
        tmp_path,
        f"name: p\ndata_root: {data}\ntokenizer: {{path: builtin:gpt2}}\nsources:\n"
        "  s: {weight: 1, format: jsonl, paths: ['*.jsonl'], dedup: {exact: true, paragraphs: {min_chars: 50}}}\n",
    )
    (dd,) = (out / "s").glob("dedup-*")
    (pp,) = (out / "s").glob("paragraphs-*")
    assert json.loads((dd / "stage.json").read_text())["counts"]["removed"] == {"dedup/exact": 1}
    counts = json.loads((pp / "stage.json").read_text())["counts"]
    assert counts["removed"] == {"paragraphs/too_little_left": 1}
    (row,) = read_removed(str(pp)).to_pylist()
    assert row["value"] < row["threshold"] == 50 and row["evidence"].startswith("chars_left="), row
    assert counts["counters"]["paragraphs/lines_removed"] == 2
    texts = [d["text"] for p in sorted(pp.glob("part-*.jsonl.zst")) for d in read_records(str(p))]
    assert texts == [long[0] + "\n" + shared, long[1], long[2], long[3]]


def test_components_that_need_more_rounds_run_again(handbook, tmp_path):
    """Forty windows over one real text, each shifted six words from the one before: consecutive windows are
    near-duplicates (Jaccard ~0.88), windows two apart are not (~0.78), so the duplicates form one path in file
    order, which needs six large-star/small-star rounds. The build's first attempt runs four; the dedup stage and
    those after it must run again with eight and come out as union-find says."""
    docs, _, _ = handbook
    words = max((d["text"] for d in docs), key=lambda t: len(t.split())).split()
    assert len(words) >= 6 * 40 + 100
    data = tmp_path / "data"
    data.mkdir()
    rows = [{"text": " ".join(words[6 * i : 6 * i + 100])} for i in range(40)]
    (data / "windows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    stages = "dedup: {exact: false, minhash: {preset: fineweb, keep_edges: true}}"
    mix = write_mixture(tmp_path, one_source_mixture("w", "s", ["'*.jsonl'"], stages, root=str(data)))
    out = tmp_path / "out"
    proc = run_build("--mixture", str(mix), "--output", str(out), "--global-shuffle", "beam")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "components need more rounds: again with 8" in proc.stdout
    files = tmp_path / "files"  # the file shuffle (the DirectRunner's default) finds the components in one go
    proc = run_build("--mixture", str(mix), "--output", str(files))
    assert proc.returncode == 0 and "more rounds" not in proc.stdout, proc.stderr[-3000:]
    assert_same_decisions(out / "s", files / "s")
    (stage,) = (out / "s").glob("dedup-*")
    edges = read_edges(str(stage))
    roots = local_components((a, b) for a, b, _ in edges)
    assert len(set(roots.values())) == 1 and len(roots) >= 30  # one long path, as built
    report = json.loads((stage / "stage.json").read_text())
    assert report["dedup"]["cc_rounds"] == 8 and report["dedup"]["components"] == 1
    assert report["counts"]["removed"] == {"dedup/minhash": sum(1 for u, r in roots.items() if u != r)}
    kept = [d["id"] for p in sorted(stage.glob("part-*.jsonl.zst")) for d in read_records(str(p))]
    assert kept == [f"windows.jsonl:{i}" for i in range(40) if roots.get((0, i), (0, i)) == (0, i)]
    assert (out / "mixture.json").exists()


def assert_same_decisions(a: Path, b: Path) -> None:
    """Two builds of one source made the same dedup decisions and kept the same bytes: every removal list, edge
    file, ``components.json`` and part file of each stage folder is identical (reports may differ in figures)."""
    names = ("removals/*.json", "edges/*.json", "components.json", "part-*.jsonl.zst")
    stages = sorted(p.name for p in a.iterdir() if p.is_dir())
    assert stages == sorted(p.name for p in b.iterdir() if p.is_dir())
    for stage in stages:
        for pattern in names:
            left = {p.relative_to(a): p.read_bytes() for p in (a / stage).glob(pattern)}
            right = {p.relative_to(b): p.read_bytes() for p in (b / stage).glob(pattern)}
            assert left == right, (stage, pattern)


def _reference_shingles(text: str, n: int = 5) -> np.ndarray:
    """Shingles from datatrove's own normalization, hashed word by word in plain Python (slow, obviously right)."""
    from datatrove.utils.text import TextNormConfig, simplify_text

    m64 = (1 << 64) - 1

    def mix(z: int) -> int:
        z ^= z >> 30
        z = (z * 0xBF58476D1CE4E5B9) & m64
        z ^= z >> 27
        z = (z * 0x94D049BB133111EB) & m64
        return z ^ (z >> 31)

    words = []
    for w in simplify_text(text, TextNormConfig()).split():
        h = 0
        for c in w.encode("utf-8"):
            h = (h * 0x100000001B3 + c) & m64
        words.append(mix(h ^ ((len(w.encode("utf-8")) << 56) & m64)))
    if not words:
        return np.zeros(0, dtype=np.uint64)
    k = min(n, len(words))
    out = set()
    for s in range(len(words) - k + 1):
        acc = words[s]
        for t in range(1, k):
            acc = (acc * 0x9E3779B97F4A7C15 + words[s + t]) & m64
        out.add(mix(acc))
    return np.array(sorted(out), dtype=np.uint64)


def test_shingles_are_datatrove_words(fixture_texts):
    sample = fixture_texts[::9] + [t for t in fixture_texts if not t.isascii()][:60]
    assert sum(not t.isascii() for t in sample) >= 60
    shingler = Shingler(5)
    for text in sample:
        want = _reference_shingles(text)
        assert np.array_equal(shingler(text), want), text[:200]
        # the stage's path when exact dedup has normalized the text already
        assert np.array_equal(shingler.of_normalized(normalize(text).encode("utf-8")), want), text[:200]


def test_report_figures_combine_in_any_split():
    """The global phase's report combiner gives the same figures however the runner splits and merges its input."""
    from datapipe.dedup.components import LARGEST
    from pipelines.beam.dedup import ReportFigures

    rng = random.Random(3)
    figures = []
    for i in range(400):
        kind = rng.choice(["sum", "max", "component"])
        if kind == "component":
            size = rng.randint(2, 40)
            figures.append((kind, "", (size, [[rng.randint(0, 7), i]] + [[9, j] for j in range(size - 1)])))
        else:
            figures.append((kind, rng.choice(["a", "b", "c"]), rng.randint(0, 1000)))
    fn = ReportFigures()

    def run(parts):
        accs = []
        for part in parts:
            acc = fn.create_accumulator()
            for f in part:
                acc = fn.add_input(acc, f)
            accs.append(acc)
        return fn.extract_output(fn.merge_accumulators(accs))

    whole = run([figures])
    cuts = sorted(rng.sample(range(1, len(figures)), 6))
    split = run([figures[a:b] for a, b in zip([0, *cuts], [*cuts, len(figures)], strict=True)])
    assert whole == split
    sums = defaultdict(int)
    for kind, name, v in figures:
        if kind == "sum":
            sums[name] += v
    comps = [v for kind, _, v in figures if kind == "component"]
    assert whole["sum"] == dict(sums) and sum(whole["histogram"].values()) == len(comps)
    assert [c[0] for c in whole["largest"]] == sorted((c[0] for c in comps), reverse=True)[:LARGEST]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=150), st.integers(2, 20))
def test_bucket_pairs_join_copies_without_quadratic_pairs(contents, cap):
    """Members with equal content (identical shingle sets) join the first of them; the firsts pair as before. Every
    member ends up connected to every other, as with all pairs, and copies add one pair each."""
    from datapipe.dedup.graph import bucket_pairs

    members = [((i % 3, i), c) for i, c in enumerate(contents)]
    members.sort()
    pairs = list(bucket_pairs(members, cap))
    roots = local_components(pairs)
    refs = [m[0] for m in members]
    assert len(refs) == 1 or {roots.get(r, r) for r in refs} == {min(refs)}
    distinct = len(set(contents))
    firsts = distinct * (distinct - 1) // 2 if distinct <= cap else 2 * distinct - 3
    assert len(pairs) == (len(members) - distinct) + max(0, firsts)
    assert len(set(pairs)) == len(pairs) and all(a < b for a, b in pairs)


def test_dedup_against_an_earlier_build_removes_what_one_build_of_both_removes(tmp_path):
    """A (one handbook file, and near copies of some of its pages, which A removes) is built; then B (the other
    file, plus copies of pages of both, and exact copies of the near copies that A removed) is deduplicated against
    A's stored index. B loses exactly the documents, for exactly the reasons, that one build of A then B removes
    from B; its survivors in A are named by negative shard numbers, and A's text is not read again. Every removal
    names documents by the input's ids, and its kept copy is always a document that its build kept (issue 39
    items 9 and 10: a copy of a page that A removed names the page A kept, not the removed one)."""
    data = tmp_path / "data"
    data.mkdir()
    a_file, b_file = HANDBOOK
    for p in HANDBOOK:
        (data / p.name).write_bytes(p.read_bytes())
    a_docs, b_docs = list(read_records(str(a_file))), list(read_records(str(b_file)))
    near = [{"id": f"near-{i}", "text": d["text"] + " (mirror)"} for i, d in enumerate(a_docs[20:23])]
    (data / "a-near.jsonl").write_text("".join(json.dumps(r) + "\n" for r in near))
    copies = [{"text": d["text"].upper()} for d in a_docs[:6] + b_docs[:4]]  # exact once normalized
    copies += [{"text": d["text"] + " (mirror)"} for d in a_docs[10:14]]  # near copies
    copies += [{"text": d["text"].upper()} for d in near]  # exact copies of documents A removed
    (data / "copies.jsonl").write_text("".join(json.dumps(r) + "\n" for r in copies))

    def build(name: str, paths: list[str], against: str = "") -> Path:
        extra = f", against: [{against}]" if against else ""
        mix = write_mixture(
            tmp_path,
            f"name: {name}\ndata_root: {data}\ntokenizer: {{path: builtin:gpt2}}\nsources:\n"
            f"  s: {{weight: 1, format: jsonl, paths: {json.dumps(paths)},\n"
            f"      dedup: {{exact: true, minhash: {{preset: fineweb}}{extra}}}}}\n",
            f"{name}.yaml",
        )
        out = tmp_path / name
        proc = run_build("--mixture", str(mix), "--output", str(out))
        assert proc.returncode == 0, proc.stderr[-3000:]
        (stage,) = (out / "s").glob("dedup-*")
        return stage

    a_paths, b_paths = [a_file.name, "a-near.jsonl"], [b_file.name, "copies.jsonl"]
    both = build("both", a_paths + b_paths)
    first = build("first", a_paths)
    (data / a_file.name).unlink()  # the later build must not read A's text
    later = build("later", b_paths, against=str(tmp_path / "first"))

    def removals(stage: Path, shard: int) -> list:
        return read_removals(str(stage), shard)

    def kept_ids(stage: Path) -> set[str]:
        return {d["id"] for p in stage.glob("part-*.jsonl.zst") for d in read_records(str(p))}

    assert {r.id for r in removals(first, 1)} == {r["id"] for r in near}  # A removed its near copies
    survivors_a, survivors_both = kept_ids(first), kept_ids(both)
    in_a = []
    for shard in (0, 1):
        together, alone = removals(both, shard + 2), removals(later, shard)
        assert [(r.doc, r.id, r.reason) for r in together] == [(r.doc, r.id, r.reason) for r in alone]
        # a survivor in A: shards 0-1 of the one build, shard -2 or -1 (A's two shards) of the later build
        assert [r.kept[0] < 2 for r in together] == [r.kept[0] < 0 for r in alone]
        assert [r.kept_id for r in together] == [r.kept_id for r in alone]
        assert all(r.kept_id in survivors_both for r in together)
        assert all(r.kept_id in (survivors_a if r.kept[0] < 0 else kept_ids(later)) for r in alone)
        in_a += [r for r in alone if r.kept[0] < 0]
    copies_of_near = [r for r in in_a if r.id in {f"copies.jsonl:{14 + i}" for i in range(len(near))}]
    assert len(copies_of_near) == len(near)  # removed, each naming a page A kept, not A's removed near copy
    assert not {r.kept_id for r in in_a} & {r["id"] for r in near}
    assert removals(later, 1) and any(
        r.reason == "dedup/minhash" for r in removals(later, 0) + removals(later, 1)
    )
    report = json.loads((later / "stage.json").read_text())["dedup"]
    assert report["against"] == [{"stage": str(first), "shards": 2}]
    kept_both = [d["id"] for p in sorted(both.glob("part-0000[23].jsonl.zst")) for d in read_records(str(p))]
    kept_later = [d["id"] for p in sorted(later.glob("part-*.jsonl.zst")) for d in read_records(str(p))]
    assert kept_both == kept_later


@settings(max_examples=300, deadline=None)
@given(
    st.sets(st.integers(0, 2**64 - 1), max_size=60),
    st.sets(st.integers(0, 2**64 - 1), max_size=60),
    st.sets(st.integers(0, 2**64 - 1), max_size=20),
)
def test_jaccard_counts_shared_shingles_as_a_set_intersection_does(a, b, both):
    """The merge count (stored shingle sets are sorted and distinct, and read-only when read from a store) against
    Python's own sets, with shared values drawn in."""
    from datapipe.dedup.minhash import jaccard

    a, b = a | both, b | both
    left = np.frombuffer(np.array(sorted(a), dtype=np.uint64).tobytes(), dtype="<u8")
    right = np.array(sorted(b), dtype=np.uint64)
    want = 1.0 if not a and not b else len(a & b) / len(a | b)
    assert jaccard(left, right) == want
    assert jaccard(right, left) == want


_REF = st.tuples(st.integers(-2, 3), st.integers(0, 5))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_REF, _REF), max_size=80))
def test_candidate_pairs_are_made_distinct_and_sorted_as_np_unique_makes_them(pairs):
    """The verify task's pairs (an earlier build's shard is negative): the same records, in the same order."""
    from datapipe.dedup.spill import PAIR, unique_pairs

    records = np.array([(sa, da, sb, db) for (sa, da), (sb, db) in pairs], dtype=PAIR)
    got, want = unique_pairs(records), np.unique(records)
    assert got.dtype == want.dtype
    assert got.tolist() == want.tolist()


def test_shingle_store_keeps_the_sets_read_last_within_its_byte_budget(tmp_path):
    """Sets read again come from memory (the same values), never more than ``cache_bytes`` of them are held, and
    a set larger than the budget is read each time."""
    from datapipe.dedup.store import ShingleStore, write_shingles

    rng = np.random.default_rng(0)
    sets = [np.unique(rng.integers(0, 2**63, size=n, dtype=np.uint64)) for n in (10, 40, 25, 5, 200)]
    write_shingles(str(tmp_path), 0, sets)
    budget = 8 * 60  # room for the first two sets, not for the last one
    store = ShingleStore(str(tmp_path), cache_bytes=budget)
    for order in ([0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [1, 1, 4, 0, 2]):
        for i in order:
            assert store.get((0, i)).tolist() == sets[i].tolist()
            assert store._held == sum(s.nbytes for s in store._sets.values()) <= budget
    assert (0, 4) not in store._sets  # 1,600 bytes: over the budget, never held
    store.get((0, 3))
    first = store.get((0, 3))
    assert store.get((0, 3)) is first  # from memory
    assert all(
        ShingleStore(str(tmp_path), cache_bytes=0).get((0, i)).tolist() == s.tolist()
        for i, s in enumerate(sets)
    )
