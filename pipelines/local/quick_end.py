"""Imported by the local engine's fork server alone (the last name of its preload list): its process ends, once the
launcher has gone, without tearing its interpreter down.

The server holds the build's standard output and error (a child inherits them), so a reader of a build's output
(``build | tee log``, ``benchmarks/e2e.py``'s wrapper) sees its end only when the server has exited too. The server
leaves when the launcher does, and its teardown freed the whole stack it imported for the workers (spaCy, numba,
the stages): e2e's wrapper saw the output end 0.105-0.13 s after the build's last task, 0.075 s without the
teardown (2026-12-06). Its children (the workers) end with ``os._exit`` already, as multiprocessing ends every
child it forks; nothing in the server needs its teardown. Tests and tools that import the workers' stack import
:mod:`pipelines.local.preload`, never this.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys


def _end_now() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


atexit.register(_end_now)
