"""``datapipe.io.fs`` on local paths: the same answers as fsspec's local file system, without importing fsspec."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fsspec.core import url_to_fs

from datapipe.io import fs

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A folder with what globs meet: a hidden file, a sub-folder, links (good and broken), a space in a name."""
    (tmp_path / "sub").mkdir()
    for name in (".hidden.json", "b.json", "c.JSON", "sub/d.json", "a b.json"):
        (tmp_path / name).write_bytes(b"{}")
    (tmp_path / "broken").symlink_to(tmp_path / "nothing")
    (tmp_path / "link.json").symlink_to(tmp_path / "b.json")
    (tmp_path / "dirlink").symlink_to(tmp_path / "sub")
    return tmp_path


def _fsspec_glob_split(pattern: str) -> tuple[list[str], list[tuple[str, str]]]:
    """What ``fs.glob_split`` answered when every pattern went through fsspec (the reference)."""
    fsys, path = url_to_fs(pattern)
    if any(c in path for c in "*?["):
        matches = sorted(fsys.glob(path))
    else:
        matches = [path] if fsys.exists(path) or os.path.islink(path) else []
    files, others = [], []
    for m in matches:
        if os.path.islink(m) and not os.path.exists(m):
            others.append((m, "a symlink to nothing"))
        elif fsys.isfile(m):
            files.append(m)
        else:
            others.append((m, "a folder" if fsys.isdir(m) else "not a file"))
    return files, others


PATTERNS = [
    "*",
    "*.json",
    "?.json",
    "s?b",
    "b.json",
    "broken",
    "missing",
    "missing/*",
    "b.json/*",
    "sub/*.json",
    "*/*.json",  # magic in a folder: fsspec's
    "[ab].json",  # a character class: fsspec's
    "**",  # fsspec's
    "sub/../*.json",  # not normalized: fsspec's
]


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("form", ["plain", "file://"])
def test_local_glob_is_fsspecs(tree: Path, pattern: str, form: str):
    url = f"{tree}/{pattern}" if form == "plain" else f"file://{tree}/{pattern}"
    assert fs.glob_split(url) == _fsspec_glob_split(url)


def test_local_calls_are_fsspecs(tree: Path):
    for name in ("b.json", "sub", "broken", "missing", "link.json", "dirlink"):
        path = str(tree / name)
        fsys, stripped = url_to_fs(path)
        assert fs.exists(path) == fsys.exists(stripped), name
        assert fs.isdir(path) == fsys.isdir(stripped), name
        if fsys.isfile(stripped):
            assert fs.size(path) == fsys.size(stripped), name
            assert fs.read_bytes(path) == fsys.cat_file(stripped), name
    fs.makedirs(str(tree / "new" / "deeper"))
    fs.makedirs(str(tree / "new" / "deeper"))  # again: fine
    assert (tree / "new" / "deeper").is_dir()
    fs.remove(str(tree / "new"))
    fs.remove(str(tree / "link.json"))  # the link, not what it points at
    fs.remove(str(tree / "broken"))
    fs.remove(str(tree / "missing"))  # nothing there: fine
    assert not (tree / "new").exists() and not os.path.lexists(tree / "link.json")
    assert not os.path.lexists(tree / "broken") and (tree / "b.json").exists()


def test_a_worker_that_reads_and_writes_local_files_imports_neither_fsspec_nor_scipy(tmp_path: Path):
    """A build's workers import their stack before their first task, on the build's critical path (the local
    engine's fork server: ``pipelines/local/preload.py``): that stack holds neither fsspec (local files go to
    ``os``) nor ``scipy.linalg`` and cffi (numba's BLAS probe and cffi typing, hidden while its registries fill),
    and numba's BLAS and cffi still load when asked after."""
    code = (
        "import sys\n"
        "import pipelines.local.preload\n"
        "from datapipe.io import fs\n"
        "from datapipe.io.jsonl import read_records, write_records_atomic\n"
        f"d = {str(tmp_path)!r}\n"
        "fs.makedirs(fs.join(d, 'out'))\n"
        "write_records_atomic(fs.join(d, 'out', 'part-00000.jsonl.zst'), [{'text': 'a'}])\n"
        "assert [r['text'] for u in fs.glob(fs.join(d, 'out', 'part-*')) for r in read_records(u)] == ['a']\n"
        "assert fs.exists(d) and fs.isdir(d) and fs.size(fs.join(d, 'out', 'part-00000.jsonl.zst')) > 0\n"
        "fs.remove(fs.join(d, 'out'))\n"
        "assert not {'fsspec', 'scipy.linalg', 'cffi'} & set(sys.modules), 'imported'\n"
        "from numba.np.linalg import ensure_blas\n"
        "ensure_blas()\n"
        "import cffi\n"
        "assert 'scipy.linalg' in sys.modules and cffi.FFI() is not None\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
