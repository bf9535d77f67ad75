"""Run a build on an engine: check and plan the mixture, let the engine bring every stage to ``_SUCCESS``, then
assemble the mixture manifest. Engine-neutral: an engine is anything with the :class:`Engine` protocol.

The engines (``pipelines/beam``, ``pipelines/datatrove``) only move data; this module decides the order of the
work around them: flags are checked, inputs listed and sniffed, the tokenizer loaded, the output folder leased,
classifiers resolved (trained if needed), evaluation sets expanded and the stages planned, all before any work; and
after it, one line per stage, the per-source table, the manifest and the run record.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from datapipe.config.mixture import MixtureConfig, SourceConfig, load_mixture
from datapipe.data.language_weights import language_shares
from datapipe.errors import ConfigError, Interrupted
from datapipe.io import fs
from datapipe.io.readers import check_shard
from datapipe.io.shards import Shard
from datapipe.orchestrate.classifiers import resolve_models
from datapipe.orchestrate.lease import OutputLease
from datapipe.orchestrate.plan import (
    SourcePlan,
    StagePlan,
    check_inputs,
    plan_mixture,
    resolve_eval_sets,
)
from datapipe.report.collect import format_source_table, format_token_plan, token_plan
from datapipe.report.lineage import git_commit, write_experiment
from datapipe.runtime.stage import read_stage_json, stats_path
from datapipe.store.cache import LEDGER
from datapipe.store.manifest import (
    TOKENIZER_FILE,
    Component,
    Manifest,
    ScheduleEntry,
    load_manifest,
    write_manifest,
)

if TYPE_CHECKING:
    from datapipe.tokenize.tokenizer import LoadedTokenizer

StageReport = Callable[[SourcePlan, StagePlan, float], None]


class Engine(Protocol):
    """What runs the stages: given the mixture and its plans, bring every stage that is not done to ``_SUCCESS``,
    calling ``report_stage(source plan, stage plan, seconds)`` as each one finishes."""

    runner: str  # recorded in experiment.json
    workers: int  # tasks that run at once on this machine (the dry run's resource plan divides by it)
    in_memory_shuffle: bool  # whether the dedup phases would hold their keys in this process's memory

    def check(self, mixture: MixtureConfig) -> None:
        """Raise :class:`DatapipeError` for what this engine cannot do here (a runner's missing options, a cluster
        that does not answer), before any work."""
        ...

    def run(self, mixture: MixtureConfig, plans: list[SourcePlan], report_stage: StageReport) -> None: ...


@dataclass(frozen=True)
class BuildRequest:
    """What the launcher's flags ask for."""

    mixture: str
    output: str | None = None
    data_root: str | None = None
    only: tuple[str, ...] = ()
    dry_run: bool = False
    train_tokens: int | None = None
    wait_lease: float = 0.0
    search: tuple[Path, ...] = ()  # folders of bundled mixtures


