"""What a build's worker processes load before their first task, done once in a parent they are forked from.

Both local engines fork their workers from a parent that has imported the stack (Beam's from
``pipelines/beam/zygote.py``, the local engine's from multiprocessing's fork server): a worker then starts in
milliseconds, sharing the parent's pages, instead of spending ~1 s of a core importing (docs/benchmarks.md). This
is the part of that stack that is not the engine's own: the stages' modules, spaCy the way the word splitters load
it (without torch) and numba's type registries.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator

# libraries the stages load only when they first use them (so that a launcher or a tool that imports a stage
# module does not pay for them) but every worker uses: each stage's removal decisions are a Parquet file
# (datapipe.runtime.decisions); the worker that writes a source's cache (the tokenize stage's finish) imported
# TensorStore at the end of the build, on its critical path: 0.4 s under Beam (e2e's 263-page build took 5.05 s
# warm against 5.50, mean of 5, alternating)
LIBRARIES = ("pyarrow.parquet", "tensorstore")


def warm_stack(modules: tuple[str, ...] = ()) -> None:
    """Import ``modules`` and :data:`LIBRARIES` (a name that does not import is left to the worker: only time is at
    stake), then load spaCy as the word splitters import it (:func:`~datapipe.languages.spacy_words.import_spacy`)
    and fill numba's registries."""
    for name in (*modules, *LIBRARIES):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    with contextlib.suppress(ImportError):
        from datapipe.languages.spacy_words import import_spacy

        import_spacy()
    # numba fills its registries (numba.np's modules, and scipy.linalg to find BLAS) when a process first calls or
    # loads a compiled function: 0.2 s, which each worker spent in its first shard (the language-ID model's load)
    # while the parent, ready early, waited (2026-12-05). A numba without this method only costs the workers that
    # time again.
    with contextlib.suppress(ImportError, AttributeError), _without(BLAS_PROBE, CFFI):
        from numba.core.registry import cpu_target

        cpu_target.target_context.refresh()
        cpu_target.typing_context.refresh()


# numba's ``numba.np.arraymath`` imports this at its own import (through all of ``scipy.linalg``: 0.1-0.15 s on this
# machine, 2026-12-05) only to decide whether ``np.correlate`` and ``np.convolve`` of floats call BLAS or its own
# loop; no datapipe kernel calls either. Hidden while the registries fill, so the flag says "its own loop"; every
# other BLAS use (``np.dot``, ``np.linalg``) imports it when a kernel using it compiles, as before.
BLAS_PROBE = "scipy.linalg.cython_blas"
# numba's typing of cffi functions imports cffi and its C parser (pycparser) as the registries fill: 15 ms of the
# fork server's preload (the start's critical path); no datapipe kernel calls a cffi function. Hidden the same way
# (numba then types none; ``import cffi`` works as before after the block, for any library that uses it).
CFFI = "cffi"


@contextlib.contextmanager
def _without(*modules: str) -> Iterator[None]:
    """``import module`` fails inside the block for each of ``modules`` (unless imported already); importable
    again after."""
    hidden = [m for m in modules if m not in sys.modules]
    for module in hidden:
        sys.modules[module] = None  # type: ignore[assignment]  # `import module` raises ImportError
    try:
        yield
    finally:
        for module in hidden:
            if sys.modules.get(module, False) is None:
                del sys.modules[module]
