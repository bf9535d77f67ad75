"""Run a planned build on datatrove's executors: ``build_mixture --engine datatrove --executor local|slurm|ray``.

Every stage that is not done becomes a few executors (``pipelines/datatrove/steps.py``): its global phase if it has
one (dedup: signatures -> buckets -> clusters; paragraphs: line keys -> buckets -> removals; quality cut-off: keys ->
cut-off), then its shards, then a one-task finish that writes ``stage.json`` and ``_SUCCESS``. The stage folders,
markers, manifest and caches are the ones the Beam engine writes, byte for byte; datatrove's own logs, stats and
completion markers go to ``<output>/_datatrove/<source>/<stage dir>/<phase>/tasks-<T>/``, so a rerun after a kill
skips the tasks datatrove marked complete and the shards datapipe committed.

The console gets the Beam engine's lines (``report_stage``), nothing of datatrove's: its logs go to the build's log
and the tasks' log folders (``pipelines/datatrove/logs.py``).

Locally each executor runs in turn (``LocalPipelineExecutor``, ``--workers`` processes); on Ray likewise
(``RayPipelineExecutor``: each task an actor on any node of the cluster, ``--ray-address`` or a cluster of this
machine alone; a task whose node dies is run again elsewhere, up to three times). On Slurm the executors form one
chain of array jobs (each depends on the one before, ``afterok``); this process submits it and waits for the jobs,
then writes the manifest like a local build. Which executor runs a phase is one table (:data:`IN_TURN`), not a
switch.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from datapipe.config.mixture import MixtureConfig
from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.orchestrate.plan import SourcePlan, StagePlan, global_phase, make_stage
from datapipe.orchestrate.progress import WaveProgress
from datapipe.orchestrate.registry import phase_tasks
from datapipe.orchestrate.run import StageReport, watched
from datapipe.runtime.phase import pending
from datapipe.runtime.stage import TwoPhaseStage, is_done, remove_temporaries
from pipelines.datatrove.executors import EXECUTORS

SLURM_ANSWER_S = 20  # how long the preflight waits for the Slurm controller
LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class DatatroveOptions:
    """How datatrove runs the stages (``--executor`` and its flags)."""

    executor: str = "local"
    tasks: int | None = None  # per stage; default: one per shard
    workers: int | None = None  # local: processes at once (default: the CPU count)
    buckets: int = 4  # tasks of the dedup / paragraph bucket phases
    partition: str | None = None
    qos: str | None = None
    time: str = "01:00:00"
    cpus_per_task: int = 1
    mem_per_cpu_gb: int = 2
    poll_s: float = 2.0
    ray_address: str | None = (
        None  # ray: an existing cluster (HOST:PORT, or "auto"); default: one on this machine
    )

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise DatapipeError(f"--executor {self.executor!r}: choose one of {', '.join(EXECUTORS)}")
        for name in ("tasks", "workers", "buckets", "cpus_per_task", "mem_per_cpu_gb"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise DatapipeError(f"--{name.replace('_', '-')} must be >= 1 (got {value})")
        if self.executor == "slurm" and not self.partition:
            raise DatapipeError("--executor slurm needs --partition (the Slurm partition to submit to)")
        if self.ray_address is not None and self.executor != "ray":
            raise DatapipeError("--ray-address is a flag of --executor ray")


@dataclass(frozen=True)
class Job:
    """One executor: a phase of one stage."""

    label: str
    phase: str
    pipeline: list[object]
    tasks: int
    logging_dir: str


def phase_steps(phase: str) -> tuple[tuple[str, Any, str], ...]:
    """The executors of the global phase the registry names ``phase``: one :class:`steps.PhaseTask` per row of the
    phase's task table (``datapipe.orchestrate.registry.phase_tasks``), as (phase folder, step factory, what its tasks
    share out: ``shards``, ``partitions``, ``earlier`` shards, or ``once``). A step factory takes (stage, shards,
    scratch folder). datatrove is imported here, only when something runs."""
    from functools import partial

    from pipelines.datatrove import steps

    return tuple((task[0], partial(steps.PhaseTask, task=task), task[2]) for task in phase_tasks(phase))


def stage_jobs(mixture: MixtureConfig, sp: SourcePlan, st: StagePlan, opts: DatatroveOptions) -> list[Job]:
    """The executors that bring one stage to ``_SUCCESS``, in order. A phase gets no more tasks than it has items
    (a task with nothing to do still costs a process start, a Slurm array element), and a phase with no items
    (``earlier`` without ``dedup.against``) none."""
    from datapipe.dedup.spill import Spill
    from pipelines.datatrove import steps  # datatrove is imported only when something runs

    stage = make_stage(mixture, sp, st)
    base = fs.join(mixture.output, "_datatrove", sp.source.name, st.dirname)
    label = f"{sp.source.name}/{st.stage}"
    shards = tuple(st.shards)
    per_shard = max(1, min(opts.tasks or len(shards), len(shards)))

    def job(phase: str, step: object, n: int) -> Job:
        # datatrove's completion markers name ranks, which mean other shards under another task count
        return Job(label, phase, [step], n, fs.join(base, phase, f"tasks-{n}"))

    jobs = []
    phase = global_phase(sp, st)
    if pending(phase, stage):
        assert phase is not None and isinstance(stage, TwoPhaseStage)
        scratch = fs.join(base, "scratch")
        plan = Spill.of(scratch, shards, stage)
        items = {over: len(them) for over, them in plan.items(shards).items()}
        width = {"shards": per_shard, "partitions": opts.buckets, "earlier": opts.buckets, "once": 1}
        for folder, step, over in phase_steps(phase):
            if items[over]:
                jobs.append(job(folder, step(stage, shards, scratch), min(width[over], items[over])))
    jobs += [
        job("shards", steps.StageShards(stage, shards), per_shard),
        job("finish", steps.FinishStage(stage, shards, st.record()), 1),
    ]
    return jobs


def _local(job: Job, opts: DatatroveOptions):
    from pipelines.datatrove.logs import QuietLocalExecutor

    return QuietLocalExecutor(
        pipeline=job.pipeline,
        tasks=job.tasks,
        workers=min(job.tasks, opts.workers or os.cpu_count() or 1),
        logging_dir=job.logging_dir,
        skip_completed=True,
    )


def _ray(job: Job, opts: DatatroveOptions):
    from datatrove.executor.ray import RayPipelineExecutor
    from loguru import logger

    # its warning that the logging folder is local, once per executor: docs/running-on-ray.md says what every node
    # must see (the output folder, logs included, at one path or URL)
    logger.disable("datatrove.executor.ray")
    try:
        return RayPipelineExecutor(
            pipeline=job.pipeline,
            tasks=job.tasks,
            workers=min(job.tasks, opts.workers or job.tasks),
            logging_dir=job.logging_dir,
            skip_completed=True,
            cpus_per_task=opts.cpus_per_task,
            mem_per_cpu_gb=opts.mem_per_cpu_gb,
        )
    finally:
        logger.enable("datatrove.executor.ray")


# the executors that run a stage's phases one after another, in this process: executor name -> factory
IN_TURN = {"local": _local, "ray": _ray}


def _slurm(job: Job, opts: DatatroveOptions, depends):
    from datatrove.executor import SlurmPipelineExecutor

    # a job starts from the submitting shell's environment: enter this virtual environment (datatrove's
    # launch_pickled_pipeline is on its PATH) and this checkout (the pickled steps import datapipe and pipelines)
    here = os.getcwd()
    activate = os.path.join(sys.prefix, "bin", "activate")
    enter = f"source {shlex.quote(activate)} && " if os.path.exists(activate) else ""
    return SlurmPipelineExecutor(
        pipeline=job.pipeline,
        tasks=job.tasks,
        time=opts.time,
        partition=opts.partition,
        cpus_per_task=opts.cpus_per_task,
        mem_per_cpu_gb=opts.mem_per_cpu_gb,
        qos=opts.qos or "",
        job_name=f"datapipe-{job.label.replace('/', '-')}-{job.phase}",
        logging_dir=job.logging_dir,
        slurm_logs_folder=fs.join(job.logging_dir, "slurm_logs"),
        skip_completed=True,
        depends=depends,
        env_command=f"{enter}cd {shlex.quote(here)} && export PYTHONPATH={shlex.quote(here)}:${{PYTHONPATH:-}}",
    )


class DatatroveEngine:
    """``--engine datatrove`` (``datapipe.orchestrate.run.Engine``): the same stages on datatrove's local or Slurm
    executor."""

    in_memory_shuffle = False  # the global phases shuffle through files

    def __init__(self, opts: DatatroveOptions) -> None:
        self.opts = opts
        self.runner = f"datatrove-{opts.executor}"
        self.workers = opts.workers or (os.cpu_count() or 1) if opts.executor == "local" else opts.tasks or 1

    def check(self, mixture: MixtureConfig) -> None:
        """Said before any work: Ray installed and its cluster reachable; Slurm's tools installed, the controller
        answering and the partition known to it (otherwise the first submission fails after the work before it)."""
        if self.opts.executor == "ray":
            from pipelines.datatrove.ray import check_ray

            check_ray(self.opts.ray_address)
        if self.opts.executor != "slurm":
            return
        missing = [tool for tool in ("sbatch", "squeue", "sinfo") if shutil.which(tool) is None]
        if missing:
            raise DatapipeError(
                f"--executor slurm: {', '.join(missing)} not found on PATH (is Slurm installed?)"
            )
        try:
            found = subprocess.run(
                ["sinfo", "-h", "-p", str(self.opts.partition), "-o", "%P"],
                capture_output=True,
                text=True,
                timeout=SLURM_ANSWER_S,
            )
        except subprocess.TimeoutExpired:
            raise DatapipeError(
                f"--executor slurm: the Slurm controller did not answer within {SLURM_ANSWER_S} s (sinfo)"
            ) from None
        if found.returncode != 0:
            said = (found.stderr.strip().splitlines() or ["no message"])[-1]
            raise DatapipeError(f"--executor slurm: the Slurm controller cannot be reached (sinfo: {said})")
        if not found.stdout.strip():
            raise DatapipeError(f"--partition {self.opts.partition}: no such Slurm partition (see sinfo)")

    def run(self, mixture: MixtureConfig, plans: list[SourcePlan], report_stage: StageReport) -> None:
        run_datatrove(mixture, plans, self.opts, report_stage)


def run_datatrove(
    mixture: MixtureConfig, plans: list[SourcePlan], opts: DatatroveOptions, report_stage: StageReport
) -> None:
    """Bring every stage to ``_SUCCESS`` on datatrove; ``report_stage(sp, st, seconds)`` prints each one's line, the
    Beam engine's, and nothing else reaches the console: datatrove's records go to the build's log
    (``pipelines/datatrove/logs.py``), and a failed task is one line naming its log."""
    from pipelines.datatrove.logs import datatrove_logs_to_logging

    todo = [(sp, st) for sp in plans for st in sp.stages if not st.done]
    if not todo:
        return
    with datatrove_logs_to_logging(), _cluster(opts):
        if opts.executor == "slurm":
            _run_slurm(mixture, todo, opts, report_stage)
            return
        for sp, st in todo:
            t0 = time.perf_counter()
            remove_temporaries(st.out_dir)  # left by a run killed mid-write
            with WaveProgress(watched([(sp, st)]), lambda _i, _s: None):
                for job in stage_jobs(mixture, sp, st, opts):
                    run_in_turn(job, opts)
                    log_peaks(sp, st, job)
            if not is_done(st.out_dir):
                raise DatapipeError(f"{st.out_dir}: datatrove finished without the stage's _SUCCESS")
            report_stage(sp, st, time.perf_counter() - t0)


def _cluster(opts: DatatroveOptions):
    """The Ray cluster the build's tasks run on, joined for the build (a no-op for the other executors)."""
    if opts.executor != "ray":
        return contextlib.nullcontext()
    from pipelines.datatrove.ray import joined

    return joined(opts.ray_address)


