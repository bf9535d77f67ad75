"""The Beam engine: the whole build as one pipeline (``datapipe.orchestrate.run.Engine``).

Every source's remaining stages are chained in order, a stage's global phase (dedup groups, a quality quantile)
inside it between the stage before and the stage's own shards. When a dedup stage's components need more
large-star/small-star rounds than it ran, that stage and those after it do not finish; the engine runs what is
left again with twice the rounds (a wave).
"""

from __future__ import annotations

import difflib

from datapipe.config.mixture import MixtureConfig
from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.orchestrate.plan import SourcePlan, StagePlan, global_phase, make_stage
from datapipe.orchestrate.progress import WaveProgress
from datapipe.orchestrate.run import StageReport, label, watched
from datapipe.runtime.phase import pending as phase_pending
from datapipe.runtime.stage import Stage, TwoPhaseStage, is_done, remove_temporaries
from pipelines.beam.quiet import PipelineOptions, warnings_dropped
from pipelines.beam.zygote import WarmWorkers

Chain = list[tuple[Stage, StagePlan, str | None]]


# runners that keep a GroupByKey's data in the launching machine's memory
IN_MEMORY_SHUFFLE = (
    "DirectRunner",
    "FnApiRunner",
    "BundleBasedDirectRunner",
    "SwitchingDirectRunner",
    "PrismRunner",
)


def beam_flag_names() -> list[str]:
    """Every flag a Beam pipeline option class defines (``--runner``, ``--temp_location``, ...), collected as
    ``PipelineOptions.get_all_options`` collects them to parse (Beam drops any other flag with a warning)."""
    from apache_beam.options.pipeline_options import _BeamArgumentParser

    parser = _BeamArgumentParser(allow_abbrev=False)
    for cls in {str(c): c for c in PipelineOptions.__subclasses__()}.values():
        cls._add_argparse_args(parser)
    return [s for s in parser._option_string_actions if s.startswith("--")]


def check_beam_flags(flags: list[str], own: list[str]) -> None:
    """Refuse a flag that is neither the launcher's (``own``) nor a Beam pipeline option: Beam would drop it with
    a warning and the build would run without it (``--ouput`` writing to the default folder)."""
    names = set(beam_flag_names())
    unknown = [f.split("=", 1)[0] for f in flags if f.startswith("-") and f.split("=", 1)[0] not in names]
    if unknown:
        hints = []
        for flag in unknown:
            near = difflib.get_close_matches(flag, own + sorted(names), n=1, cutoff=0.75)
            hints.append(f"{flag} (did you mean {near[0]}?)" if near else flag)
        raise DatapipeError(
            f"unknown option(s): {', '.join(hints)}: neither build_mixture's (see --help) nor a Beam pipeline option"
        )


class BeamEngine:
    """``global_shuffle``: ``files`` runs the dedup and paragraph global phases through partitioned files
    (``datapipe.dedup.spill``: memory bounded by a partition), ``beam`` through ``GroupByKey`` (a distributed
    runner's shuffle service), ``auto`` picks files on the runners of ``IN_MEMORY_SHUFFLE``."""

    def __init__(
        self, beam_args: list[str], global_shuffle: str = "auto", workers: WarmWorkers | None = None
    ) -> None:
        # workers: the warm parent of local worker processes, started by the entry before Beam was imported;
        # this engine lets it go when its run ends (pipelines/beam/zygote.py)
        self.warm = workers
        self.options = PipelineOptions(beam_args or ["--runner=DirectRunner"])
        self.runner = str(self.options.get_all_options().get("runner") or "DirectRunner")
        if global_shuffle not in ("auto", "files", "beam"):
            raise DatapipeError(f"--global-shuffle {global_shuffle!r}: choose auto, files or beam")
        runner = self.runner.rsplit(".", 1)[-1]
        self.files = global_shuffle == "files" or (global_shuffle == "auto" and runner in IN_MEMORY_SHUFFLE)
        self.in_memory_shuffle = runner in IN_MEMORY_SHUFFLE and not self.files
        opts = self.options.get_all_options()
        local = opts.get("direct_running_mode") in ("multi_processing", "multi_threading")
        self.workers = (
            int(opts.get("direct_num_workers") or 1) if local else int(opts.get("num_workers") or 1)
        )

    def check(self, mixture: MixtureConfig) -> None:
        """What the runner cannot do, said before any work: an unknown ``--runner``, the options Beam's own
        validator finds missing (Dataflow's project, region, temp and staging locations), and a local output
        folder for Dataflow, whose workers cannot write to this machine."""
        from apache_beam.options.pipeline_options_validator import PipelineOptionsValidator
        from apache_beam.runners.runner import create_runner

        try:
            runner = create_runner(self.runner)
        except ValueError as e:
            raise DatapipeError(f"--runner {self.runner}: {str(e).split('. Valid', 1)[0]}") from None
        with warnings_dropped():
            problems = PipelineOptionsValidator(self.options, runner).validate()
        if problems:
            raise DatapipeError(f"--runner {self.runner}: {' '.join(problems)}")
        if self.runner.rsplit(".", 1)[-1] == "DataflowRunner" and fs.is_local(mixture.output):
            raise DatapipeError(
                f"--runner {self.runner}: the output {mixture.output} is on this machine, where Dataflow's "
                "workers cannot write; give --output gs://..."
            )

    def run(self, mixture: MixtureConfig, plans: list[SourcePlan], report_stage: StageReport) -> None:
        try:
            self._run(mixture, plans, report_stage)
        finally:
            if self.warm is not None:
                self.warm.close()

    def _run(self, mixture: MixtureConfig, plans: list[SourcePlan], report_stage: StageReport) -> None:
        from pipelines.beam.dedup import CC_ROUNDS, next_cc_rounds

        rounds: dict[str, int] = {}
        pending = [(sp, [st for st in sp.stages if not st.done]) for sp in plans]
        while pending := [(sp, q) for sp, q in pending if q]:
            chains = [
                (sp, [(make_stage(mixture, sp, st), st, global_phase(sp, st)) for st in q])
                for sp, q in pending
            ]
            self.run_wave(chains, rounds, report_stage)
            pending = [(sp, [st for st in q if not is_done(st.out_dir)]) for sp, q in pending]
            for sp, chain in chains:
                for stage, st, phase in chain:
                    if not is_done(st.out_dir):  # a global phase that did not converge stopped its chain here
                        if not phase_pending(phase, stage):
                            raise DatapipeError(
                                f"{st.out_dir}: the pipeline ended without finishing this stage"
                            )
                        rounds[st.out_dir] = next_cc_rounds(st.out_dir, rounds.get(st.out_dir, CC_ROUNDS))
                        print(f"{label(sp, st)} components need more rounds: again with {rounds[st.out_dir]}")
                        break

    def run_wave(
        self, chains: list[tuple[SourcePlan, Chain]], rounds: dict[str, int], report_stage: StageReport
    ) -> None:
        """One pipeline for all the chains; a line per stage as it finishes (its time: since the stage before it
        finished, its global phase included)."""
        from pipelines.beam.stage import run_chains

        stages: list[tuple[SourcePlan, StagePlan]] = []
        for sp, chain in chains:
            for stage, st, _ in chain:
                remove_temporaries(st.out_dir)  # left by a run killed mid-write
                if isinstance(stage, TwoPhaseStage):
                    stage.reset_global()
                stages.append((sp, st))

        def done(i: int, seconds: float) -> None:
            sp, st = stages[i]
            report_stage(sp, st, seconds)

        with WaveProgress(watched(stages), done):
            run_chains([chain for _, chain in chains], self.options, rounds, self.files, self.warm)
