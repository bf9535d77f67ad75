"""``MixtureLoader``: the batches of a weighted mixture, each a pure function of (manifest, seed, step).

Nothing is carried from one batch to the next, so resuming at step N needs only N. For step ``s``:

1. :class:`~datapipe.data.mixing.MixtureSchedule` says which component and which draw of it fills each of the
   ``batch_size(s)`` rows (exact per-block counts, shuffled positions, phases by step).
2. Draw ``k`` of a component with ``n`` sequences is position ``k mod n`` of epoch ``k div n``; a keyed permutation
   of that epoch (a new one per epoch unless ``reshuffle_each_epoch`` is off) gives the sequence.
3. Only the rows this process's devices hold are read: one TensorStore batch of span reads per step, issued ahead
   by background threads (``prefetch`` steps deep) in :meth:`iter_from`.
4. With a mesh, the global ``jax.Array`` is assembled by ``jax.make_array_from_callback``, rows sharded over the
   mesh's batch axes (``data`` and ``fsdp`` when present).

A batch is a dict: ``input_ids`` and ``segment_ids`` (int32, ``[batch, seq_len]``; padding has segment -1) and
``component`` (int32 ``[batch]``, the index into :attr:`MixtureLoader.components`).
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import tensorstore as ts

from datapipe.data.mixing import MixtureSchedule, Phase, manifest_phases
from datapipe.data.permutation import BlockShuffle, FeistelPermutation, derive_key
from datapipe.data.sequences import SequenceLayout, segment_ids
from datapipe.errors import DatapipeError
from datapipe.store.cache import TokenCache
from datapipe.store.manifest import load_manifest, open_component

STOP_STRATEGIES = ("restart", "first_exhausted", "all_exhausted")
SHUFFLES = ("feistel", "block")
_SEQUENCES = 0x5E0
_HOLDOUT = 0x401D
SPLITS = ("train", "heldout")


class DataExhausted(DatapipeError):
    """The stop strategy ends the stream before this step."""

    def __init__(self, step: int, reason: str) -> None:
        super().__init__(f"step {step}: {reason}")
        self.step = step


@dataclass(frozen=True)
class HostBatch:
    """The rows of one step that this process reads (``rows`` are global row indices, ascending)."""

    step: int
    batch_size: int
    rows: np.ndarray
    input_ids: np.ndarray
    segment_ids: np.ndarray
    component: np.ndarray


def held_out(sequences: int, holdout: int) -> int:
    """How many of a component's sequences are held out of training: ``holdout``, but never more than a tenth."""
    return min(max(0, holdout), sequences // 10)


class _Component:
    """One component's cache, sequence layout, held-out split and per-epoch permutations.

    With ``holdout`` > 0, a fixed keyed permutation of all the component's sequences (keyed by the manifest's seed
    and the component's name, not by a run's seed: every run of the manifest holds out the same rows) puts its
    first ``held_out(n, holdout)`` sequences in the held-out split and the rest in the training split; a split's
    index ``i`` is that permutation's sequence ``offset + i``."""

    def __init__(
        self,
        name: str,
        cache: TokenCache,
        layout: SequenceLayout,
        ends: np.ndarray | None,
        loader_key: int,
        split_key: int,
        holdout: int = 0,
        split: str = "train",
    ):
        self.name, self.cache, self.layout, self.ends = name, cache, layout, ends
        ident = cache.tokenizer
        self.eos_id = ident.eos_id if ident.add_eos else None
        self.pad_id = ident.eos_id if ident.eos_id is not None else 0
        digest = int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "little")
        self.key = derive_key(loader_key, digest)
        self.heldout = held_out(len(layout), holdout)
        self.num_sequences = len(layout) - self.heldout if split == "train" else self.heldout
        self._offset = self.heldout if split == "train" else 0
        self._split = (
            FeistelPermutation(len(layout), derive_key(split_key, digest, _HOLDOUT)) if self.heldout else None
        )

    def heldout_sequences(self) -> np.ndarray:
        if self._split is None:
            return np.zeros(0, np.int64)
        return self._split.apply(np.arange(self.heldout, dtype=np.int64))

    def sequences(self, index: np.ndarray) -> np.ndarray:
        """The layout's sequences at this split's indices."""
        if self._split is None:
            return index
        return self._split.apply(np.asarray(index, dtype=np.int64) + self._offset)


