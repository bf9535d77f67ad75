"""Settings that the trainer's parts read and the run's config (:mod:`datapipe.train.config`) gathers: here, below
both, so that the checkpoints never import the config that imports them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CheckpointConfig:
    every: int = 100  # steps; 0: only at exit
    keep_last: int = 2
    keep_every: int = 0  # also keep every M-th step's checkpoint; 0: none
    async_save: bool = True
    at_exit: bool = True
