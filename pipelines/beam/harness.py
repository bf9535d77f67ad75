"""Beam's Python SDK harness, run until the runner closes its control stream, then a quick exit: what a worker
process runs, started cold (:mod:`pipelines.beam.worker`) or forked from a warm parent (:mod:`pipelines.beam.zygote`).
"""

from __future__ import annotations

import sys
from typing import NoReturn

from datapipe.runtime.quick_exit import run_then_exit


def _harness_main() -> None:
    from apache_beam.runners.worker import sdk_worker_main

    sdk_worker_main.main(sys.argv)


def harness() -> NoReturn:
    """Beam's harness with ``sys.argv`` and the environment as they are, then a quick exit."""
    from pipelines.beam.sampling import sample_often

    sample_often()  # a bundle's end does not wait up to 200 ms for Beam's sampler thread
    run_then_exit(_harness_main)