class MixtureLoader:
    """Deterministic batches of a mixture manifest.

    ``manifest``: a ``mixture.json`` or its folder. ``seq_len`` and ``seed`` default to the manifest's. ``phases``
    overrides the manifest's weights and ``schedule`` (every phase's batch size is ``global_batch`` unless the
    phases say otherwise).
    """

    def __init__(
        self,
        manifest: str,
        seq_len: int | None = None,
        global_batch: int = 8,
        seed: int | None = None,
        mesh: Any = None,
        *,
        phases: Sequence[Phase] | None = None,
        block_size: int = 2048,
        packing: str = "concat",
        stop: str = "restart",
        reshuffle_each_epoch: bool = True,
        shuffle: str = "feistel",
        shuffle_block: int = 64,
        shuffle_window: int = 8,
        prefetch: int = 2,
        batch_axes: Sequence[str] | None = None,
        holdout: int = 0,
        split: str = "train",
    ) -> None:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
        if stop not in STOP_STRATEGIES:
            raise ValueError(f"stop must be one of {', '.join(STOP_STRATEGIES)}, got {stop!r}")
        if shuffle not in SHUFFLES:
            raise ValueError(f"shuffle must be one of {', '.join(SHUFFLES)}, got {shuffle!r}")
        self.manifest = load_manifest(manifest)
        self.manifest_url = url = self.manifest.url
        self.seq_len = int(seq_len or self.manifest.seq_len)
        self.seed = int(self.manifest.seed if seed is None else seed)
        self.stop, self.reshuffle_each_epoch, self.prefetch = stop, reshuffle_each_epoch, max(0, prefetch)
        self.shuffle, self.shuffle_block, self.shuffle_window = shuffle, shuffle_block, shuffle_window
        self.components: list[str] = [c.name for c in self.manifest.components]
        self.holdout, self.split = holdout, split
        if phases is None:
            phases = manifest_phases(self.manifest, global_batch)
        self.schedule = MixtureSchedule(self.components, phases, self.seed, block_size)
        self._comps = [self._open(name, packing) for name in self.components]
        for ph in self.schedule.phases:
            for name, w in ph.weights.items():
                comp = self._comps[self.components.index(name)]
                if w > 0 and comp.num_sequences == 0:
                    what = "held-out sequence" if split == "heldout" else "whole sequence"
                    raise DatapipeError(
                        f"{url}: component {name!r} has weight {w:g} from step {ph.start_step} but no {what} "
                        f"of {self.seq_len} tokens ({comp.cache.num_tokens} tokens in {comp.cache.path})"
                    )
        self.mesh = mesh
        self.batch_axes = tuple(batch_axes) if batch_axes else self._default_batch_axes(mesh)
        self._perm = lru_cache(maxsize=64)(self._permutation)
        self._host_rows = lru_cache(maxsize=8)(self._compute_host_rows)

    # --- construction ---------------------------------------------------------------------------------------
    def _open(self, name: str, packing: str) -> _Component:
        cache = open_component(self.manifest, name)
        ident = cache.tokenizer
        need_ends = packing == "document" or not (ident.add_eos and ident.eos_id is not None)
        ends = cache.input_ids.ends() if need_ends else None
        layout = SequenceLayout.build(self.seq_len, packing, cache.num_tokens, ends)
        split_key = self.manifest.seed
        return _Component(name, cache, layout, ends, self.seed, split_key, self.holdout, self.split)

    @staticmethod
    def _default_batch_axes(mesh: Any) -> tuple[str, ...]:
        if mesh is None:
            return ()
        axes = tuple(a for a in ("data", "fsdp") if a in mesh.axis_names)
        return axes or (mesh.axis_names[0],)

    # --- plan: which sequence fills each row -----------------------------------------------------------------
    def _permutation(self, comp: int, epoch: int):
        c = self._comps[comp]
        key = derive_key(c.key, _SEQUENCES, epoch if self.reshuffle_each_epoch else 0)
        if self.shuffle == "block":
            return BlockShuffle(c.num_sequences, key, self.shuffle_block, self.shuffle_window)
        return FeistelPermutation(c.num_sequences, key)

    def plan(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        """(component index, sequence index) of every row of step ``step``'s global batch; reads nothing."""
        start, size = self.schedule.offset(step), self.schedule.batch_size(step)
        comp, draw = self.schedule.assign(start, size)
        self._check_stop(step, start, comp, draw)
        seq = np.empty(size, dtype=np.int64)
        for c in np.unique(comp):
            sel = comp == c
            n = self._comps[c].num_sequences
            epoch, pos = np.divmod(draw[sel], n)
            out = np.empty(len(pos), dtype=np.int64)
            for e in np.unique(epoch):
                at = epoch == e
                out[at] = self._perm(int(c), int(e)).apply(pos[at])
            seq[sel] = self._comps[c].sequences(out)
        return comp, seq

    def _check_stop(self, step: int, start: int, comp: np.ndarray, draw: np.ndarray) -> None:
        if self.stop == "restart":
            return
        sizes = np.array([c.num_sequences for c in self._comps])
        if self.stop == "first_exhausted":
            over = draw >= sizes[comp]
            if over.any():
                name = self.components[int(comp[np.argmax(over)])]
                raise DataExhausted(step, f"component {name!r} is exhausted (stop strategy first_exhausted)")
            return
        weights = self.schedule.phases[self.schedule.phase_index(step)].weights
        active = [i for i, name in enumerate(self.components) if weights.get(name, 0) > 0]
        before = self.schedule.draws_before(start)
        if all(before[i] >= sizes[i] for i in active):
            raise DataExhausted(step, "every component has been seen whole (stop strategy all_exhausted)")

    # --- reading ---------------------------------------------------------------------------------------------
    def _compute_host_rows(self, batch_size: int) -> np.ndarray:
        if self.mesh is None:
            return np.arange(batch_size, dtype=np.int64)
        sharding = self.sharding(1)
        rows: set[int] = set()
        for index in sharding.addressable_devices_indices_map((batch_size,)).values():
            rows.update(range(batch_size)[index[0]])
        return np.array(sorted(rows), dtype=np.int64)

    def host_rows(self, step: int) -> np.ndarray:
        """Global row indices of step ``step``'s batch that this process's devices hold."""
        return self._host_rows(self.schedule.batch_size(step))

    def read(self, step: int) -> HostBatch:
        """Read this process's rows of step ``step`` (one TensorStore batch of span reads for all components)."""
        comp, seq = self.plan(step)
        rows = self.host_rows(step)
        comp, seq = comp[rows], seq[rows]
        input_ids, segs = self._fetch(comp, seq)
        return HostBatch(step, self.schedule.batch_size(step), rows, input_ids, segs, comp.astype(np.int32))

    def heldout_sequences(self, name: str) -> np.ndarray:
        """The layout sequences of a component's held-out split, in split order (this loader's ``split`` aside):
        what evaluation reads, each once."""
        return self._comps[self.components.index(name)].heldout_sequences()

    def read_sequences(self, name: str, seq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(input_ids, segment_ids) ``[len(seq), seq_len]`` of a component's layout sequences."""
        comp = np.full(len(seq), self.components.index(name), dtype=np.int64)
        return self._fetch(comp, np.asarray(seq, dtype=np.int64))

    def _fetch(self, comp: np.ndarray, seq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows of (component, layout sequence): tokens padded to ``seq_len`` and their segment ids."""
        futures: list[Any] = [None] * len(comp)
        spans: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        with ts.Batch() as batch:
            for c in np.unique(comp):
                at = np.flatnonzero(comp == c)
                starts, lengths = self._comps[c].layout.spans(seq[at])
                spans[int(c)] = (starts, lengths)
                for row, f in zip(
                    at, self._comps[c].cache.input_ids.read_spans(starts, lengths, batch), strict=True
                ):
                    futures[row] = f
        input_ids = np.empty((len(comp), self.seq_len), dtype=np.int32)
        segs = np.empty((len(comp), self.seq_len), dtype=np.int32)
        cursor = {c: 0 for c in spans}
        for i, f in enumerate(futures):
            c = int(comp[i])
            starts, lengths = spans[c]
            start, length = int(starts[cursor[c]]), int(lengths[cursor[c]])
            cursor[c] += 1
            tokens = f.result()
            comp_obj = self._comps[c]
            input_ids[i, :length] = tokens
            input_ids[i, length:] = comp_obj.pad_id
            row_starts = None
            if comp_obj.eos_id is None:
                assert comp_obj.ends is not None  # read whenever rows carry no EOS (see _open)
                lo, hi = np.searchsorted(comp_obj.ends, [start, start + length], side="right")
                row_starts = comp_obj.ends[lo:hi] - start
            segs[i] = segment_ids(input_ids[i], length, comp_obj.eos_id, row_starts)
        return input_ids, segs

    # --- assembling ------------------------------------------------------------------------------------------
    def sharding(self, ndim: int):
        """The sharding of a batch array with ``ndim`` dimensions: rows over the batch axes, the rest whole."""
        from jax.sharding import NamedSharding, PartitionSpec

        if self.mesh is None:
            raise ValueError("no mesh: the loader returns host arrays")
        return NamedSharding(self.mesh, PartitionSpec(self.batch_axes, *([None] * (ndim - 1))))

    def assemble(self, host: HostBatch) -> dict[str, Any]:
        """Global arrays for a host batch: numpy without a mesh, ``jax.Array``s sharded on the mesh with one."""
        arrays = {"input_ids": host.input_ids, "segment_ids": host.segment_ids, "component": host.component}
        if self.mesh is None:
            return arrays
        import jax

        out = {}
        for name, local in arrays.items():
            shape = (host.batch_size, *local.shape[1:])

            def fetch(index, local=local):
                wanted = np.arange(host.batch_size)[index[0]]
                return local[np.searchsorted(host.rows, wanted)][(slice(None), *index[1:])]

            out[name] = jax.make_array_from_callback(shape, self.sharding(local.ndim), fetch)
        return out

    def batch(self, step: int) -> dict[str, Any]:
        """The batch of step ``step``."""
        return self.assemble(self.read(step))

    def iter_from(self, step: int = 0, stop_step: int | None = None) -> Generator[dict[str, Any], None, None]:
        """Batches from ``step`` on (until ``stop_step`` or the stop strategy ends the stream), read ``prefetch``
        steps ahead by background threads."""
        if self.prefetch == 0:
            s = step
            while stop_step is None or s < stop_step:
                try:
                    yield self.batch(s)
                except DataExhausted:
                    return
                s += 1
            return
        with ThreadPoolExecutor(max_workers=self.prefetch, thread_name_prefix="datapipe-loader") as pool:
            pending: deque = deque()
            nxt = step
            try:
                while True:
                    while len(pending) < self.prefetch and (stop_step is None or nxt < stop_step):
                        pending.append(pool.submit(self.read, nxt))
                        nxt += 1
                    if not pending:
                        return
                    try:
                        host = pending.popleft().result()
                    except DataExhausted:
                        return
                    yield self.assemble(host)
            finally:
                for f in pending:
                    f.cancel()

    # --- reporting -------------------------------------------------------------------------------------------
    def describe(self) -> list[dict[str, Any]]:
        """Per component: sequences, padding share, tokens no sequence covers, and weight in the first phase."""
        first = self.schedule.phases[0].weights
        return [
            {
                "name": c.name,
                "sequences": c.num_sequences,
                "heldout": c.heldout,
                "tokens": c.cache.num_tokens,
                "padding_share": round(c.layout.padding_share, 6),
                "unused_tokens": c.layout.unused_tokens,
                "weight": float(first.get(c.name, 0.0)),
            }
            for c in self._comps
        ]
