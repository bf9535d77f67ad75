"""The global-phase protocol: what every engine asks of a two-phase stage (dedup, paragraphs, a quality cut-off)
before its shards run.

A two-phase stage (:class:`~datapipe.runtime.stage.TwoPhaseStage`) needs one pass over all its shards first. Its
phase is a table of rows (:data:`TaskRow`): a row's tasks may run in parallel as an engine likes, a row starts once
every task of the row before has answered, and each task is ``function(stage, plan, item)`` over what the row
shares out (the stage's shards, the plan's partitions, the earlier builds' shards a dedup reads, or ``once``). The
table of each phase lives with its stage (``datapipe.dedup.spill``, ``datapipe.quality.phase``) and is found by
name through the registry; the engines only run it. :func:`pending` is the one answer to "does this stage still
have its phase to run?", so that no engine decides it for itself.
"""

from __future__ import annotations

from collections.abc import Callable

from datapipe.runtime.stage import Stage, TwoPhaseStage

# a row of a phase's task table: (the task's name, function(stage, plan, item), what the row shares out)
TaskRow = tuple[str, Callable[..., object], str]
OVER = ("shards", "partitions", "earlier", "once")  # what a row's tasks may share out


def pending(phase: str | None, stage: Stage) -> bool:
    """Whether ``stage`` still has a global phase to run: its plan names one (``phase``, the registry's row for
    the stage) and the stage needs it and has not committed it (``_GLOBAL_SUCCESS``)."""
    return phase is not None and isinstance(stage, TwoPhaseStage) and not stage.global_done()
