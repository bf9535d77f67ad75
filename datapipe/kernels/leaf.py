"""``@leaf``: how the compiled helpers that allocate nothing are compiled, without numba's reference counting.

Why: numba counts references to every array a compiled function is handed, with an atomic add on entry and
another on exit, even on a path that never touches the array. A helper that takes five arrays and is called
per token (a hash-table lookup, an affix search) spent ~40 ns a call on those counts alone: a special-case
lookup that is rejected by its first test took 47 ns against 3 ns compiled this way (2026-12-05, the e2e
benchmark's 97k chunks). A function compiled without the runtime cannot allocate (no ``np.empty``) and cannot
raise anything that allocates; it may read and write the arrays it is handed, which its caller keeps alive.
``_nrt`` is numba's own switch for that (private by name; ``tests/test_kernels.py`` fails if a numba release
drops it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

F = TypeVar("F", bound=Callable[..., Any])


def leaf(fn: F) -> F:
    """Compile ``fn`` (which allocates nothing) without reference counting; cached, and releasing the GIL."""
    options: dict[str, Any] = {"cache": True, "nogil": True, "_nrt": False}  # _nrt: not in numba's stubs
    return cast(F, numba.njit(**options)(fn))
