"""datatrove's own output, kept off the console: the build prints the Beam engine's lines and nothing else.

datatrove logs through loguru, to stderr: each task's pipeline, a stats dump per task and per executor (lines some
350 characters wide), ``k/N tasks completed``; 1,600 lines for the demo mixture, where the Beam engine prints 40.
While the engine runs:

* in this process, loguru's records go to Python's ``logging`` (:func:`loguru_to_logging`), so into the build's
  log file (``<output>/_logs/build-*.log``, ``datapipe.orchestrate.run.build_log``) at INFO, like Beam's, and to the
  console only at WARNING and above;
* in each local task (:class:`QuietLocalExecutor`, in its worker process or in this one), ``sys.stderr`` is the
  task's file ``logs/task_NNNNN.console`` in the executor's logging folder: what the task would have printed
  (datatrove's log lines, progress bars, Python's warnings); its full log stays ``logs/task_NNNNN.log``.

A Slurm job's stderr is already a file (``slurm_logs/`` in the executor's logging folder).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import Any

from datatrove.executor import LocalPipelineExecutor
from datatrove.utils.logging import logger, setup_default_logger
from datatrove.utils.stats import PipelineStats


def _forward(message: Any) -> None:
    """A loguru sink: the record to Python's logger of the same name, at INFO unless WARNING or above (loguru's
    SUCCESS, 25, is no level of ``logging``)."""
    record = message.record
    level = record["level"].no
    level = level if level >= logging.WARNING else logging.INFO
    exc = record["exception"]
    logging.getLogger(record["name"] or "datatrove").log(
        level, record["message"], exc_info=tuple(exc) if exc else None
    )


def loguru_to_logging() -> None:
    """Replace every loguru sink of this process (datatrove's on stderr) with :func:`_forward`, from INFO."""
    logger.remove()
    logger.add(_forward, level="INFO", format="{message}")


@contextlib.contextmanager
def datatrove_logs_to_logging() -> Iterator[None]:
    """:func:`loguru_to_logging` while the engine runs; datatrove's default sink (stderr) again after it."""
    loguru_to_logging()
    try:
        yield
    finally:
        setup_default_logger()


@contextlib.contextmanager
def task_console(executor: LocalPipelineExecutor, rank: int) -> Iterator[None]:
    """``sys.stderr`` is the task's ``logs/task_NNNNN.console`` while it runs, so the sinks datatrove adds for the
    task (and its default one, added back as the task ends) write there; then loguru forwards to ``logging``."""
    saved = sys.stderr
    with executor.logging_dir.open(f"logs/task_{rank:05d}.console", "w") as console:
        sys.stderr = console
        try:
            yield
        finally:
            logger.remove()  # the sinks on the task's file, before it closes
            sys.stderr = saved
            loguru_to_logging()


class QuietLocalExecutor(LocalPipelineExecutor):
    """datatrove's ``LocalPipelineExecutor``, each task's console output in its logging folder (see the module).
    Pickled into the worker processes by reference, so the workers run this class's methods too."""

    def _launch_run_for_rank(
        self, rank: int, ranks_q: object, completed: object = None, completed_lock: object = None
    ) -> PipelineStats:
        with task_console(self, rank):
            return super()._launch_run_for_rank(rank, ranks_q, completed, completed_lock)