def run_in_turn(job: Job, opts: DatatroveOptions) -> None:
    """One executor (``IN_TURN``: local processes, or Ray actors). A task that fails stops the build with one line:
    a :class:`DatapipeError` as it is, anything else with the phase and the folder of the task logs holding its
    traceback (``logs/task_NNNNN.log``). Ray's executor returns when it gives up on a task instead of raising: the
    tasks it left incomplete are that line too."""
    executor = IN_TURN[opts.executor](job, opts)
    try:
        executor.run()
    except DatapipeError:
        raise
    except Exception as e:
        said = (str(e).strip().splitlines() or [""])[0]
        raise DatapipeError(
            f"{job.label} {job.phase}: a datatrove task failed ({type(e).__name__}: {said}); "
            f"its traceback is in {fs.join(job.logging_dir, 'logs')}/"
        ) from None
    left = executor.get_incomplete_ranks(range(job.tasks))
    if left:
        raise DatapipeError(
            f"{job.label} {job.phase}: {len(left)} of {job.tasks} datatrove task(s) did not finish (first: task "
            f"{left[0]}); their logs are in {fs.join(job.logging_dir, 'logs')}/"
        )


def log_peaks(sp: SourcePlan, st: StagePlan, job: Job) -> None:
    """One line per executor in the build's log once its stage is done: its phase, tasks and largest task."""
    LOG.info("  %-18s %-18s %s: %s", sp.source.name, st.dirname, job.phase, task_peaks(job.logging_dir))


