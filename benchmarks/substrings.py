"""Exact-substring dedup on 1 GB of real text: exactness against a brute-force suffix array, then the whole stage
at full size in bounded memory, beside libdivsufsort's own speed on the same bytes.

**The corpus** is the text of real documentation pages from named Debian 12 packages (``PACKAGES``): LibreOffice's
help in every language Debian ships (33), the Debian Administrator's Handbook (26 languages) and Debian Reference
(11), then the manuals of Python, PostgreSQL, Git, Django, Linux 6.1, libstdc++, Boost, Qt, GLib, GTK, OpenJDK,
Rust, GHC, Erlang, Scala, SageMath, SciPy, pandas, Lazarus, CMake, LLVM, Node.js, Ruby, Octave, Maxima and
Sphinx, then Linux 6.12's (a later version of the same manual), Racket, OpenCV, PETSc, Rust's web books,
LibreOffice's, VTK's, Trilinos's, deal.II's and Castle Game Engine's API references (as many as
the cap takes). The packages are fetched by name (``apt-get download``, no root needed)
and unpacked (``dpkg -x``) into the cache folder; every HTML page is
extracted with datapipe's own extractor (``HtmlExtractor``), one document per page, packages in that order and
each package's pages by path, until ``CORPUS_MB`` MB: the same corpus on any Debian 12 machine. Its repeats are
the natural ones of documentation: navigation and footers, licence and copyright blocks, inherited API
descriptions, untranslated strings shared between languages. A machine that yields less than ``MIN_MB`` refuses
to run (a smaller corpus is not what the figures are about).

**Steps.**

1. Exactness: the first ``EXACT_MB`` MB, chunked with a budget that forces at least 8 chunks, against one
   in-memory suffix array (``datapipe.substrings.reference``): every removed window and its copy, in both keep
   modes, must be identical (``exact=1``), and so must the spans ``apply`` gives.
2. The stage at full size, in a child process (its peak resident memory is the stage's, every thread of it):
   write the parts, sort the chunks, merge every pair, finish, apply every part (``keep: first``, 500 bytes).
3. libdivsufsort alone on the same bytes, chunk by chunk (its own speed: what the stage's speed is set beside).

Timing: each side once, no warm-up, wall clock (``time.time``): the stage end to end in its child process on
``--threads`` threads (reading, writing and merging included), libdivsufsort in this process on one core around its
sort calls only. The two are set beside each other to show what the stage adds to the sort, not as a ratio to beat.

Last line: ``bench: substrings mb=M exact=E removed_frac=R rss_mb=Q mb_per_s=T``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from debian_pages import cache_root, fetch  # noqa: E402

from datapipe import HtmlExtractor, kept_ranges  # noqa: E402
from datapipe import substring_spans as spans_of  # noqa: E402
from datapipe import substrings as S  # noqa: E402
from datapipe import substrings_reference as REFERENCE  # noqa: E402

LANGS_LO = [
    "ca",
    "cs",
    "da",
    "de",
    "dz",
    "el",
    "en-gb",
    "en-us",
    "es",
    "et",
    "eu",
    "fi",
    "fr",
    "gl",
    "hi",
    "hu",
    "id",
    "it",
    "ja",
    "km",
    "ko",
    "nl",
    "om",
    "pl",
    "pt",
    "pt-br",
    "ru",
    "sk",
    "sl",
    "sv",
    "tr",
    "vi",
    "zh-cn",
    "zh-tw",
]
LANGS_GIMP = [
    "ca",
    "cs",
    "da",
    "de",
    "el",
    "en",
    "en-gb",
    "es",
    "fa",
    "fi",
    "fr",
    "hr",
    "hu",
    "it",
    "ja",
    "ko",
    "lt",
    "nl",
    "nn",
    "pt",
    "pt-br",
    "ro",
    "ru",
    "sl",
    "sv",
    "uk",
    "zh-cn",
]
LANGS_REF = ["en", "de", "es", "fr", "id", "it", "ja", "pt", "pt-br", "zh-cn", "zh-tw"]
PACKAGES = (
    *(f"libreoffice-help-{x}" for x in LANGS_LO),
    "debian-handbook",
    *(f"debian-reference-{x}" for x in LANGS_REF),
    "python3.11-doc",
    "postgresql-doc-15",
    "git-doc",
    "python-django-doc",
    "linux-doc-6.1",
    "libstdc++-12-doc",
    "libboost1.74-doc",
    "qtbase5-doc-html",
    "qtdeclarative5-doc-html",
    "libglib2.0-doc",
    "libgtk-3-doc",
    "openjdk-17-doc",
    "rust-doc",
    "ghc-doc",
    "erlang-doc",
    "scala-doc",
    "sagemath-doc",
    "python-scipy-doc",
    "python-pandas-doc",
    "lazarus-doc-2.2",
    "cmake-doc",
    "llvm-15-doc",
    "nodejs-doc",
    "ruby3.1-doc",
    "octave-doc",
    "maxima-doc",
    "sphinx-doc",
    "linux-doc-6.12",
    "racket-doc",
    "opencv-doc",
    "petsc3.18-doc",
    "rust-web-doc",
    "libreoffice-dev-doc",
    "vtk9-doc",
    "trilinos-doc",
    "libdeal.ii-doc",
    "castle-game-engine-doc",
)
CORPUS_MB = 1020  # what the benchmark reads: whole pages, in order, until this many MB (10^6 bytes)
MIN_MB = 1000  # what it was designed for: less refuses to run
EXACT_MB = 50
MIN_BYTES = 500
BUDGET_MB = 960  # the full run's memory budget (the plan's chunk size follows from it)
PART_MB = 64  # the parts (an engine's shards) the corpus is written as
MAX_PAGE = 1 << 20
HTML = (".html", ".htm", ".xhtml")


def extract_package(package: str, deb: str, root: str) -> tuple[str, int, int, int]:
    """Unpack one package, extract every HTML page (by path) into ``root/pages/PACKAGE.bin`` (the pages' UTF-8)
    and ``.lens`` (each page's length), and remove the unpacked files; returns the package, its pages, the
    pages with text and their bytes. Each package is cached by itself, so the corpus is assembled again
    without extracting anything."""
    out = Path(root) / "pages" / package
    if out.with_suffix(".json").exists():
        done = json.loads(out.with_suffix(".json").read_text())
        return package, done["pages"], done["docs"], done["bytes"]
    folder = Path(root) / "unpacked" / package
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    subprocess.run(["dpkg", "-x", deb, str(folder)], check=True)
    pages = sorted(p for p in folder.rglob("*") if p.suffix in HTML and p.is_file() and not p.is_symlink())
    extract = HtmlExtractor()
    lengths = []
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_suffix(".bin"), "wb") as f:
        for path in pages:
            data = path.read_bytes()
            if not 0 < len(data) <= MAX_PAGE:
                continue
            text = extract((data, "utf-8")).strip()
            if text:
                b = text.encode("utf-8", "surrogatepass")
                f.write(b)
                lengths.append(len(b))
    np.asarray(lengths, dtype="<i8").tofile(out.with_suffix(".lens"))
    shutil.rmtree(folder, ignore_errors=True)
    done = {"pages": len(pages), "docs": len(lengths), "bytes": sum(lengths), "deb": Path(deb).name}
    out.with_suffix(".json").write_text(json.dumps(done) + "\n")
    return package, len(pages), len(lengths), sum(lengths)


def build_corpus(root: Path, workers: int = 2) -> dict:
    """The corpus under ``root/corpus``: ``text.bin`` (pages' UTF-8), ``docs.i64`` (where each starts, and the
    end), ``corpus.json`` (packages with versions and counts). Reused when complete."""
    out = root / "corpus"
    meta_path = out / "corpus.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("corpus_mb") == CORPUS_MB and tuple(meta.get("order", ())) == PACKAGES:
            return meta
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        raise SystemExit(
            "substrings corpus: this machine has no apt-get/dpkg: the text comes from Debian packages"
        )
    # shared with the other benchmarks that download packages (debian_pages.fetch)
    debs = root.parent / "debs"
    out.mkdir(parents=True, exist_ok=True)
    limit = CORPUS_MB * 10**6
    total, starts, used = 0, [0], []
    t0 = time.time()
    with open(out / "text.bin.tmp", "wb") as f, ProcessPoolExecutor(workers) as pool:
        pending: list = []
        queue = list(PACKAGES)
        while (queue or pending) and total < limit:
            while queue and len(pending) < workers + 1:
                package = queue.pop(0)
                pending.append(pool.submit(extract_package, package, str(fetch(package, debs)), str(root)))
            package, pages, _, _ = pending.pop(0).result()
            cached = root / "pages" / package
            lengths = np.fromfile(cached.with_suffix(".lens"), dtype="<i8").tolist()
            taken = at = 0
            with open(cached.with_suffix(".bin"), "rb") as src:
                for n in lengths:
                    if total >= limit:
                        break
                    f.write(src.read(n))
                    at += n
                    total += n
                    starts.append(total)
                    taken += 1
            deb = fetch(package, debs).name
            used.append({"package": package, "deb": deb, "pages": pages, "docs": taken, "bytes": at})
            print(
                f"  corpus: {package}: {taken:,} pages, {at / 1e6:,.1f} MB (total {total / 1e6:,.0f} MB, "
                f"{time.time() - t0:,.0f} s)",
                file=sys.stderr,
                flush=True,
            )
        for fut in pending:
            fut.cancel()
    if total < MIN_MB * 10**6:
        raise SystemExit(
            f"substrings corpus: {total / 1e6:,.0f} MB of text from the packages; this benchmark was designed for "
            f"at least {MIN_MB:,} MB"
        )
    os.replace(out / "text.bin.tmp", out / "text.bin")
    np.asarray(starts, dtype="<i8").tofile(out / "docs.i64")
    meta = {
        "corpus_mb": CORPUS_MB,
        "order": list(PACKAGES),
        "bytes": total,
        "docs": len(starts) - 1,
        "used": used,
    }
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    return meta


def corpus_docs(root: Path, limit: int | None = None) -> tuple[list[int], int]:
    """The document starts (and end) of the corpus's first ``limit`` bytes (whole documents), and that size."""
    starts = np.fromfile(root / "corpus" / "docs.i64", dtype="<i8")
    if limit is not None:
        starts = starts[: int(np.searchsorted(starts, limit, "right"))]
    return starts.tolist(), int(starts[-1])


def write_parts(root: Path, work: Path, starts: list[int]) -> int:
    """Write the documents as parts of about ``PART_MB`` (an engine's shards), reading the corpus forwards."""
    part, at = 0, 0
    with open(root / "corpus" / "text.bin", "rb") as f:
        while at < len(starts) - 1:
            end = at
            while end < len(starts) - 1 and (end == at or starts[end + 1] - starts[at] <= PART_MB * 10**6):
                end += 1
            texts = (
                f.read(starts[i + 1] - starts[i]).decode("utf-8", "surrogatepass") for i in range(at, end)
            )
            S.write_part(work, part, texts)
            part, at = part + 1, end
    return part


def chunked_runs(work: Path, keep: str) -> np.ndarray:
    from numpy import concatenate, fromfile

    layout = S.read_layout(work)
    rows = [
        fromfile(work / f"runs-{keep}" / f"chunk-{c:05d}.bin", REFERENCE.RUN) for c in range(layout.chunks)
    ]
    return REFERENCE.join_runs(concatenate(rows))


def exactness(root: Path, scratch: Path) -> tuple[int, dict]:
    """Step 1: the chunked algorithm (>= 8 chunks) against one in-memory suffix array, both keep modes."""
    starts, size = corpus_docs(root, EXACT_MB * 10**6)
    work = scratch / "exact"
    shutil.rmtree(work, ignore_errors=True)
    parts = write_parts(root, work, starts)
    chunk = -(-size // 8) // (1 << 16) * (1 << 16)  # whole 64 KiB, so that 8 are not enough: 9 chunks
    S.freeze(work, parts, MIN_BYTES, chunk)
    t = time.time()
    S.run(work, keep=("first", "none"), threads=2)
    chunked_s = time.time() - t
    with open(root / "corpus" / "text.bin", "rb") as f:
        texts = [f.read(starts[i + 1] - starts[i]) for i in range(len(starts) - 1)]
    same = True
    detail: dict = {"mb": size / 1e6, "chunks": S.read_layout(work).chunks, "chunked_s": round(chunked_s, 1)}
    for keep in ("first", "none"):
        t = time.time()
        ref = REFERENCE.reference_runs([], texts, MIN_BYTES, keep)
        detail[f"reference_{keep}_s"] = round(time.time() - t, 1)
        got = chunked_runs(work, keep)
        windows = int(ref["count"].sum())
        ok = bool(np.array_equal(ref, got))
        spans_ok = ok and spans_equal(work, texts, keep, ref)
        detail[keep] = {"runs": len(ref), "windows": windows, "same_runs": ok, "same_spans": spans_ok}
        same = same and ok and spans_ok
    shutil.rmtree(work, ignore_errors=True)
    return int(same), detail


def spans_equal(work: Path, texts: list[bytes], keep: str, ref: np.ndarray) -> bool:
    """The spans ``apply`` gives from the chunked runs equal those the reference's runs give, document by
    document (``apply.spans_of`` on the reference's runs of that document)."""
    layout = S.read_layout(work)
    starts = np.concatenate([[0], np.cumsum([len(t) for t in texts])])
    got = [r for p in range(len(layout.part_bytes)) for r in S.apply_part(work, p, keep)]
    for i, result in enumerate(got):
        lo, hi = int(starts[i]), int(starts[i + 1])
        mine = ref[(ref["start"] >= lo) & (ref["start"] < hi)]
        want = [(a, b) for a, b, _ in spans_of(mine, texts[i], lo, MIN_BYTES, False)]
        if [(s.start, s.end) for s in result.spans] != want:
            return False
        kept = b"".join(texts[i][a:b] for a, b in kept_ranges(want, len(texts[i])))
        if result.text.encode("utf-8", "surrogatepass") != kept:
            return False
    return len(got) == len(texts)


def _peak_mb() -> int:
    """This process's peak resident set so far (VmHWM), in MB."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmHWM"))


def stage(root: str, work: str, budget_mb: int, threads: int) -> None:
    """Step 2, in a child process: the whole stage; prints one JSON line of its figures."""
    root_p, work_p = Path(root), Path(work)
    shutil.rmtree(work_p, ignore_errors=True)
    starts, size = corpus_docs(root_p)
    times = {}
    t0 = t = time.time()
    parts = write_parts(root_p, work_p, starts)
    times["write"] = time.time() - t
    peaks = {"write": _peak_mb()}
    plan = S.plan(size, budget_mb=budget_mb, min_bytes=MIN_BYTES, threads=threads)
    S.freeze(work_p, parts, MIN_BYTES, plan.chunk_bytes)
    rows = S.units(S.read_layout(work_p), "first")
    for row in rows[:3]:
        t = time.time()
        for unit in row:
            S.run_unit(work_p, unit, ("first",), threads)
        times[row[0].row] = time.time() - t
        peaks[row[0].row] = _peak_mb()
    t = time.time()
    removed = docs = emptied = 0
    for p in range(parts):
        for result in S.apply_part(work_p, p, "first"):
            removed += result.removed
            docs += 1
            emptied += not result.text
    times["apply"] = time.time() - t
    peaks["apply"] = _peak_mb()
    total_s = time.time() - t0
    disk = sum(f.stat().st_size for f in work_p.rglob("*") if f.is_file())
    # VmHWM, the peak of this process's own memory: getrusage's ru_maxrss also keeps the peak of the process image
    # before exec, which here is the forked benchmark (the reference suffix array it held), not the stage
    peak_mb = _peak_mb()
    shutil.rmtree(work_p, ignore_errors=True)
    print(
        json.dumps(
            {
                "bytes": size,
                "docs": docs,
                "removed": removed,
                "emptied": emptied,
                "seconds": total_s,
                "times": {k: round(v, 1) for k, v in times.items()},
                "peak_after": peaks,
                "rss_mb": peak_mb,
                "disk_bytes": disk,
                "plan": vars(plan),
            }
        ),
        flush=True,
    )


def divsufsort_speed(root: Path, chunk_bytes: int) -> float:
    """Step 3: libdivsufsort over the same bytes, in the stage's chunks: MB/s of text sorted, on one core."""
    import pydivsufsort

    size = corpus_docs(root)[1]
    seconds = 0.0
    with open(root / "corpus" / "text.bin", "rb") as f:
        for lo in range(0, size, chunk_bytes):
            data = np.frombuffer(f.read(min(chunk_bytes, size - lo)), dtype=np.uint8).copy()
            t = time.time()
            pydivsufsort.divsufsort(data)
            seconds += time.time() - t
            del data
    return size / 1e6 / seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--cache", help="where the packages and the corpus are kept (default ~/.cache/datapipe-bench)"
    )
    ap.add_argument("--work", help="scratch folder for the work folders (default: under the cache)")
    ap.add_argument("--budget-mb", type=int, default=BUDGET_MB)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip-exact", action="store_true", help="only the full run (exact=0 is then printed)")
    ap.add_argument("--corpus-only", action="store_true", help="build (or check) the corpus and stop")
    ap.add_argument("--stage", nargs=2, metavar=("ROOT", "WORK"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stage:
        stage(*args.stage, args.budget_mb, args.threads)
        return
    root = cache_root(args.cache) / "substrings"
    root.mkdir(parents=True, exist_ok=True)
    scratch = Path(args.work).resolve() if args.work else root / "work"
    scratch.mkdir(parents=True, exist_ok=True)
    t = time.time()
    meta = build_corpus(root)
    print(
        f"corpus: {meta['bytes'] / 1e6:,.0f} MB, {meta['docs']:,} pages from {len(meta['used'])} Debian packages "
        f"({time.time() - t:,.0f} s; cached in {root / 'corpus'})",
        flush=True,
    )
    if args.corpus_only:
        return
    exact, detail = (0, {}) if args.skip_exact else exactness(root, scratch)
    if detail:
        print(
            f"exactness on {detail['mb']:,.0f} MB in {detail['chunks']} chunks: {json.dumps(detail)}",
            flush=True,
        )
    proc = subprocess.run(
        [
            sys.executable,
            __file__,
            "--stage",
            str(root),
            str(scratch / "full"),
            "--budget-mb",
            str(args.budget_mb),
            "--threads",
            str(args.threads),
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"substrings: the stage failed:\n{proc.stderr[-3000:]}")
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    plan = figures["plan"]
    mb = figures["bytes"] / 1e6
    speed = mb / figures["seconds"]
    sa_speed = divsufsort_speed(root, plan["chunk_bytes"])
    print(
        f"stage: {mb:,.0f} MB, {figures['docs']:,} documents, {plan['chunks']} chunks of "
        f"{plan['chunk_bytes'] / 2**20:,.0f} MiB, {plan['pairs']} pairs, {figures['seconds']:,.0f} s "
        f"({json.dumps(figures['times'])}; peak after each step {json.dumps(figures['peak_after'])}); peak RSS {figures['rss_mb']:,.0f} MB (the stage's process, VmHWM; "
        f"plan said {plan['peak_mb']}); disk {figures['disk_bytes'] / 1e6:,.0f} MB "
        f"({figures['disk_bytes'] / figures['bytes']:.1f}x the text; plan said {plan['disk_mb']:,} MB); "
        f"{figures['emptied']:,} documents emptied",
        flush=True,
    )
    print(
        f"speed: the stage {speed:.2f} MB/s end to end; libdivsufsort alone on the same chunks {sa_speed:.2f} MB/s "
        f"(one core): the stage takes {sa_speed / speed:.1f}x the suffix arrays' own time",
        flush=True,
    )
    print(
        f"bench: substrings mb={mb:.0f} exact={exact} removed_frac={figures['removed'] / figures['bytes']:.4f} "
        f"rss_mb={figures['rss_mb']:.0f} mb_per_s={speed:.2f}"
    )


if __name__ == "__main__":
    main()
