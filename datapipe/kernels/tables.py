"""Tables that the compiled passes read, built once per machine and kept on disk beside the compiled code.

Why: every worker process built the same tables before its first page of a stage, from the same inputs: English's
affix patterns taken apart for the compiled tier and the Python searches (0.15 s: Python's regular-expression
parser over spaCy's patterns, piece by piece), GPT-2's vocabulary as the interning table the tokenizer's pass reads
and the pre-tokenizer's classes of every code point (0.09 s), GPT-2 itself to learn its identity (0.08 s), the
line filters' and dedup's Unicode tables (0.04 and 0.06 s). Two workers did it all twice in every build (e2e's:
~0.8 CPU s of 14-15). Read back from here they take a few milliseconds.

What a stored table may be trusted for: the ``key`` its caller gives (the inputs: the patterns, a tokenizer's hash,
the libraries' versions that decide the result), Python's and numpy's versions, and the contents of every ``.py``
file of datapipe, which name the folder as numba's cache is named (:func:`datapipe.kernels.jit.sources_digest`,
read with the files that name numba's folder, in the process that declares the kernels: a worker inherits it). object
change to datapipe's code starts a fresh folder. A file is written whole under another name and renamed; one that
cannot be read is built again; a folder that cannot be written is not written (only time is lost). The folder is
``DATAPIPE_TABLES_DIR`` when set, else ``__pycache__/tables-<hash>`` in the package.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import sys
import unicodedata
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from datapipe.kernels.jit import PACKAGE, sources_digest

Arrays = dict[str, np.ndarray]


def tables_dir() -> Path:
    """Where tables are kept (see the module's docstring)."""
    chosen = os.environ.get("DATAPIPE_TABLES_DIR")
    return Path(chosen) if chosen else PACKAGE / "__pycache__" / f"tables-{sources_digest()}"


def _file(name: str, key: object) -> Path:
    # Python's version decides its Unicode tables (str.isalpha, unicodedata) and the re parser's output
    whole = json.dumps([key, sys.version, unicodedata.unidata_version, np.__version__], sort_keys=True)
    return tables_dir() / f"{name}-{hashlib.sha256(whole.encode()).hexdigest()[:24]}.npz"


def stored(name: str, key: object, build: Callable[[], Arrays]) -> Arrays:
    """``build()``'s arrays, read from the disk when they were built before for the same ``name`` and ``key`` (any
    JSON value: everything but datapipe's code that decides the arrays) by the same code, else built and kept."""
    path = _file(name, key)
    got = _read(path)
    if got is not None:
        return got
    arrays = build()
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        # a name of this writer's own (two workers may store the same table at once), made as any file is: the
        # umask decides who may read it, as for numba's cache beside it
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            with open(tmp, "xb") as f:
                save: Any = np.savez  # numpy's stub reads a name in **arrays as its allow_pickle flag
                save(f, **arrays)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp)
    return arrays


def _read(path: Path) -> Arrays | None:
    """The arrays of a stored file; None when there is none, or it cannot be read whole."""
    try:
        with np.load(path, allow_pickle=False) as got:
            return {k: got[k] for k in got.files}
    except (OSError, ValueError, EOFError, KeyError, TypeError, zipfile.BadZipFile):
        return None  # TypeError: a lone array (.npy), not a file of them


def text_array(value: object) -> np.ndarray:
    """A JSON value as an array (for a table that is strings, not numbers)."""
    return np.frombuffer(json.dumps(value).encode("utf-8"), dtype=np.uint8)


def array_text(array: np.ndarray) -> Any:
    """The JSON value :func:`text_array` stored."""
    return json.loads(array.tobytes().decode("utf-8"))
