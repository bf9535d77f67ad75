"""``build_mixture --engine local``: the Beam engine's bytes and lines without Beam, resumable after Ctrl-C, a
failed task or a dead process as one line, and a page that hangs or kills its process removed as the extraction
sandbox removes it."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from unittest import mock

import pytest

from datapipe import DatapipeError
from tests.conftest import (
    CORPORA,
    REPO,
    engine_cmd,
    run_build,
    small_build_fixture,
    tree_digest,
    write_mixture,
)
from tests.test_datatrove_engine import comparable
from tests.test_reliability import _committed, interrupt_at, kill_mix  # noqa: F401 - a fixture, used by name

local = engine_cmd("local")


local_small = small_build_fixture("local", "--processes", "2")


def test_writes_what_beam_writes_and_prints_its_lines(built_small, local_small):
    beam_out, beam = built_small
    out, proc = local_small
    assert (out / "mixture.json").read_bytes() == (beam_out / "mixture.json").read_bytes()
    theirs, ours = comparable(beam_out), comparable(out)
    assert sorted(ours) == sorted(theirs)
    assert sum("/tokenize-" in p for p in theirs) > 10
    assert [p for p in theirs if ours[p] != theirs[p]] == []
    assert not list(out.rglob("_spill"))  # the global phases' scratch files are gone once committed
    # each task's time and its process's largest resident set go to the build's log
    build_log = "".join(p.read_text() for p in (out / "_logs").glob("build-*.log"))
    tasks = re.findall(
        r" (\S+/\S+) (part-\d+|finish|signatures part-\d+): [\d.]+ s \(process \d, largest so far (\d+) MiB\)",
        build_log,
    )
    committed = list(out.glob("*/*/part-*.stats.json"))
    assert len([t for t in tasks if t[1].startswith("part-")]) == len(committed)
    assert all(50 < int(mb) < 4096 for *_, mb in tasks)
    assert proc.stderr.strip() == "", proc.stderr[-2000:]

    def same(text: str, folder: Path) -> list[str]:  # but for the output folder, times and the stages' order
        text = text.replace(str(folder), "OUT")
        return sorted(re.sub(r" ran in +[\d.]+s ", " ran in ", s) for s in text.splitlines())

    assert same(proc.stdout, out) == same(beam.stdout, beam_out)
    assert sum(" ran in " in s for s in proc.stdout.splitlines()) == len(list(out.glob("*/*/stage.json")))


def test_the_experiment_record_names_the_commit_the_build_ran(local_small):
    """``experiment.json``'s commit is asked as the build begins (not after its last stage): the checkout's."""
    from datapipe.report.lineage import git_commit

    out, _ = local_small
    commit = git_commit()
    assert commit is not None  # the tests run in a git checkout
    assert json.loads((out / "experiment.json").read_text())["git_commit"] == commit


def test_rerun_skips_everything(small_mixture, local_small):
    out, _ = local_small
    before = {k: v for k, v in tree_digest(out).items() if "experiment" not in k}
    proc = run_build("--mixture", str(small_mixture), "--output", str(out), "--engine", "local")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert " ran in " not in proc.stdout and "skipped (cached)" in proc.stdout
    assert {k: v for k, v in tree_digest(out).items() if "experiment" not in k} == before


def test_ctrl_c_is_one_line_and_the_rerun_is_identical(kill_mix, tmp_path):  # noqa: F811 - the fixture
    """Ctrl-C (SIGINT to the whole foreground group) half way: exit 130, the one ``interrupted:`` line, no
    traceback and no process left; the rerun resumes and writes the uninterrupted (Beam) build's bytes."""
    mix, ref, seconds = kill_mix
    out = tmp_path / "out"
    interrupt_at(local(mix, out), out, _committed(ref)[1] // 2, seconds)  # the fork server ended too
    rerun = subprocess.run(local(mix, out), cwd=REPO, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert re.search(r"^resuming: \d+ of \d+ shards already committed", rerun.stdout, re.M)
    drop = ("experiment.json",)
    assert {k: v for k, v in tree_digest(out).items() if not k.endswith(drop)} == {
        k: v for k, v in tree_digest(ref).items() if not k.endswith(drop)
    }


# --- the pool on its own: tasks that fail, a process that dies -------------------------------------------------


class _Stage:
    out_dir = "nowhere"


def _raises_value_error(stage, spill, item):
    raise ValueError(f"item {item} cannot be read")


def _raises_datapipe_error(stage, spill, item):
    raise DatapipeError(f"shard {item}: field 'text' is not a string")


def _dies(stage, spill, item):
    os.kill(os.getpid(), signal.SIGKILL)


def _fine(stage, spill, item):
    return None


def _chain(fn):
    yield [("phase", (_Stage(), None, _fine, i), f"src/stage fine #{i}") for i in range(3)]
    yield [("phase", (_Stage(), None, fn, i), f"src/stage rows #{i}") for i in range(2)]


def _touch(stage, folder, item):
    (folder / f"{item}").write_text("")


def _rows(folder, log):
    """Three rows of one chain: each starts once every task of the row before has answered."""
    got = yield [("phase", (_Stage(), folder, _touch, f"a{i}"), f"a{i}") for i in range(3)]
    log.append((sorted(p.name for p in folder.iterdir()), got))
    got = yield []  # a row without items goes straight on
    log.append(got)
    got = yield [("phase", (_Stage(), folder, _touch, "b"), "b")]
    log.append((sorted(p.name for p in folder.iterdir()), got))


def test_rows_wait_for_the_row_before_and_chains_run_side_by_side(ctx, tmp_path):
    from pipelines.local.engine import Pool

    logs: list[list] = [[], []]
    folders = [tmp_path / "x", tmp_path / "y"]
    for f in folders:
        f.mkdir()
    with Pool(ctx, 2) as pool:
        pool.run([_rows(f, log) for f, log in zip(folders, logs, strict=True)], on_finish=lambda: None)
    for log in logs:
        assert log == [(["a0", "a1", "a2"], [None] * 3), [], (["a0", "a1", "a2", "b"], [None])]


class _Later:
    """A later stage that warms up: its instance remembers it, and a file says which process did."""

    out_dir = "later"
    source = "src"
    name = "later"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.warmed = False

    def warm(self) -> None:
        self.warmed = True
        (self.folder / f"warm-{os.getpid()}").write_text("")


def _waits_for_a_warm_up(stage, folder, item):
    """The one task of a serial row: it ends once the other process has warmed the later stage up (an event, not
    a time: a busy machine only makes it wait longer)."""
    deadline = time.monotonic() + 120
    while not list(folder.glob("warm-*")) and time.monotonic() < deadline:
        time.sleep(0.01)
    (folder / f"serial-{os.getpid()}").write_text("")


def _records_its_instance(stage, folder, item):
    (folder / f"task-{item}-{os.getpid()}-{'warm' if stage.warmed else 'cold'}").write_text("")


def _serial_row_then_a_later_stage(ctx, folder: Path, later: _Later, tasks: int) -> list[str]:
    """One chain on two processes: a serial row (its task waits for a warm-up of ``later``), then ``tasks`` tasks
    of ``later``, which is upcoming until the chain reaches it; the names of the files the processes left."""
    from pipelines.local.engine import Pool, Upcoming

    reached: list[bool] = []

    def chain():
        yield [("phase", (_Stage(), folder, _waits_for_a_warm_up, "serial"), "src/first serial")]
        reached.append(True)
        yield [("phase", (later, folder, _records_its_instance, i), f"src/later #{i}") for i in range(tasks)]

    with Pool(ctx, 2) as pool:
        pool.run(
            [chain()],
            on_finish=lambda: None,
            upcoming=lambda: [] if reached else [Upcoming(later, "phase", 2)],
        )
    return sorted(p.name for p in folder.iterdir())


def test_a_process_with_nothing_to_do_warms_up_a_later_stage_for_its_own_tasks(ctx, tmp_path):
    """While one process runs a serial row, the other warms the next stage up, once; the later row's tasks on that
    process run on the warmed instance, and the row itself waits for no warm-up."""
    names = _serial_row_then_a_later_stage(ctx, tmp_path, _Later(tmp_path), 6)
    warm = [n.split("-")[1] for n in names if n.startswith("warm-")]
    serial = [n.split("-")[1] for n in names if n.startswith("serial-")]
    assert len(warm) == 1 and serial != warm, names  # the idle process, once
    tasks = [n.split("-")[1:] for n in names if n.startswith("task-")]
    assert len(tasks) == 6
    assert all((state == "warm") == (pid == warm[0]) for _, pid, state in tasks), names


class _FailsToWarm(_Later):
    def warm(self) -> None:
        (self.folder / f"warm-{os.getpid()}").write_text("")
        raise ValueError("no model here")


def test_a_failed_warm_up_is_logged_and_the_stage_runs_as_without_one(ctx, tmp_path, caplog):
    """A warm-up that raises stops nothing: the build log says so and the stage's tasks load for themselves."""
    caplog.set_level(logging.INFO)
    names = _serial_row_then_a_later_stage(ctx, tmp_path, _FailsToWarm(tmp_path), 2)
    tasks = [n for n in names if n.startswith("task-")]
    assert len(tasks) == 2 and all(t.endswith("-cold") for t in tasks)
    assert "src/later warm-up failed; its tasks will load for themselves" in caplog.text
    assert "ValueError: no model here" in caplog.text


def test_a_stage_is_warmed_up_by_no_more_processes_than_it_has_tasks(tmp_path):
    """A stage of one shard runs on one process: a second warm-up of it would be loading for nothing."""
    from types import SimpleNamespace

    from pipelines.local.engine import Pool, Upcoming

    pool = SimpleNamespace(warmed=set())
    one, two = _Later(tmp_path), _Later(tmp_path)
    two.out_dir = "later-two"
    stages = [Upcoming(one, "shard", 1), Upcoming(two, "shard", 2)]
    order = (0, 1, 0, 1, 0)
    got = [Pool._warm_up(pool, p, stages) for p in order]  # type: ignore[arg-type]
    warmed = [None if t is None else (t[1][0].out_dir, p) for t, p in zip(got, order, strict=True)]
    assert warmed == [("later", 0), ("later-two", 1), ("later-two", 0), None, None]


def test_stages_warm_up_without_writing(small_mixture, tmp_path):
    """Each stage that warms up (filters, quality, tokenize) loads what its first shard loads and writes nothing:
    a warm-up may run before the stage's input exists."""
    from datapipe.config.mixture import load_mixture
    from datapipe.orchestrate.plan import check_inputs, make_stage, plan_mixture
    from datapipe.runtime.stage import Warms
    from datapipe.tokenize.tokenizer import load_tokenizer

    mixture = load_mixture(str(small_mixture), output=str(tmp_path / "out"))
    sources = mixture.select(None)
    plans = plan_mixture(
        mixture, sources, check_inputs(mixture, sources), load_tokenizer(mixture.tokenizer).identity.sha256
    )
    warmed = set()
    for sp in plans:
        for st in sp.stages:
            stage = make_stage(mixture, sp, st)
            if isinstance(stage, Warms):
                stage.warm()
                warmed.add(st.stage)
    assert warmed == {"filter", "tokenize"}  # the small mixture has no quality stage
    assert not (tmp_path / "out").exists()


def test_the_filters_warm_up_loads_every_rule_not_only_the_first(small_mixture, tmp_path):
    """The warm-up text is removed by Gopher quality (too short); the rules after it load their own tables and
    kernels in the warm-up all the same (in a fresh interpreter: this one has loaded them for other tests): the
    line modifiers' table, Gopher repetition's n-gram kernels and the line statistics' walk."""
    code = textwrap.dedent(
        f"""
        from datapipe.orchestrate.plan import check_inputs, make_stage, plan_mixture
        from datapipe.config.mixture import load_mixture
        from datapipe.filters import refinedweb, textstats, wordindex
        from datapipe.tokenize.tokenizer import load_tokenizer

        m = load_mixture({str(small_mixture)!r}, output={str(tmp_path / "out")!r})
        sources = m.select(None)
        identity = load_tokenizer(m.tokenizer).identity
        plans = plan_mixture(m, sources, check_inputs(m, sources), identity.sha256)
        (st,) = [st for st in plans[0].stages if st.stage == "filter"]
        make_stage(m, plans[0], st).warm()
        loaded = [refinedweb._char_table.cache_info().currsize]
        loaded += [len(k.signatures) for k in (wordindex._first_top, wordindex._first_duplicate)]
        loaded += [len(textstats._line_stats.signatures)]
        print(*loaded)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["1", "1", "1", "1"]
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def ctx():
    from pipelines.local.server import start_fork_server

    return start_fork_server()


@pytest.mark.parametrize(
    "fn, line",
    [
        (_raises_datapipe_error, r"shard \d: field 'text' is not a string"),
        (
            _raises_value_error,
            r"src/stage rows #\d: ValueError: item \d cannot be read "
            r"\(the traceback is in the build's log, <output>/_logs/\)",
        ),
        (
            _dies,
            r"src/stage rows #\d: its worker process died \(killed by SIGKILL; out of memory\?\); "
            r"rerun to resume from what was committed",
        ),
    ],
)
def test_a_failed_task_or_a_dead_process_is_one_line(ctx, fn, line, caplog):
    from pipelines.local.engine import Pool

    caplog.set_level(
        logging.INFO
    )  # a build logs at INFO to its log file (datapipe.orchestrate.run.build_log)
    with pytest.raises(DatapipeError) as err, Pool(ctx, 2) as pool:
        pool.run([_chain(fn)], on_finish=lambda: None)
    assert re.fullmatch(line, str(err.value)), str(err.value)
    assert all(not p.is_alive() for p in pool.procs)  # the others were ended
    if fn is _raises_value_error:
        assert "Traceback" in caplog.text and "ValueError" in caplog.text


# --- items the engine guards: a page that hangs or kills its process -------------------------------------------


class _Pages:
    """A stand-in supervised stage (as extraction is): its shard's items are "ok", "hang" (a minute) or "crash"
    (SIGSEGV, as a parser's bug would); it writes the places of those it ran."""

    name, source = "pages", "src"

    def __init__(self, out_dir: str, items: tuple[str, ...], limit: float = 0.3) -> None:
        self.out_dir, self.items, self.limit = out_dir, items, limit
        self._watch, self._failed = None, {}

    def __getstate__(self):
        return {**self.__dict__, "_watch": None, "_failed": {}}

    @property
    def item_limit_s(self):
        return self.limit

    def supervise(self, watch, failed):
        self._watch, self._failed = watch, failed

    def setup(self):
        pass

    def has_output(self, shard):
        return os.path.exists(os.path.join(self.out_dir, "ran.json"))

    def process_shard(self, shard, beat=None):
        from datapipe.runtime.stats import StageStats

        stats, ran = StageStats(), []
        for place, item in enumerate(self.items):
            stats.docs_in += 1
            if place in self._failed:
                stats.remove(f"pages/{self._failed[place]}")
                continue
            self._watch.enter(place, self.limit)
            if item == "hang":
                time.sleep(60)
            elif item == "crash":
                os.kill(os.getpid(), signal.SIGSEGV)
            self._watch.leave()
            ran.append(place)
            stats.docs_kept += 1
        with open(os.path.join(self.out_dir, "ran.json"), "w") as f:
            json.dump(ran, f)
        return stats


def _one_shard(stage, got):
    from datapipe.io.shards import Shard

    got.append((yield [("shard", (stage, Shard(0, "pages-0", "pages-0")), "src/pages part-00000")]))


def test_an_item_that_hangs_or_kills_its_process_fails_alone_and_the_shard_runs_again(ctx, tmp_path, caplog):
    from pipelines.local.engine import Pool

    caplog.set_level(logging.INFO)
    stage, got = _Pages(str(tmp_path), ("ok", "hang", "ok", "crash", "ok")), []
    t0 = time.monotonic()
    with Pool(ctx, 2) as pool:
        first = list(pool.procs)
        pool.run([_one_shard(stage, got)], on_finish=lambda: None)
    assert time.monotonic() - t0 < 30  # the minute's hang was stopped near its 0.3 s
    [[stats]] = got
    assert stats.docs_in == 5 and stats.docs_kept == 3
    assert dict(stats.removed) == {"pages/timeout": 1, "pages/crash": 1}
    assert json.loads((tmp_path / "ran.json").read_text()) == [0, 2, 4]
    assert "src/pages part-00000: item 1 ran past its 0.3 s; the process was replaced" in caplog.text
    assert (
        "src/pages part-00000: item 3 ended it (killed by SIGSEGV); the process was replaced" in caplog.text
    )
    assert pool.procs != first and all(not p.is_alive() for p in pool.procs)


def test_the_watch_marks_one_item_at_a_time():
    from datapipe.runtime.watch import FIELDS, Watch

    cells = [0.0] * (2 * FIELDS)
    watch, other = Watch(cells, 1), Watch(cells, 0)
    assert watch.read() is None
    watch.enter(17, 5.0)
    mark = watch.read()
    assert mark is not None and (mark.item, mark.limit) == (17, 5.0)
    assert mark.deadline == mark.started + 5.0 and other.read() is None
    watch.leave()
    assert watch.read() is None
    watch.enter(18, 5.0)
    assert watch.read() != mark
    watch.clear()  # a new process in the slot of one that died on item 18
    assert watch.read() is None


PAGES_MIXTURE = """\
name: pages
data_root: {root}
tokenizer: {{path: "builtin:gpt2", add_eos: true}}
sources:
  web:
    weight: 1
    format: warc
    paths: [crawl/iana.warc.gz]
    extract: {{timeout_s: {limit}}}
"""


def _extracted(out: Path) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """The extract stage's kept texts and removals (reason, note), by document id."""
    from datapipe.io.jsonl import read_records
    from datapipe.runtime.decisions import read_removed

    [stage] = (out / "web").glob("extract-*")
    kept = {r["id"]: r["text"] for p in sorted(stage.glob("part-*.jsonl.zst")) for r in read_records(str(p))}
    removed = read_removed(str(stage)).to_pylist()
    return kept, {r["id"]: (r["reason"], r["evidence"]) for r in removed}


def test_pages_past_their_limit_are_removed_and_the_rest_is_as_without_a_limit(tmp_path):
    """Real pages (the IANA crawl's 16: with the learned extractor one takes 27 ms to extract here, two 7-8 ms, the
    rest 1-1.5 ms) under a 5 ms limit: those stopped are removed as ``extract/timeout`` with the sandbox's note, one build log line each,
    and every other page is extracted as it is with no limit; nothing is lost. One process: the launcher has a core
    to watch it with."""
    outs = {}
    for limit in (60, 0.005):
        mixture = write_mixture(tmp_path, PAGES_MIXTURE.format(root=CORPORA, limit=limit), f"m{limit}.yaml")
        outs[limit] = tmp_path / f"out-{limit}"
        proc = run_build(*local(mixture, outs[limit], "--processes", "1")[3:])
        assert proc.returncode == 0, proc.stderr[-3000:]
    (free, free_removed), (limited, removed) = _extracted(outs[60]), _extracted(outs[0.005])
    timeouts = {i for i, (reason, _) in removed.items() if reason == "extract/timeout"}
    assert timeouts and all(removed[i] == ("extract/timeout", "> 0.005 s") for i in timeouts)
    assert len(free) + len(free_removed) == 16 and len(timeouts) < 16
    assert {i: t for i, t in free.items() if i not in timeouts} == limited
    assert {i: r for i, r in removed.items() if i not in timeouts} == free_removed
    [log] = (outs[0.005] / "_logs").glob("*.log")
    assert len(re.findall(r"item \d+ ran past its 0.005 s", log.read_text())) == len(timeouts)


def test_bad_flags_are_one_line_errors(small_mixture, tmp_path):
    base = ["--mixture", str(small_mixture), "--output", str(tmp_path / "o"), "--engine", "local"]
    proc = run_build(*base, "--runner=X")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: unknown argument(s) with --engine local: --runner=X"
    proc = run_build(*base, "--processes", "0")
    assert proc.returncode == 2 and proc.stderr.strip() == "error: --processes must be >= 1 (got 0)"
    proc = run_build(*base[:-2], "--processes", "2")  # the Beam engine's build
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        == "error: --processes is a flag of --engine local; this build runs on --engine beam"
    )
    assert not (tmp_path / "o").exists()


@pytest.mark.slow  # ~2 minutes with the Beam build it compares with; make test-all
def test_demo_mixture_on_the_local_engine_equals_beam(demo, tmp_path):
    """The bundled demo mixture (10 sources side by side; dedup, paragraphs, quality cut-offs) writes the Beam
    engine's mixture.json and caches byte for byte."""
    beam_out, _ = demo
    out = tmp_path / "out"
    proc = run_build("--mixture", "dclm_phase3.yaml", "--output", str(out), "--engine", "local")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "mixture.json").read_bytes() == (beam_out / "mixture.json").read_bytes()
    theirs, ours = comparable(beam_out), comparable(out)
    assert sorted(ours) == sorted(theirs)
    assert sum("/tokenize-" in p for p in theirs) >= 10 * 6
    assert [p for p in theirs if ours[p] != theirs[p]] == []


def test_the_fork_server_ends_without_tearing_its_interpreter_down():
    """The fork server holds the build's output open until it exits, and leaves when the launcher does: the module
    it imports last ends its process at exit before the interpreter frees its heap (nothing of it is torn down)."""
    from pipelines.local.server import PRELOAD, QUICK_END, start_fork_server

    with (
        mock.patch("multiprocessing.context.BaseContext.set_forkserver_preload") as preload,
        mock.patch("multiprocessing.forkserver.ensure_running"),
    ):
        start_fork_server()
    assert preload.call_args.args[0] == [PRELOAD, QUICK_END]
    code = (
        "import sys\n"
        f"import {QUICK_END}\n"
        "class Torn:\n"
        "    def __del__(self):\n"
        "        print('torn down', flush=True)\n"
        "kept = Torn()\n"
        "print('end', flush=True)\n"
        "sys.exit(3)\n"  # whatever status the server's loop leaves with: nobody waits for it
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "end\n"), proc.stderr


@pytest.mark.parametrize(
    "argv, early",
    [
        (["--mixture", "m.yaml", "--engine", "local", "--processes", "2"], True),
        (["--mixture=m.yaml", "--engine=local"], True),
        (["--mixture", "m.yaml", "--engine", "local", "--dry-run"], False),  # a dry run starts no process
        (["--mixture", "m.yaml", "--engine", "local", "--processes", "0"], False),  # refused first
        (["--mixture", "m.yaml", "--engine", "local", "--processes=x"], False),
        (["--mixture", "m.yaml", "--engine", "local", "-h"], False),
        (["--mixture", "m.yaml", "--engine", "beam"], False),
        (["--mixture", "m.yaml"], False),  # the default engine is Beam's
        (["--mixture", "m.yaml", "--engine"], False),
    ],
)
def test_which_flags_start_the_fork_server_before_the_launcher_parses_them(argv, early):
    from pipelines.local.server import asks_for_local

    assert asks_for_local(argv) is early


def test_the_launcher_starts_a_local_builds_fork_server_before_its_own_imports(tmp_path):
    """``python -m pipelines.build_mixture --engine local`` starts the fork server (whose preload is the start's
    critical path) before it imports the launcher; a dry run or another engine leaves it to the engine."""
    code = textwrap.dedent(
        """
        import runpy, sys
        from multiprocessing import forkserver

        class Watch:  # says, when the launcher's module is first looked for, whether the fork server runs
            def find_spec(self, name, path=None, target=None):
                if name == "datapipe.orchestrate.launch":
                    print("server running:", forkserver._forkserver._forkserver_pid is not None, flush=True)
                return None

        sys.meta_path.insert(0, Watch())
        sys.argv = ["build_mixture", *sys.argv[1:]]
        runpy.run_module("pipelines.build_mixture", run_name="__main__")
        """
    )
    missing = str(tmp_path / "missing.yaml")
    for flags, running in ((["--engine", "local", "--processes", "2"], True), (["--dry-run"], False)):
        proc = subprocess.run(
            [sys.executable, "-c", code, "--mixture", missing, *flags],
            cwd=REPO, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stderr  # the mixture does not exist: one line, status 2
        assert proc.stdout.splitlines()[0] == f"server running: {running}", proc.stdout


def test_the_workers_stack_imports_no_http_client():
    """The fork server's preload (the start's critical path) leaves urllib and http.client (~0.013 s) to a crawl
    source's fetch, which imports them where it fetches."""
    code = (
        "import sys\n"
        "import pipelines.local.preload\n"
        "print('datapipe.extract.stage' in sys.modules, 'http.client' in sys.modules, "
        "'urllib.request' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["True", "False", "False"]
