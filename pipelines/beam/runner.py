"""The pipeline a build runs in: Beam's runner from the flags, with the DirectRunner pinned to one local engine.

Beam's ``DirectRunner`` (2.6x and later) first tries its Prism runner: it downloads a Go binary from GitHub and, when
that works, runs the pipeline there with Prism's own workers; when it does not (no network, as here), it leaves a
temporary folder behind and falls back to the FnApiRunner. A build would then run on a different engine depending
on whether the machine can reach GitHub. So the DirectRunner here is always what that fallback is: Beam's
FnApiRunner with the pipeline options provisioned to its workers, in the running mode the ``--direct_*`` flags ask
for. With ``--direct_running_mode=multi_processing`` the workers run ``python -m pipelines.beam.worker`` (Beam's
harness that skips the interpreter's teardown at exit); in a build they are forked from a parent that imported
the workers' stack while the launcher built its graph (:mod:`pipelines.beam.zygote`). ``--runner PrismRunner``
still picks Prism, and every other runner is Beam's own.
"""

from __future__ import annotations

import contextlib
import copy
import shlex
import sys
from collections.abc import Iterator

from pipelines.beam.quiet import PipelineOptions, beam
from pipelines.beam.zygote import LOCAL, WarmWorkers


def is_local(options: PipelineOptions) -> bool:
    runner = options.get_all_options().get("runner")
    return runner is None or str(runner).rsplit(".", 1)[-1] in LOCAL


def worker_command() -> str:
    return f"{shlex.quote(sys.executable)} -m pipelines.beam.worker"


def local_runner(options: PipelineOptions, command: str | None = None):
    """``(runner, options)``: the FnApiRunner as the DirectRunner sets it up (its workers get the pipeline
    options), with our worker command (``command``, else :func:`worker_command`) when the workers are processes,
    and the options to run it with (a copy: the caller's may serve another pipeline)."""
    from apache_beam.options.pipeline_options import DirectOptions
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.portability.fn_api_runner import fn_runner
    from apache_beam.runners.portability.portable_runner import JobServiceHandle
    from apache_beam.transforms.environments import SubprocessSDKEnvironment

    options = copy.deepcopy(options)
    direct = options.view_as(DirectOptions)
    environment = None
    if direct.direct_running_mode == "multi_processing":
        # the FnApiRunner would start `python -m apache_beam.runners.worker.sdk_worker_main`; with no running mode
        # set it takes the environment given here and still starts --direct_num_workers of them
        environment = SubprocessSDKEnvironment.from_command_string(command or worker_command())
        direct.direct_running_mode = None
    encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
    provision = fn_runner.ExtendedProvisionInfo(
        beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded)
    )
    return fn_runner.FnApiRunner(default_environment=environment, provision_info=provision), options


@contextlib.contextmanager
def pipeline(options: PipelineOptions, workers: WarmWorkers | None = None) -> Iterator[beam.Pipeline]:
    """``with pipeline(options) as p:`` a pipeline on the runner the options name, run when the block ends (see
    the module's docstring for the DirectRunner). ``workers``: a warm parent for the local worker processes,
    started before Beam was imported (a build's launcher does; :mod:`pipelines.beam.zygote`). Without one they
    start cold: a parent started here would still be importing when Beam asks for them, and on a small pipeline
    it made the start slower and more variable (the dedup phase alone at 10^5 documents: 5.2-6.5 s against 5.3
    s cold, three runs each)."""
    if is_local(options):
        from pipelines.beam.sampling import sample_often

        sample_often()  # for the bundles this process runs itself (no worker processes)
        runner, options = local_runner(options, workers.command if workers is not None else None)
        with beam.Pipeline(runner=runner, options=options) as p:
            yield p
    else:
        with beam.Pipeline(options=options) as p:
            yield p
