"""Run a planned build on this machine's processes, without Beam: ``build_mixture --engine local --processes N``.

The same work as the other engines, in the same order, through the same functions: each source's remaining
stages in turn, a stage's global phase first (its task table, ``datapipe.orchestrate.registry.phase_tasks``, row after
row, a row's tasks at once), then its shards (``run_shard``), then ``finish_stage`` (``stage.json``, ``_SUCCESS``).
The stage folders, markers, manifest and caches are the Beam engine's, byte for byte; the global phases' scratch
files go where the Beam engine's file shuffle puts them (``<stage>/_spill/``), removed once the phase commits.
Sources are independent: their chains run side by side, a free process taking the next task of any chain.

Why a third engine: on one machine Beam's DirectRunner is most of a small build's fixed cost (its start, its graph,
a barrier per step, its end: ``benchmarks/beam_floor.py`` measures 1.96 s for the build's pipeline shape with steps
that do nothing). Here the launcher only schedules: tasks and their results (shard descriptors, statistics) travel
over one pipe per process, never document text. The processes are forked from multiprocessing's fork server,
started when the engine is made, which imports the workers' stack (:mod:`pipelines.local.preload`) while the
launcher checks and plans; each process keeps a stage's resources from its first task of that stage to the
stage's end (:mod:`pipelines.local.worker`). A process with nothing to do (while another runs a step only one
process can, or a stage's last shard) warms up a stage its chain has still to reach
(:class:`~datapipe.runtime.stage.Warms`: the filters' word splitter, the quality classifiers, the tokenizer's
tables), once per process and in no more processes than the stage has tasks: those loads took each process
0.07-0.27 s of its first shard of the stage, with the other process waiting or working alone; a warm-up belongs to
no row and holds none up. On e2e's 1x build, nine alternating runs in two series: means 7.72 and 7.95 s against
8.02 and 8.16 s without (2026-12-06).

Failures and stops: a task that raises stops the build with one line (a :class:`DatapipeError` as it is, anything
else with its stage, shard or phase and the build log holding its traceback); a process that dies (the OOM killer)
is one line naming its task, unless it died on an item the launcher watches: extraction's pages run in the worker
itself, each marked on a watch the launcher reads (:mod:`datapipe.runtime.watch`), and a worker still on a page past
``extract.timeout_s`` is killed; either way the process is replaced and its shard runs again with that page removed
as ``extract/timeout`` or ``extract/crash`` (what the extraction sandbox records on the other engines), one line
in the build log. Ctrl-C reaches the launcher, which ends the processes; what they committed stays, and
a rerun resumes from it as on the other engines (a half-written file is a ``.tmp-*`` the next run removes).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, NamedTuple

from datapipe.config.mixture import MixtureConfig
from datapipe.dedup.spill import SCRATCH, Spill
from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.orchestrate.plan import SourcePlan, StagePlan, global_phase, make_stage
from datapipe.orchestrate.progress import WaveProgress
from datapipe.orchestrate.registry import phase_tasks
from datapipe.runtime.phase import pending
from datapipe.runtime.stage import Stage, Supervised, TwoPhaseStage, Warms, is_done, remove_temporaries
from datapipe.runtime.watch import CRASH, FIELDS, TIMEOUT, Mark, Watch
from pipelines.local.server import check_processes, start_fork_server

LOG = logging.getLogger(__name__)

# a task: (kind, arguments, what it is, for a failure's line); a chain yields a row of tasks and is sent their
# results, in the row's order, when every one has finished
Task = tuple[str, tuple[Any, ...], str]
Chain = Generator[list[Task], list[object], None]
POLL_S = 0.25  # the longest the launcher waits before it looks at the watch again (see Pool._wait_s)


class LocalEngine:
    """``--engine local`` (``datapipe.orchestrate.run.Engine``)."""

    in_memory_shuffle = False  # the global phases shuffle through files
    runner = "local"

    def __init__(self, processes: int | None = None, ctx: object = None) -> None:
        """``ctx``: the fork server's context, if the caller started it (the launcher does, before it plans and
        before this module's imports); else it starts when the build runs."""
        check_processes(processes)
        self.workers = processes or os.cpu_count() or 1
        self.ctx = ctx

    def check(self, mixture: MixtureConfig) -> None:
        """Nothing this engine needs can be missing on a machine that planned the build."""

    def run(self, mixture: MixtureConfig, plans: list[SourcePlan], report_stage: Any) -> None:
        todo = [(sp, st) for sp in plans for st in sp.stages if not st.done]
        if not todo:
            return
        from datapipe.orchestrate.run import LOGS, watched

        with WaveProgress(watched(todo), lambda i, s: report_stage(*todo[i], s)) as progress:
            ahead = Ahead(todo, {st.out_dir: make_stage(mixture, sp, st) for sp, st in todo})
            chains = [source_chain(sp, ahead) for sp in plans if any(not st.done for st in sp.stages)]
            logs = fs.join(mixture.output, LOGS)
            with Pool(self.ctx or start_fork_server(), min(self.workers, _widest(todo)), logs) as pool:
                pool.run(chains, on_finish=progress.check, upcoming=ahead.upcoming)
        for _, st in todo:  # what the scheduler says it ran is checked, not trusted, before the manifest
            if not is_done(st.out_dir):
                raise DatapipeError(f"{st.out_dir}: the local engine finished without the stage's _SUCCESS")


