"""Real documents for benchmarks, from what any machine with this project installed has on disk.

In a fixed order: every document of the fixture corpora (HTML extracted), then Python source files of the standard
library and of the project's virtual environment, Debian's manual pages, system Python modules, the text files
under /usr/share/doc and Perl modules: about 40,000 documents on the project's machines. Nothing is generated; a document
over ``max_bytes`` is passed over. ``documents(n)`` returns the first ``n`` (fewer if the machine has fewer).
"""

from __future__ import annotations

import argparse
import gzip
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPORA = REPO / "tests" / "fixtures" / "corpora"


def fixture_documents() -> Iterator[tuple[str, str]]:
    sys.path.insert(0, str(REPO))
    from datapipe import HtmlExtractor, ReadTally, make_shards, read_shard

    extractor = HtmlExtractor()
    formats = {".parquet": ("parquet", "content"), ".jsonl": ("jsonl", "text"), ".warc": ("warc", "")}
    for path in sorted(p for p in CORPORA.rglob("*") if p.is_file() and not p.name.endswith(".json")):
        fmt, field = next(v for k, v in formats.items() if k in path.name)
        for rec in read_shard(make_shards([str(path)], str(CORPORA))[0], "s", fmt, field, "id", ReadTally()):
            text = extractor((rec["html"], rec["charset"])) if "html" in rec else rec["text"]
            if text.strip():
                yield rec["id"], text


def _files(root: Path, pattern: str) -> Iterator[Path]:
    if root.is_dir():
        yield from sorted(root.rglob(pattern))


def disk_documents(max_bytes: int) -> Iterator[tuple[str, str]]:
    roots = [
        (Path(sysconfig.get_paths()["stdlib"]), "*.py"),
        (Path(sysconfig.get_paths()["purelib"]), "*.py"),
        (Path("/usr/share/man"), "*.gz"),
        (Path("/usr/lib/python3"), "*.py"),
        (Path("/usr/share/doc"), "*"),
        (Path("/usr/share/perl"), "*.pm"),
    ]
    for root, pattern in roots:
        for path in _files(root, pattern):
            gz = path.suffix == ".gz"
            try:
                if not path.is_file() or not 1024 <= path.stat().st_size <= max_bytes:
                    continue
                raw = gzip.decompress(path.read_bytes()) if gz else path.read_bytes()
                text = raw.decode("utf-8")
            except (OSError, UnicodeDecodeError, EOFError):
                continue
            if text.strip():
                yield str(path), text


def documents(n: int, max_bytes: int = 200_000) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for source in (fixture_documents(), disk_documents(max_bytes)):
        for doc_id, text in source:
            if doc_id in seen:
                continue
            seen.add(doc_id)
            out.append((doc_id, text))
            if len(out) >= n:
                return out
    print(f"corpus: only {len(out)} documents found on this machine (asked for {n})", file=sys.stderr)
    return out


def bench_parser(doc: str | None, **int_options: int) -> argparse.ArgumentParser:
    """A benchmark's command line: its docstring as the help and ``--name N`` for each whole-number option (a
    keyword ``seq_len=2048`` is ``--seq-len``, default 2048)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in int_options.items():
        ap.add_argument("--" + name.replace("_", "-"), type=int, default=default)
    return ap


def best_of(n: int, fn) -> float:
    """The fastest of ``n`` timed calls of ``fn`` (seconds)."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def token_mixture(work: str, docs: int, seq_len: int, weights: dict[str, float]) -> tuple[str, int]:
    """A mixture on local disk from the GPT-2 token rows of ``documents(docs)``, dealt round-robin to the
    components: one cache each (Levanter's layout) and a ``mixture.json``. Returns (manifest path, tokens)."""
    import hashlib
    import os

    sys.path.insert(0, str(REPO))
    from datapipe import CACHE_FIELD as FIELD
    from datapipe import (
        LEDGER,
        Component,
        Manifest,
        TokenizerConfig,
        fs,
        load_tokenizer,
        make_ledger,
        write_jagged,
        write_ledger,
        write_manifest,
    )

    tok = load_tokenizer(TokenizerConfig("builtin:gpt2", add_eos=True))
    rows = tok.encode_arrays([t for _, t in documents(docs)])
    comps = []
    for k, (name, weight) in enumerate(weights.items()):
        cache = os.path.join(work, name)
        n_rows, n_tokens = write_jagged(fs.join(cache, FIELD), rows[k :: len(weights)])
        write_ledger(cache, make_ledger({"part-00000": n_rows}, {"part-00000": n_tokens}, tok.identity))
        digest = hashlib.sha256(fs.read_bytes(fs.join(cache, LEDGER))).hexdigest()
        comps.append(Component(name, weight, name, n_rows, n_tokens, digest))
    write_manifest(work, Manifest("bench", 0, seq_len, tok.identity, tuple(comps)))
    return os.path.join(work, "mixture.json"), sum(c.tokens for c in comps)
