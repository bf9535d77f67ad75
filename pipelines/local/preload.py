"""Imported by the local engine's fork server before it forks any worker (``multiprocessing``'s preload): the
stack every worker needs, loaded once and shared by the workers' pages (:mod:`datapipe.orchestrate.warm`).

Importing this module is the work: the fork server imports its preload modules by name and nothing else. The
collector is off while it imports (the imports make many objects and almost no garbage) and what they made is
frozen, so that the workers' collections never walk it and its pages stay shared after the fork.
"""

from __future__ import annotations

import gc

gc.disable()
try:
    from datapipe.orchestrate.registry import WORKER_MODULES
    from datapipe.orchestrate.warm import warm_stack

    warm_stack((*WORKER_MODULES, "pipelines.local.worker"))
except Exception:  # noqa: BLE001 - the fork server ignores only ImportError; a worker loads what it needs itself
    pass
finally:
    gc.freeze()
    gc.enable()