def task_peaks(logging_dir: str) -> str:
    """``N task(s), largest process X MiB`` from the ``peak_rss_mb`` each task recorded in datatrove's stats."""
    import json

    peaks = []
    for url in fs.glob(fs.join(logging_dir, "stats", "*.json")):
        for step in json.loads(fs.read_text(url)):
            value = step.get("stats", {}).get("peak_rss_mb")
            if isinstance(value, dict):
                peaks.append(int(value.get("total", 0)))
    return f"{len(peaks)} task(s), largest process {max(peaks, default=0):,} MiB"


def _run_slurm(
    mixture: MixtureConfig,
    todo: list[tuple[SourcePlan, StagePlan]],
    opts: DatatroveOptions,
    report_stage: StageReport,
) -> None:
    """Submit one chain of dependent array jobs (later stages are planned now, so they can be queued now), then
    wait: the jobs' states from ``squeue``, the stages' progress from their ``_SUCCESS`` markers."""
    t0 = time.perf_counter()
    executors: list[Any] = []
    jobs: dict[str, list[Job]] = {}
    for sp, st in todo:
        remove_temporaries(st.out_dir)
        # a later stage's global phase is planned now, not yet done
        jobs[st.out_dir] = stage_jobs(mixture, sp, st, opts)
        for job in jobs[st.out_dir]:
            executors.append(_slurm(job, opts, executors[-1] if executors else None))
    executors[-1].run()  # submits the whole chain, first job first
    job_ids = [str(e.job_id) for e in executors if getattr(e, "job_id", None)]
    reported: set[str] = set()
    with WaveProgress(watched(todo), lambda _i, _s: None):  # lines for the stages under way; reports below
        _wait_slurm(mixture, todo, jobs, job_ids, reported, opts, report_stage, t0)


