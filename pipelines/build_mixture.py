"""Build a mixture: ``python -m pipelines.build_mixture ARGS`` is ``datapipe build ARGS`` (see its --help).

The launcher is :mod:`datapipe.orchestrate.launch`; the engines it offers are registered as entry points
(``pipelines.beam.entry``, ``pipelines.datatrove.entry``). This module stays as the launcher's runnable name, which
also ends the process without tearing the interpreter down (:mod:`datapipe.runtime.quick_exit`).
"""

from __future__ import annotations

# a local build's fork server starts before the launcher's imports (see start_early)
if __name__ == "__main__":
    import sys

    from pipelines.local.server import start_early

    start_early(sys.argv[1:])

from datapipe.orchestrate.launch import command, main, run  # noqa: E402 - after the fork server's start

__all__ = ["command", "main", "run"]

if __name__ == "__main__":
    import sys

    from datapipe.runtime.quick_exit import run_then_exit

    run_then_exit(lambda: main(sys.argv[1:], prog="python -m pipelines.build_mixture"))
