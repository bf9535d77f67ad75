"""Beam's Python SDK worker for local multi-process runs, ending without tearing the interpreter down.

``python -m pipelines.beam_worker`` runs Beam's own harness (``apache_beam.runners.worker.sdk_worker_main``) until
the runner closes its control stream. By then every bundle has finished and every ``DoFn.teardown`` has run (all
our outputs are written and renamed inside the bundles), so what is left of a normal exit is only freeing the
worker's heap object by object: ~0.4-0.7 s for a worker that holds fastText, spaCy and a tokenizer, and the
FnApiRunner stops its workers one after another, so a build waited that long once per worker. Here the atexit
handlers still run (logging, multiprocessing's children), then the process ends with the harness's exit status,
as ``multiprocessing`` ends its own children.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import traceback


def main() -> None:
    code = 0
    try:
        from apache_beam.runners.worker import sdk_worker_main

        sdk_worker_main.main(sys.argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # the harness logged it already; keep the traceback on stderr as Python would
        traceback.print_exc()
        code = 1
    finally:
        try:
            atexit._run_exitfuncs()
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):  # a closed stream: nothing left to lose
                    stream.flush()
            os._exit(code)


if __name__ == "__main__":
    main()
