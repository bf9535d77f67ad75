"""Beam's state sampler, woken often enough that a bundle's end does not wait for it.

Beam's Python harness times each step of a bundle with a sampler thread (``statesampler_fast``): the thread sleeps
between samples, its sleep growing from 2 ms by 1.2x a round up to ``sampling_period_ms`` (200 by default), and a
bundle ends only when ``stop()`` has joined it, which "may have to wait up to sampling_period_ms" (Beam's own
comment). Every bundle of a stage's shards runs for seconds here, so each one ended 0-200 ms after its last shard,
with the stage's next step waiting for the slower of the two workers: on e2e's build, 0.10-0.19 s at the end of
the extract, filter and tokenize stages (2026-12-05, traced). Beam offers no option for the period, so the
sampler's default is set here, for the processes that run bundles: the build's workers
(:func:`pipelines.beam.harness.harness`) and a launcher whose runner runs them itself. The sampler then wakes every
:data:`PERIOD_MS` (a lock and a clock read each time) and its step timings are finer, not different in kind.
"""

from __future__ import annotations

PERIOD_MS = 5


def sample_often() -> None:
    """Make :data:`PERIOD_MS` the default period of the state samplers made from now on in this process; leave
    a Beam whose sampler does not take its period as the one defaulted argument as it is."""
    from apache_beam.runners.worker import statesampler

    init = statesampler.StateSampler.__init__
    if init.__defaults__ == (statesampler.DEFAULT_SAMPLING_PERIOD_MS,):
        init.__defaults__ = (PERIOD_MS,)