def run_build(request: BuildRequest, engine: Engine) -> int:
    """Check, plan and build; returns the exit status."""
    from datapipe.tokenize.tokenizer import load_tokenizer  # loads HF tokenizers: only when a build runs

    mixture = load_mixture(
        request.mixture, data_root=request.data_root, output=request.output, search=request.search
    )
    sources = mixture.select(list(request.only) or None)
    engine.check(mixture)  # the runner or cluster, before inputs are read or classifiers trained
    files = check_inputs(mixture, sources, dry_run=request.dry_run)
    sources = resolve_eval_sets(mixture, sources)
    for src in sources:  # a file that is not its format at all stops the build here, with one line naming it
        if src.commoncrawl is not None:
            continue  # not fetched before the build reads it: checked whole (length, gzip) when it comes
        for url in files[src.name]:
            check_shard(url, src.format, src.text_field)
    fs.check_writable(mixture.output, "build's output", create=not request.dry_run)
    tokenizer = load_tokenizer(mixture.tokenizer)
    print(f"mixture {mixture.name}: {len(sources)} source(s) -> {mixture.output}")
    with OutputLease(mixture.output, wait_s=request.wait_lease):  # one build per output folder at a time
        # classifiers: trained if needed (not in a dry run, which does no work), checked before any work
        sources = resolve_models(mixture, sources, train_missing=not request.dry_run)
        plans = plan_mixture(mixture, sources, files, tokenizer.identity.sha256)
        if request.dry_run:
            from datapipe.orchestrate.estimate import format_plan, plan_resources

            print_plan(plans, mixture.output)
            print_crawl_plans(sources, files)
            estimates, warnings = plan_resources(plans, files, engine.workers, engine.in_memory_shuffle)
            print(format_plan(estimates, engine.workers, mixture.output))
            for line in warnings:
                print(line)
            return 0
        train_tokens = request.train_tokens or mixture.train_tokens
        with build_log(mixture.output), _noting_ctrl_c() as ctrl_c:
            try:
                return build(mixture, sources, plans, tokenizer, engine, train_tokens, ctrl_c)
            except BaseException:
                # Beam re-raises a KeyboardInterrupt from inside a transform as a RuntimeError naming the step:
                # whatever it became, an error after Ctrl-C is the interrupt
                if ctrl_c.is_set():
                    raise Interrupted(*committed_shards(plans)) from None
                raise


LOGS = "_logs"  # <output>/_logs/build-<UTC time>-<pid>.log: every record of a build at INFO and above


@contextlib.contextmanager
def build_log(output: str) -> Iterator[str | None]:
    """The build's log file (its path; None where the output is not on this machine): every log record at INFO and
    above, Beam's progress lines among them, while the console keeps WARNING and above, so that a local build's
    console holds datapipe's own lines and its problems."""
    if not fs.is_local(output):
        yield None
        return
    folder = os.path.join(fs.local_path(output), LOGS)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, time.strftime("build-%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{os.getpid()}.log")
    root = logging.getLogger()
    consoles = list(root.handlers)
    levels = [h.level for h in consoles]
    before = root.level
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setLevel(logging.INFO)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for h in consoles:
        h.setLevel(max(h.level, before if before > logging.NOTSET else logging.WARNING))
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    try:
        yield path
    finally:
        root.removeHandler(handler)
        handler.close()
        root.setLevel(before)
        for h, level in zip(consoles, levels, strict=True):
            h.setLevel(level)


@contextlib.contextmanager
def _noting_ctrl_c() -> Iterator[threading.Event]:
    """While the build runs, Ctrl-C is noted (the event) before it raises ``KeyboardInterrupt`` as usual."""
    noted = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield noted  # signals reach only the main thread: nothing to note here
        return

    def on_sigint(signum: int, frame: object) -> None:
        noted.set()
        raise KeyboardInterrupt

    def quiet_after(record: logging.LogRecord) -> bool:
        return not noted.is_set()  # once interrupted, what the engine logs about it (tracebacks) is noise

    def unraisable(u: Any) -> None:
        if not noted.is_set():
            previous_hook(u)
        elif isinstance(u.exc_value, KeyboardInterrupt):
            # raised inside a callback from C (numba's compiler, a __del__), where Python prints it and goes on
            # (seen: a build that ended with status 0 after Ctrl-C): deliver it again, until it lands in our code
            signal.raise_signal(signal.SIGINT)

    handlers = logging.getLogger().handlers
    previous = signal.signal(signal.SIGINT, on_sigint)
    previous_hook, sys.unraisablehook = sys.unraisablehook, unraisable
    for h in handlers:
        h.addFilter(quiet_after)
    try:
        yield noted
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = previous_hook
        for h in handlers:
            h.removeFilter(quiet_after)


def committed_shards(plans: list[SourcePlan]) -> tuple[int, int]:
    """(shards committed, shards planned) over every stage of the plans: a finished stage counts all of its."""
    done = total = 0
    for sp in plans:
        for st in sp.stages:
            total += len(st.shards)
            done += (
                len(st.shards) if st.done else sum(fs.exists(stats_path(st.out_dir, s)) for s in st.shards)
            )
    return done, total


