"""Beam's Python SDK worker for local multi-process runs, ending without tearing the interpreter down.

``python -m pipelines.beam.worker`` runs Beam's own harness (``apache_beam.runners.worker.sdk_worker_main``) until
the runner closes its control stream. By then every bundle has finished and every ``DoFn.teardown`` has run (all
our outputs are written and renamed inside the bundles), so what is left of a normal exit is freeing the worker's
heap: ~0.4-0.7 s for a worker that holds fastText, spaCy and a tokenizer, and the FnApiRunner stops its workers one
after another. See :mod:`datapipe.runtime.quick_exit`.

With ``--zygote=PATH`` (what a build's launcher asks for) the harness runs in a process forked from a parent that
has already imported it (:mod:`pipelines.beam.zygote`), and this one only waits for it; when that parent cannot
be reached, the harness runs here as before.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from pipelines.beam.harness import harness

_ZYGOTE = "--zygote="


def main() -> NoReturn:
    zygote = [a[len(_ZYGOTE) :] for a in sys.argv[1:] if a.startswith(_ZYGOTE)]
    sys.argv = [a for a in sys.argv if not a.startswith(_ZYGOTE)]
    if zygote:
        from pipelines.beam.zygote import run_in_zygote

        code = run_in_zygote(zygote[-1], sys.argv)
        if code is not None:
            os._exit(code)
    harness()


if __name__ == "__main__":
    main()
