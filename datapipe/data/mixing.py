"""Which component each sequence of the global stream comes from, as a pure function of (seed, phases, position).

The global stream is the concatenation of every step's batch: step ``s`` holds the sequences at offsets
``offset(s) .. offset(s) + batch_size(s)``. The run is divided into *phases*, each starting at a step, with its own
weights and batch size (a schedule in steps, as trainers are configured; Marin-8B changed both mid-run).

Boundary rules:

* ``offset(s)`` sums the batch sizes of all earlier steps, so a phase that starts at step ``k`` governs exactly the
  sequences of step ``k`` onward, whatever the batch sizes before and after.
* Each phase is cut into blocks of ``block_size`` sequences counted from the phase's first sequence. A block holds
  exactly the largest-remainder counts of the phase's weights (:func:`block_counts`), at positions shuffled by a
  keyed Feistel permutation. When a phase ends inside a block, that block is cut short: its first positions are used
  as laid out, so counts are exact in every whole block and off by less than one per component in the cut one.
* A component's draws are numbered in stream order across phases (draw ``k`` is its ``k``-th sequence); the
  loader turns a draw into a sequence of the component's (per-epoch) permutation.

A component a phase does not name has weight 0 there; a positive weight that gets no row in a block is an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from datapipe.data.permutation import FeistelPermutation, block_counts, derive_key
from datapipe.store.manifest import Manifest

_LAYOUT = 0x1A70


@dataclass(frozen=True)
class Phase:
    """From ``start_step`` on: these weights and this global batch size (in sequences)."""

    start_step: int
    weights: Mapping[str, float] = field(hash=False)
    batch_size: int


def manifest_phases(
    manifest: Manifest,
    global_batch: int,
    changes: Sequence[tuple[int, Mapping[str, float] | None, int | None]] = (),
) -> list[Phase]:
    """Phases from a manifest (component weights at step 0, then its ``schedule``) plus ``changes`` given as
    (step, weights or None, batch size or None); what a change leaves unset carries over from the phase before."""
    events: dict[int, dict[str, Any]] = {
        0: {"weights": {c.name: float(c.weight) for c in manifest.components}}
    }
    for entry in manifest.schedule:
        events.setdefault(entry.step, {})["weights"] = dict(entry.weights)
    for step, weights, batch in changes:
        event = events.setdefault(int(step), {})
        if weights is not None:
            event["weights"] = dict(weights)
        if batch is not None:
            event["batch"] = int(batch)
    phases: list[Phase] = []
    current: Mapping[str, float] = {}
    size = global_batch
    for step in sorted(events):
        current = events[step].get("weights", current)
        size = events[step].get("batch", size)
        phases.append(Phase(step, current, size))
    return phases


class MixtureSchedule:
    def __init__(self, components: Sequence[str], phases: Sequence[Phase], seed: int, block_size: int = 2048):
        if not phases or phases[0].start_step != 0:
            raise ValueError("the first phase must start at step 0")
        if block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {block_size}")
        self.components = list(components)
        self.seed, self.block_size = seed, block_size
        self.phases = list(phases)
        counts = []
        for i, ph in enumerate(self.phases):
            if i and ph.start_step <= self.phases[i - 1].start_step:
                raise ValueError(
                    f"phase steps must increase: {self.phases[i - 1].start_step} then {ph.start_step}"
                )
            if ph.batch_size < 1:
                raise ValueError(f"phase at step {ph.start_step}: batch size must be >= 1")
            unknown = sorted(set(ph.weights) - set(self.components))
            if unknown:
                raise ValueError(f"phase at step {ph.start_step}: no component named {', '.join(unknown)}")
            weights = {c: float(ph.weights.get(c, 0.0)) for c in self.components}
            try:
                by_name = block_counts(weights, block_size)
            except ValueError as e:
                raise ValueError(f"phase at step {ph.start_step}: {e}") from None
            counts.append(np.array([by_name[c] for c in self.components], dtype=np.int64))
        self.counts = np.stack(counts)  # (phases, components) rows per whole block
        starts = np.array([p.start_step for p in self.phases], dtype=np.int64)
        sizes = np.array([p.batch_size for p in self.phases], dtype=np.int64)
        self._steps = starts
        self._offsets = np.concatenate([[0], np.cumsum(np.diff(starts) * sizes[:-1])]).astype(np.int64)
        self._base = self._phase_bases()
        self._layout = lru_cache(maxsize=256)(self._compute_layout)

    # --- steps and offsets -------------------------------------------------------------------------------
    def phase_index(self, step: int) -> int:
        if step < 0:
            raise ValueError(f"step must be >= 0, got {step}")
        return int(np.searchsorted(self._steps, step, side="right") - 1)

    def batch_size(self, step: int) -> int:
        return self.phases[self.phase_index(step)].batch_size

    def offset(self, step: int) -> int:
        """Global sequence offset of step ``step``'s first sequence."""
        i = self.phase_index(step)
        return int(self._offsets[i] + (step - self._steps[i]) * self.phases[i].batch_size)

    # --- block layouts -----------------------------------------------------------------------------------
    def _compute_layout(self, phase: int, block: int) -> tuple[np.ndarray, np.ndarray]:
        """(component at each position, its rank among that component's positions) for one whole block."""
        counts = self.counts[phase]
        unshuffled = np.repeat(np.arange(len(self.components)), counts)
        perm = FeistelPermutation(
            self.block_size, derive_key(self.seed, _LAYOUT, self.phases[phase].start_step, block)
        )
        comp = unshuffled[perm.apply(np.arange(self.block_size))]
        rank = np.empty(self.block_size, dtype=np.int64)
        for c in np.flatnonzero(counts):
            where = comp == c
            rank[where] = np.arange(int(counts[c]))
        return comp, rank

    def _phase_bases(self) -> np.ndarray:
        """Draws per component before each phase."""
        bases = np.zeros((len(self.phases), len(self.components)), dtype=np.int64)
        for i in range(1, len(self.phases)):
            length = int(self._offsets[i] - self._offsets[i - 1])
            whole, rest = divmod(length, self.block_size)
            used = whole * self.counts[i - 1]
            if rest:
                comp, _ = self._compute_layout(i - 1, whole)
                used = used + np.bincount(comp[:rest], minlength=len(self.components))
            bases[i] = bases[i - 1] + used
        return bases

    def _locate(self, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        phase = np.searchsorted(self._offsets, offsets, side="right") - 1
        local = offsets - self._offsets[phase]
        return phase, local // self.block_size, local % self.block_size

    def assign(self, start: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Component index and draw number of the sequences at global offsets ``start .. start + n``."""
        offsets = np.arange(start, start + n, dtype=np.int64)
        phase, block, pos = self._locate(offsets)
        comp = np.empty(n, dtype=np.int64)
        draw = np.empty(n, dtype=np.int64)
        for p, b in sorted(set(zip(phase.tolist(), block.tolist(), strict=True))):
            sel = (phase == p) & (block == b)
            layout_comp, layout_rank = self._layout(p, b)
            c = layout_comp[pos[sel]]
            comp[sel] = c
            draw[sel] = self._base[p][c] + b * self.counts[p][c] + layout_rank[pos[sel]]
        return comp, draw

    def draws_before(self, start: int) -> np.ndarray:
        """Draws per component in the global stream before offset ``start``."""
        phase, block, pos = (int(x[0]) for x in self._locate(np.array([start], dtype=np.int64)))
        comp, _ = self._layout(phase, block)
        partial = np.bincount(comp[:pos], minlength=len(self.components))
        return self._base[phase] + block * self.counts[phase] + partial