def _widest(todo: list[tuple[SourcePlan, StagePlan]]) -> int:
    """The most tasks a row can have (a process beyond that would never get one)."""
    return max(max(len(st.shards), 1) for _, st in todo) * len({sp.source.name for sp, _ in todo})


class Upcoming(NamedTuple):
    """A stage to warm up: the kind of its first tasks (``phase`` when it runs a global phase, else ``shard``: a
    process keeps one instance of a stage per kind, :mod:`pipelines.local.worker`) and how many of them there are
    (the most processes that can use a warm-up: a stage of one shard runs on one)."""

    stage: Stage
    kind: str
    tasks: int


@dataclass
class Ahead:
    """The build's stages that are not done, made when it starts, and the one each source's chain is on: what a
    process that would otherwise wait may warm up (:meth:`upcoming`)."""

    todo: list[tuple[SourcePlan, StagePlan]]
    stages: dict[str, Stage]  # stage folder -> its stage object, the one its tasks carry
    at: dict[str, str] = field(default_factory=dict)  # source -> the folder of the stage its chain is on

    def upcoming(self) -> list[Upcoming]:
        """Every stage a chain has still to reach that can warm up (:class:`Warms`), nearest first."""
        out: list[Upcoming] = []
        reached = {src: False for src in self.at}
        for sp, st in self.todo:
            src = sp.source.name
            if src not in reached:  # its chain has not started yet
                continue
            if not reached[src]:
                reached[src] = st.out_dir == self.at[src]
                continue
            stage = self.stages[st.out_dir]
            if isinstance(stage, Warms):
                kind = "phase" if _runs_phase(sp, st, stage) else "shard"
                out.append(Upcoming(stage, kind, max(len(st.shards), 1)))
        return out


def _runs_phase(sp: SourcePlan, st: StagePlan, stage: Stage) -> bool:
    """Whether the stage's chain runs a global phase before its shards (what :func:`source_chain` asks)."""
    return pending(global_phase(sp, st), stage)


def source_chain(sp: SourcePlan, ahead: Ahead) -> Chain:
    """A source's stages that are not done, as rows of tasks (see the module's docstring)."""
    for st in sp.stages:
        if st.done:
            continue
        remove_temporaries(st.out_dir)  # left by a run killed mid-write
        stage = ahead.stages[st.out_dir]
        ahead.at[sp.source.name] = st.out_dir
        name = f"{sp.source.name}/{st.stage}"
        phase = global_phase(sp, st)
        scratch = fs.join(stage.out_dir, SCRATCH)
        if phase is not None and _runs_phase(sp, st, stage):
            assert isinstance(stage, TwoPhaseStage)
            stage.reset_global()
            spill = Spill.of(scratch, tuple(st.shards), stage)
            items = spill.items(st.shards)
            for row, fn, over in phase_tasks(phase):
                yield [
                    ("phase", (stage, spill, fn, item), f"{name} {row} {_what(item)}".rstrip())
                    for item in items[over]
                ]
        if phase is not None:
            fs.remove(scratch)  # committed (now, or by a run killed before it could remove it)
        stats = yield [("shard", (stage, shard), f"{name} {shard.part}") for shard in st.shards]
        yield [("finish", (stage, list(st.shards), stats, st.record()), f"{name} finish")]


def _what(item: object) -> str:
    part = getattr(item, "part", None)
    return part if part is not None else "" if item is None else f"#{item}"


@dataclass
class _Row:
    chain: Chain
    left: int
    results: list[object] = field(default_factory=list)


