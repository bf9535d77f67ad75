"""How every compiled (numba) function of datapipe is compiled: ``@kernel``, and ``@leaf`` for the helpers that
allocate nothing.

**Where the compiled code is cached, and why not beside the source.** numba keeps a function's machine code in
the ``__pycache__`` beside its file and reuses it while that file's time stamp and size are unchanged, but a kernel
that calls a helper of another file carries the helper's code compiled into its own: change the helper (an edit,
or a ``git pull`` into an editable install that does not touch the caller's file) and the caller runs the old
helper, or crashes where the arguments changed. So every kernel is cached in a folder named for the contents of
all of datapipe's files that compile anything (``@kernel``, ``@leaf``): ``<package>/__pycache__/numba-<hash>``,
or numba's own choice when that is not writable. object change to compiled code, in any file, starts a fresh
folder; a change elsewhere keeps it. (A constant a kernel reads from a file that compiles nothing is frozen
into it too: keep such constants in the kernels' files.) Reading the files takes ~4 ms, once per process; the
folder is set only while a kernel is being declared, so other libraries' numba caches are left where they are.

**``@leaf``: without numba's reference counting.** numba counts references to every array a compiled function
is handed, with an atomic add on entry and another on exit, even on a path that never touches the array. A
helper that takes five arrays and is called per token (a hash-table lookup, an affix search) spent ~40 ns a call
on those counts alone: a special-case lookup rejected by its first test took 47 ns against 3 ns compiled this way
(2026-12-05, the e2e benchmark's 97k chunks). A function compiled without the runtime cannot allocate (no
``np.empty``) and cannot raise anything that allocates; it may read and write the arrays it is handed, which its
caller keeps alive. ``_nrt`` is numba's own switch for that (private by name; ``tests/test_kernels.py`` fails if a
numba release drops it).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar, cast

import numba

F = TypeVar("F", bound=Callable[..., object])
PACKAGE = Path(__file__).resolve().parents[1]
MARKS = (b"@kernel", b"@leaf")  # a file holding either compiles something


@cache
def _digests(root: Path) -> tuple[str, str]:
    """Hashes of the ``.py`` files under ``root`` that compile something, and of all of them, with their paths:
    one read of the files for both (the second names the folder of :mod:`datapipe.kernels.tables`)."""
    compiled, every = hashlib.sha256(), hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        data = path.read_bytes()
        entry = str(path.relative_to(root)).encode() + b"\0" + data + b"\0"
        every.update(entry)
        if any(mark in data for mark in MARKS):
            compiled.update(entry)
    return compiled.hexdigest()[:16], every.hexdigest()[:16]


def compiled_sources_digest(root: Path = PACKAGE) -> str:
    """A hash of every ``.py`` file under ``root`` that compiles something, with its path."""
    return _digests(root)[0]


def sources_digest(root: Path = PACKAGE) -> str:
    """A hash of every ``.py`` file under ``root``, with its path."""
    return _digests(root)[1]


def cache_dir() -> str:
    """The folder compiled code is cached in (see the module's docstring); ``NUMBA_CACHE_DIR`` when set."""
    return os.environ.get("NUMBA_CACHE_DIR") or str(
        PACKAGE / "__pycache__" / f"numba-{compiled_sources_digest()}"
    )


def _compile(fn: F, options: dict[str, Any]) -> F:
    config: Any = numba.config  # CACHE_DIR is read from the environment at import: not in numba's stubs
    before = config.CACHE_DIR
    config.CACHE_DIR = cache_dir()  # read once, as numba picks the function's cache folder
    try:
        return cast(F, numba.njit(cache=True, nogil=True, **options)(fn))
    finally:
        config.CACHE_DIR = before


def kernel(fn: F) -> F:
    """Compile ``fn`` with numba: cached (in :func:`cache_dir`), releasing the GIL."""
    return _compile(fn, {})


def leaf(fn: F) -> F:
    """Compile ``fn`` (which allocates nothing) without reference counting; cached, and releasing the GIL."""
    return _compile(fn, {"_nrt": False})