def build(
    mixture: MixtureConfig,
    sources: Sequence[SourceConfig],
    plans: list[SourcePlan],
    tokenizer: LoadedTokenizer,
    engine: Engine,
    train_tokens: int | None,
    interrupted: threading.Event | None = None,
) -> int:
    """Run every stage that is not done on ``engine``, then write the manifest (the caller holds the output's
    lease). ``interrupted`` set once the engine returns: the interrupt was swallowed on its way (a library that
    catches everything), so what the engine says it did is not trusted with a manifest."""
    whole = len(sources) == len(mixture.sources)  # --only builds a subset, and no manifest
    # experiment.json's commit, asked before the engine runs: after the last stage its two git calls (~0.01 s) were
    # on the build's critical path, where here the local engine's launcher is waiting for its workers' stack
    commit = git_commit() if whole else None
    fs.makedirs(mixture.output)
    for sp in plans:
        for st in sp.stages:
            if st.done:
                counts = read_stage_json(st.out_dir)["counts"]
                print(
                    f"{label(sp, st)} skipped (cached)   in {counts['docs_in']:>6}  kept {counts['docs_kept']:>6}"
                )
    done, total = committed_shards(plans)
    if 0 < done < total:  # a resumed build: say what it reuses (stage times below count this run only)
        stages = sum(st.done for sp in plans for st in sp.stages)
        print(
            f"resuming: {done} of {total} shards already committed "
            f"({stages} of {sum(len(sp.stages) for sp in plans)} stages whole); they are reused"
        )
    if whole:
        # the manifest's copy of the tokenizer (:func:`write_mixture_manifest`), made before the engine runs: a
        # bundled tokenizer is built only when asked for (GPT-2: 0.08 s), which the manifest's step did after the
        # last stage, on the build's critical path; here the local engine's launcher then waits for its workers
        tokenizer.to_json()
    engine.run(mixture, plans, report_stage)
    if interrupted is not None and interrupted.is_set():
        raise KeyboardInterrupt

    print_summary(plans)
    if not whole:
        print("manifest not written: --only built a subset of the sources")
        return 0
    url = write_mixture_manifest(mixture, plans, tokenizer)
    write_experiment(mixture.output, engine.runner, mixture.data_root, fs.local_path(mixture.file), commit)
    print(f"manifest: {url}")
    print()
    print(format_token_plan(token_plan(load_manifest(url), train_tokens), train_tokens))
    return 0


def write_mixture_manifest(
    mixture: MixtureConfig, plans: list[SourcePlan], tokenizer: LoadedTokenizer
) -> str:
    """``mixture.json``: every source's cache (its tokenize stage) with its weight, rows, tokens and ledger hash."""
    components = []
    empty = []
    by_language: dict[str, dict[str, Any]] = {}
    rehydrated: dict[str, int] = {}  # repeats written into a source's cache by rehydration
    total_weight = sum(sp.source.weight for sp in plans)
    for sp in plans:
        tok = sp.stage("tokenize")
        cache = read_stage_json(tok.out_dir)["cache"]
        if sp.source.by_language is not None and cache["tokens"]:
            parts, by_language[sp.source.name] = _language_components(mixture, sp, tok, cache, total_weight)
            components.extend(parts)
            continue
        if not cache["tokens"]:
            removed: Counter[str] = Counter()
            for st in sp.stages:
                removed.update(read_stage_json(st.out_dir)["counts"]["removed"])
            why = ", ".join(f"{k} {v}" for k, v in removed.most_common(3)) or "no documents were read"
            empty.append(("sources." + sp.source.name, f"its cache holds no tokens ({why})"))

        if "repeats" in cache:
            rehydrated[sp.source.name] = cache["repeats"]
        ledger = hashlib.sha256(fs.read_bytes(fs.join(tok.out_dir, LEDGER))).hexdigest()
        components.append(
            Component(
                sp.source.name,
                sp.source.weight,
                f"{sp.source.name}/{tok.dirname}",
                cache["rows"],
                cache["tokens"],
                ledger,
            )
        )
    if empty:  # a component of nothing would be sampled by weight and never give a row
        (where, why), *more = empty
        raise ConfigError(mixture.file, where, why + "; the manifest is not written", more)
    # the tokenizer beside the manifest: rows decode wherever the output goes (its hash is the manifest's)
    tokenizer.save(fs.join(mixture.output, TOKENIZER_FILE))
    manifest = Manifest(
        name=mixture.name,
        seed=mixture.seed,
        seq_len=mixture.seq_len,
        tokenizer=tokenizer.identity,
        components=tuple(components),
        tokenizer_file=TOKENIZER_FILE,
        weights_unit=mixture.weights_unit,
        source_mixture_file=fs.local_path(mixture.file),
        schedule=tuple(ScheduleEntry(int(e["step"]), dict(e["weights"])) for e in mixture.schedule),
        by_language=by_language,
        rehydrated_repeats=rehydrated,
        train_tokens=mixture.train_tokens or None,
    )
    return write_manifest(mixture.output, manifest)