def _wait_slurm(
    mixture: MixtureConfig,
    todo: list[tuple[SourcePlan, StagePlan]],
    jobs: dict[str, list[Job]],
    job_ids: list[str],
    reported: set[str],
    opts: DatatroveOptions,
    report_stage: StageReport,
    t0: float,
) -> None:
    while True:
        for sp, st in todo:
            if st.out_dir not in reported and is_done(st.out_dir):
                reported.add(st.out_dir)
                report_stage(sp, st, time.perf_counter() - t0)
                for job in jobs[st.out_dir]:
                    log_peaks(sp, st, job)
        if len(reported) == len(todo):
            return
        queued = subprocess.run(
            ["squeue", "-h", "-o", "%i", "-j", ",".join(job_ids)], capture_output=True, text=True
        )
        if queued.returncode == 0 and not queued.stdout.strip():
            time.sleep(opts.poll_s)  # a marker written just before the job left the queue
            if all(is_done(st.out_dir) for _, st in todo):
                continue
            missing = next(st for _, st in todo if not is_done(st.out_dir))
            raise DatapipeError(
                f"slurm jobs {','.join(job_ids)} left the queue but {missing.out_dir} has no _SUCCESS; "
                f"see the task logs under {fs.join(mixture.output, '_datatrove')}"
            )
        time.sleep(opts.poll_s)