class Pool:
    """``processes`` worker processes, each with its pipe; :meth:`run` hands a free one the next task of any
    chain and advances a chain when its row is done."""

    def __init__(self, ctx: Any, processes: int, logs: str = "<output>/_logs") -> None:
        """``logs``: the build log's folder, named in a failed task's line."""
        self.ctx = ctx
        self.logs = logs
        self.cells = ctx.RawArray("d", FIELDS * processes)  # the watch: a slot per process (zeroed)
        self.watches = [Watch(self.cells, p) for p in range(processes)]
        self.procs: list[Any] = [None] * processes
        self.conns: list[Connection] = []
        self.warmed: set[tuple[int, str, str]] = set()  # (process, stage folder, kind) warmed up
        for p in range(processes):
            self.conns.append(self._start(p))

    def _start(self, p: int) -> Connection:
        """Process ``p`` started (again), with slot ``p`` of the watch; returns the launcher's end of its pipe."""
        from pipelines.local.worker import serve

        ours, theirs = self.ctx.Pipe()
        proc = self.ctx.Process(
            target=serve, args=(theirs, self.cells, p), daemon=True, name="datapipe-local-worker"
        )
        proc.start()
        theirs.close()
        self.procs[p] = proc
        return ours

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:  # done: each process lets its stages go and exits
            for conn in self.conns:
                with contextlib.suppress(OSError):  # one that died idle has nothing to let go
                    conn.send(None)
            for proc in self.procs:
                proc.join()
        else:  # stopped (Ctrl-C, a failed task): nothing more of theirs is wanted
            for proc in self.procs:
                proc.terminate()
            for proc in self.procs:
                proc.join()
        for conn in self.conns:
            conn.close()

    def run(
        self,
        chains: list[Chain],
        on_finish: Any,
        upcoming: Callable[[], list[Upcoming]] | None = None,
    ) -> None:
        """Run the chains' rows; ``upcoming`` (:meth:`Ahead.upcoming`): stages a process with nothing to do warms
        up before their tasks reach it (:meth:`_warm_up`; a warm-up belongs to no row and waits for none)."""
        queue: deque[tuple[_Row, int, Task]] = deque()
        retired: set[str] = set()
        busy: dict[int, tuple[_Row | None, int, Task]] = {}  # process -> its task (row None: a warm-up)
        # process -> when its task was sent (each task's time goes to the build log)
        sent: dict[int, float] = {}
        limits = [0.0] * len(self.procs)  # process -> the time limit of its task's items (0: none)

        def advance(chain: Chain, results: list[object] | None) -> None:
            """Queue the chain's next row (its first when ``results`` is None; else the row before's results)."""
            try:
                tasks = chain.send(results) if results is not None else next(chain)
            except StopIteration:
                return
            row = _Row(chain, len(tasks), [None] * len(tasks))  # one for the row: its tasks count it down
            queue.extend((row, i, t) for i, t in enumerate(tasks))
            if not tasks:  # a row without items (``earlier`` without dedup.against)
                advance(chain, [])

        for chain in chains:
            advance(chain, None)
        number = 0
        while queue or busy:
            for p in range(len(self.procs)):
                if p in busy:
                    continue
                if queue:
                    busy[p] = queue.popleft()
                elif upcoming is not None and (warm := self._warm_up(p, upcoming())) is not None:
                    busy[p] = (None, 0, warm)
                else:
                    continue
                kind, args, _ = busy[p][2]
                number += 1
                limits[p] = (
                    args[0].item_limit_s if kind == "shard" and isinstance(args[0], Supervised) else 0.0
                )
                sent[p] = time.perf_counter()
                # one that died after its last answer fails to take it; its sentinel says so below
                with contextlib.suppress(OSError):
                    self.conns[p].send((number, kind, args, frozenset(retired)))
            marks = {p: self.watches[p].read() for p in busy}
            ready = wait(
                [*(self.conns[p] for p in busy), *(self.procs[p].sentinel for p in busy)],
                timeout=self._wait_s(marks, limits),
            )
            overdue = self._stop_overdue(marks)
            for p in [
                p for p in busy if self.conns[p] in ready or self.procs[p].sentinel in ready or p in overdue
            ]:
                row, i, task = busy.pop(p)
                kind, args, what = task
                try:
                    if p in overdue:
                        self.procs[p].join()  # its end closes its pipe: an answer it sent first is still read
                    _, ok, result, peak = self.conns[p].recv()
                except (EOFError, OSError):
                    again = self._after_death(p, task, overdue.get(p))
                    assert row is not None  # a warm-up's process that died raised its one line
                    queue.appendleft((row, i, again))
                    continue
                if p in overdue:  # it answered as it was stopped: the answer stands, the process is replaced
                    self._replace(p)
                if row is None and not ok:  # the stage's own tasks load what they need themselves
                    LOG.info("  %s failed; its tasks will load for themselves:\n%s", what, result)
                    continue
                if not ok:
                    raise _failure(what, result, self.logs)
                LOG.info(
                    "  %s: %.3f s (process %d, largest so far %d MiB)",
                    what,
                    time.perf_counter() - sent[p],
                    p,
                    peak,
                )
                if row is None:
                    continue
                row.results[i] = result
                row.left -= 1
                if row.left == 0:
                    if kind == "finish":
                        retired.add(args[0].out_dir)
                        on_finish()
                    advance(row.chain, row.results)

    def _warm_up(self, p: int, stages: list[Upcoming]) -> Task | None:
        """A warm-up of the nearest of ``stages`` that process ``p`` has not warmed up and fewer processes than it
        has tasks have, or None."""
        for stage, kind, tasks in stages:
            if (p, stage.out_dir, kind) in self.warmed:
                continue
            if sum(w[1:] == (stage.out_dir, kind) for w in self.warmed) < tasks:
                self.warmed.add((p, stage.out_dir, kind))
                return "warm", (stage, kind), f"{stage.source}/{stage.name} warm-up"
        return None

    @staticmethod
    def _wait_s(marks: dict[int, Mark | None], limits: list[float]) -> float | None:
        """How long to wait for an answer before looking at the watch again: until the first deadline of an item a
        process is on, and since a process may start an item meanwhile, at most a tenth of the limit of a busy
        process's items (an item is stopped within 10% of its limit after it) and :data:`POLL_S`; None (until an
        answer) when no busy process has items under a limit."""
        now, wait_s = time.monotonic(), None
        for p, mark in marks.items():
            if limits[p] > 0:
                due = mark.deadline - now if mark is not None else min(limits[p] / 10, POLL_S)
                wait_s = due if wait_s is None else min(wait_s, due)
        return None if wait_s is None else max(wait_s, 0.0)

    def _stop_overdue(self, marks: dict[int, Mark | None]) -> dict[int, Mark]:
        """Kill each process still on the item it was on before the wait, past that item's limit."""
        now, overdue = time.monotonic(), {}
        for p, mark in marks.items():
            if mark is not None and now >= mark.deadline and self.watches[p].read() == mark:
                self.procs[p].kill()
                overdue[p] = mark
        return overdue

    def _after_death(self, p: int, task: Task, stopped: Mark | None) -> Task:
        """The task again, for a process that ended without answering while on an item of a supervised shard,
        that item recorded as failed (``TIMEOUT`` if the launcher stopped it there, else ``CRASH``); a process that
        died elsewhere stops the build with one line."""
        kind, args, what = task
        mark = self.watches[p].read()
        # one that left the item as it was stopped did not fail there: its shard runs again as it was
        if stopped is not None and mark != stopped:
            why, mark = None, stopped
        else:
            why = TIMEOUT if stopped is not None else CRASH
        if mark is None or kind != "shard":
            raise DatapipeError(
                f"{what}: its worker process died ({_how(self.procs[p])}; out of memory?); "
                "rerun to resume from what was committed"
            ) from None
        stage, shard, *before = args
        failed = dict(before[0]) if before else {}
        if why is not None:
            failed[mark.item] = why
            LOG.info(
                "  %s: item %d %s; the process was replaced and the shard runs again without it",
                what,
                mark.item,
                f"ran past its {mark.limit:g} s" if why == TIMEOUT else f"ended it ({_how(self.procs[p])})",
            )
        self._replace(p)
        return kind, (stage, shard, failed), what

    def _replace(self, p: int) -> None:
        self.warmed = {w for w in self.warmed if w[0] != p}  # the new process starts cold
        self.procs[p].join()
        self.conns[p].close()
        self.watches[p].clear()
        self.conns[p] = self._start(p)


def _how(proc: Any) -> str:
    proc.join(timeout=10)  # its pipe closed as it died: its status follows
    code = proc.exitcode
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit status {code}"


def _failure(what: str, error: object, logs: str) -> DatapipeError:
    """The one line for a failed task: its own, or its last traceback line with the traceback in the build log."""
    if isinstance(error, DatapipeError):
        return error
    LOG.info("%s failed:\n%s", what, error)
    last = (str(error).strip().splitlines() or ["no message"])[-1]
    return DatapipeError(f"{what}: {last} (the traceback is in the build's log, {logs}/)")