def _language_components(
    mixture: MixtureConfig, sp: SourcePlan, tok: StagePlan, cache: dict[str, Any], total_weight: float
) -> tuple[list[Component], dict[str, Any]]:
    """A source's per-language components ``<source>/<language>``, its weight shared by ``by_language.weights``;
    and what the manifest records of how."""
    cfg = sp.source.by_language
    assert cfg is not None
    where = f"sources.{sp.source.name}.by_language"
    languages = cache["languages"]
    tokens = {lang: c["tokens"] for lang, c in languages.items()}
    # what a language's size is counted in (a build made before chars and bytes were counted has tokens only)
    sizes = {lang: c.get(cfg.by, 0) for lang, c in languages.items()} if cfg.by != "tokens" else tokens
    if cfg.by != "tokens" and not any(sizes.values()):
        raise ConfigError(
            mixture.file, f"{where}.by", f"the cache counts no {cfg.by} by language: build again"
        )
    budget = None
    if mixture.train_tokens:  # the source's part of the planned training tokens, in the unit of `by`
        budget = mixture.train_tokens * sp.source.weight / total_weight
        if cfg.by != "tokens" and sum(tokens.values()):
            budget *= sum(sizes.values()) / sum(tokens.values())
    try:
        shares = language_shares(
            sizes,
            cfg.weights,
            alpha=cfg.alpha,
            max_epochs=cfg.max_epochs,
            budget=budget,
            explicit=dict(cfg.explicit),
        )
    except ValueError as e:
        raise ConfigError(mixture.file, f"{where}.weights", str(e)) from None
    for lang, weight in cfg.explicit:
        if not sizes.get(lang):
            print(
                f"warning: {mixture.file}: {where}.weights.{lang}: no document in that language was kept: "
                f"its weight {weight:g} is dropped, the others share the source's weight",
                file=sys.stderr,
            )
    if cfg.weights == "unimax" and budget:
        epochs = {lang: share * budget / sizes[lang] for lang, share in shares.items() if sizes.get(lang)}
        over = {lang: e for lang, e in epochs.items() if e > cfg.max_epochs * (1 + 1e-9)}
        if over:
            worst = max(over, key=lambda k: over[k])
            print(
                f"warning: {mixture.file}: {where}.max_epochs: the source's share of train_tokens "
                f"({budget:,.0f} {cfg.by}) is more than max_epochs {cfg.max_epochs:g} of all its languages "
                f"({cfg.max_epochs * sum(sizes.values()):,.0f}): each is repeated past it ({worst} "
                f"{over[worst]:.2f} epochs); lower the source's weight or train_tokens, or raise max_epochs",
                file=sys.stderr,
            )
    parts = []
    for lang, share in shares.items():
        folder = fs.join(tok.out_dir, lang)
        ledger = hashlib.sha256(fs.read_bytes(fs.join(folder, LEDGER))).hexdigest()
        c = cache["languages"][lang]
        parts.append(
            Component(
                f"{sp.source.name}/{lang}",
                sp.source.weight * share,
                f"{sp.source.name}/{tok.dirname}/{lang}",
                c["rows"],
                c["tokens"],
                ledger,
            )
        )
    record: dict[str, object] = {"weights": cfg.weights, "by": cfg.by, "shares": shares, "tokens": tokens}
    if cfg.by != "tokens":
        record[cfg.by] = sizes
    if cfg.weights == "temperature":
        record["alpha"] = cfg.alpha
    if cfg.weights == "unimax":
        record.update(max_epochs=cfg.max_epochs, **{f"budget_{cfg.by}": budget})
    if "repeats" in cache:
        record["rehydrated_repeats"] = cache["repeats"]
    return parts, record


