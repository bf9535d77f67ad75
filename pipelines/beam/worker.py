"""Beam's Python SDK worker for local multi-process runs, ending without tearing the interpreter down.

``python -m pipelines.beam.worker`` runs Beam's own harness (``apache_beam.runners.worker.sdk_worker_main``) until
the runner closes its control stream. By then every bundle has finished and every ``DoFn.teardown`` has run (all
our outputs are written and renamed inside the bundles), so what is left of a normal exit is freeing the worker's
heap: ~0.4-0.7 s for a worker that holds fastText, spaCy and a tokenizer, and the FnApiRunner stops its workers one
after another. See :mod:`datapipe.runtime.quick_exit`.
"""

from __future__ import annotations

import sys

from datapipe.runtime.quick_exit import run_then_exit


def main() -> None:
    from apache_beam.runners.worker import sdk_worker_main

    sdk_worker_main.main(sys.argv)


if __name__ == "__main__":
    run_then_exit(main)
