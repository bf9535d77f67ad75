"""Incremental dedup on a scale corpus: B against A's stored index removes what one build of A then B removes from B.

The crawl is ``scale_corpus.py``'s (10,000 pages, 4 shards; copies point at earlier pages, so B's shards hold
copies of A's pages and of their own). Three builds of a mixture with resiliparse extraction and exact + MinHash
(``fineweb``) dedup: ``both`` (all four shards), ``first`` (A: shards 0-1) and ``later`` (B: shards 2-3, with
``dedup: {against: [first]}``), run with A's files moved away so the later build cannot read A's text. Equal when
every B shard's removal list names the same documents for the same reasons in both, and a survivor is in A in
one exactly when it is in the other. Nothing is timed: the three builds run once each, for their removal lists.

    .venv/bin/python benchmarks/incremental.py [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]

import scale_corpus  # noqa: E402

PAGES = 10_000


def _mixture(path: Path, root: Path, files: list[str], against: str = "") -> None:
    extra = f", against: [{json.dumps(against)}]" if against else ""
    path.write_text(
        f"name: {path.stem}\ndata_root: {root}\ntokenizer: {{path: builtin:gpt2}}\nsources:\n"
        f"  web:\n    weight: 1\n    format: warc\n    paths: {json.dumps(files)}\n"
        f"    dedup: {{exact: true, minhash: {{preset: fineweb}}{extra}}}\n"
    )


def _build(mixture: Path, out: Path) -> Path:
    from pipelines.build_mixture import command

    cmd = command(str(mixture), str(out), "--direct_running_mode=multi_processing", "--direct_num_workers=2")
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"incremental: {' '.join(cmd)} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    (stage,) = (out / "web").glob("dedup-*")
    return stage


def _removals(stage: Path, shard: int) -> list:
    from datapipe import read_removals

    return read_removals(str(stage), shard)


def check(work: Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "corpus"
    meta = scale_corpus.build(corpus, PAGES)
    names = [f"web-{s:05d}.warc.gz" for s in range(meta["shards"])]
    half = len(names) // 2
    a_names, b_names = names[:half], names[half:]
    _mixture(work / "both.yaml", corpus, names)
    both = _build(work / "both.yaml", work / "out-both")
    _mixture(work / "first.yaml", corpus, a_names)
    first = _build(work / "first.yaml", work / "out-first")
    later_root = work / "later-data"  # B's files only: A's text is not there to read
    later_root.mkdir(exist_ok=True)
    for name in b_names:
        shutil.copyfile(corpus / name, later_root / name)
    _mixture(work / "later.yaml", later_root, b_names, against=str(work / "out-first"))
    later = _build(work / "later.yaml", work / "out-later")
    equal, removed_later, removed_both = True, 0, 0
    for k in range(len(b_names)):
        together, alone = _removals(both, half + k), _removals(later, k)
        removed_both, removed_later = removed_both + len(together), removed_later + len(alone)
        equal &= [(r.doc, r.id, r.reason, r.kept_id) for r in together] == [
            (r.doc, r.id, r.reason, r.kept_id) for r in alone
        ]
        equal &= [r.kept[0] < half for r in together] == [r.kept[0] < 0 for r in alone]
    in_a = sum(r.kept[0] < 0 for k in range(len(b_names)) for r in _removals(later, k))
    line = (
        f"B ({len(b_names)} shards) against A's index ({first.name}): removed {removed_later:,} documents"
        f" ({in_a:,} of them copies of A's); one build of A+B removed {removed_both:,} from B: "
        + ("equal" if equal else "DIFFERENT")
    )
    return {"equal": equal and removed_later > 0 and in_a > 0, "line": line}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", help="working folder (kept); default a temporary one, removed at the end")
    args = ap.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-incremental-"))
    try:
        res = check(work)
        print(res["line"])
        print(f"bench: incremental equal={int(res['equal'])}")
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