def label(sp: SourcePlan, st: StagePlan) -> str:
    """A stage's name in the build's lines: source and stage folder, aligned."""
    return f"  {sp.source.name:<18} {st.dirname:<18}"


def watched(todo: Sequence[tuple[SourcePlan, StagePlan]]) -> list[tuple[str, str, list[Shard], str | None]]:
    """What the progress display follows for these stages (``WaveProgress``): label, folder, shards and the
    folder of the stage before it (whose kept documents are its input; None for a source's first stage)."""
    out = []
    for sp, st in todo:
        names = [s.out_dir for s in sp.stages]
        at = names.index(st.out_dir)
        out.append((label(sp, st).strip(), st.out_dir, list(st.shards), names[at - 1] if at else None))
    return out


def _fmt_removed(removed: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(removed.items())) or "none"


def report_stage(sp: SourcePlan, st: StagePlan, seconds: float) -> None:
    """The line a finished stage prints: time, documents in and kept, removals by reason, tokens."""
    counts = read_stage_json(st.out_dir)["counts"]
    extra = f"  tokens {counts['tokens']:,}" if counts["tokens"] else ""
    print(
        f"{label(sp, st)} ran in {seconds:5.1f}s  in {counts['docs_in']:>6}  kept "
        f"{counts['docs_kept']:>6}  removed: {_fmt_removed(counts['removed'])}{extra}",
        flush=True,
    )


def print_crawl_plans(sources: tuple[SourceConfig, ...], files: dict[str, list[str]]) -> None:
    """For each Common Crawl source, what fetching its sample takes: files, bytes (sizes asked of the source, one
    request a file, at most a hundred, the rest estimated) and the time at the policy's transfers in flight and
    assumed throughput."""
    from datapipe.crawl.source import estimate_fetch

    for src in sources:
        cc = src.commoncrawl
        if cc is None:
            continue
        urls = files[src.name]
        est = estimate_fetch(urls, cc.fetch)
        sized = (
            "every size asked"
            if est.sized == est.files
            else f"sizes of {est.sized} asked, the rest estimated"
        )
        print(
            f"fetch {src.name}: {cc.crawl} {cc.kind} from {cc.base_url}: {est.files} file(s), "
            f"{_size(est.bytes)} ({sized}); ~{_duration(est.seconds)} at {cc.fetch.in_flight} in flight x "
            f"{cc.fetch.mb_per_s:g} MB/s (fetch.mb_per_s); stage estimates below do not count its documents"
        )
        for url in urls[:5]:
            print(f"  {url}")
        if len(urls) > 5:
            print(f"  ... and {len(urls) - 5} more")


def _size(n: int) -> str:
    return f"{n / 1e9:,.2f} GB" if n >= 1e9 else f"{n / 1e6:,.2f} MB"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def print_plan(plans: list[SourcePlan], output: str) -> None:
    print(f"plan for {output}:")
    for sp in plans:
        for st in sp.stages:
            status = "cached" if st.done else "would run"
            print(f"  {sp.source.name:<18} {st.dirname:<18} {status:<10} {len(st.shards)} shard(s)")


def print_summary(plans: list[SourcePlan]) -> None:
    print()
    print(
        format_source_table(
            {sp.source.name: [read_stage_json(st.out_dir)["counts"] for st in sp.stages] for sp in plans}
        )
    )
