"""Fixed-length training sequences over one component's token stream, and the segment ids that keep attention
inside documents.

A component's cache is one concatenated stream of token ids (documents end with EOS when the tokenizer adds it).
Two ways to cut it into ``seq_len`` sequences, each a contiguous span of the stream:

* ``concat`` (Levanter's and Marin's default): sequence ``i`` is ``stream[i*L : (i+1)*L]``; documents run across
  sequence edges and nothing is padded. The tail shorter than ``L`` is not used.
* ``document``: greedy document-aligned packing. Documents are appended to the current sequence while they fit; one
  that does not fit starts the next sequence, and the rest of the current one is padding. A document longer than
  ``L`` is the only one split: into whole ``L`` pieces, its remainder opening the next sequence. Because documents
  are consecutive in the stream, a packed sequence is still one contiguous span, read with one request.

Segment ids number the documents inside a sequence from 0; a new segment starts after every EOS token (or at row
boundaries when the tokenizer adds no EOS). Padding has segment id -1 and token id ``pad_id``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from datapipe.kernels.jit import kernel

PACKINGS = ("concat", "document")
PAD_SEGMENT = -1


@kernel
def _pack_greedy(ends: np.ndarray, seq_len: int) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - numba
    n_docs = len(ends)
    cap = 16 + n_docs + (ends[-1] // seq_len if n_docs else 0)
    starts = np.empty(cap, dtype=np.int64)
    lengths = np.empty(cap, dtype=np.int64)
    n = 0
    cur_start = 0
    cur_len = 0
    prev = 0
    for d in range(n_docs):
        a = prev
        b = ends[d]
        prev = b
        size = b - a
        if size == 0:
            continue
        if size > seq_len:
            if cur_len:
                starts[n] = cur_start
                lengths[n] = cur_len
                n += 1
            full = size // seq_len
            for k in range(full):
                starts[n] = a + k * seq_len
                lengths[n] = seq_len
                n += 1
            cur_start = a + full * seq_len
            cur_len = size - full * seq_len
        elif cur_len + size <= seq_len:
            if cur_len == 0:
                cur_start = a
            cur_len += size
        else:
            starts[n] = cur_start
            lengths[n] = cur_len
            n += 1
            cur_start = a
            cur_len = size
    if cur_len:
        starts[n] = cur_start
        lengths[n] = cur_len
        n += 1
    return starts[:n], lengths[:n]


@dataclass(frozen=True)
class SequenceLayout:
    """Where each sequence of one component lies in its token stream."""

    seq_len: int
    packing: str
    num_tokens: int
    starts: np.ndarray | None = None  # document packing only
    lengths: np.ndarray | None = None

    @classmethod
    def build(
        cls, seq_len: int, packing: str, num_tokens: int, ends: np.ndarray | None = None
    ) -> SequenceLayout:
        if seq_len < 1:
            raise ValueError(f"seq_len must be >= 1, got {seq_len}")
        if packing not in PACKINGS:
            raise ValueError(f"packing must be one of {', '.join(PACKINGS)}, got {packing!r}")
        if packing == "concat":
            return cls(seq_len, packing, num_tokens)
        if ends is None:
            raise ValueError("document packing needs the row ends")
        starts, lengths = _pack_greedy(np.asarray(ends, dtype=np.int64), seq_len)
        return cls(seq_len, packing, num_tokens, starts, lengths)

    def __len__(self) -> int:
        if self.packing == "concat":
            return self.num_tokens // self.seq_len
        assert self.starts is not None  # document packing always has them (see build)
        return len(self.starts)

    def spans(self, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(start, length) in the stream of each sequence index."""
        seqs = np.asarray(seqs, dtype=np.int64)
        if self.packing == "concat":
            return seqs * self.seq_len, np.full(len(seqs), self.seq_len, dtype=np.int64)
        assert self.starts is not None and self.lengths is not None
        return self.starts[seqs], self.lengths[seqs]

    @property
    def padding_share(self) -> float:
        """Share of token slots that are padding (0 for ``concat``)."""
        if self.packing == "concat" or not len(self):
            return 0.0
        assert self.lengths is not None
        return 1.0 - float(self.lengths.sum()) / (len(self) * self.seq_len)

    @property
    def unused_tokens(self) -> int:
        """Tokens of the stream no sequence covers (the tail in ``concat``; none in ``document``)."""
        if self.packing == "concat":
            return self.num_tokens - len(self) * self.seq_len
        assert self.lengths is not None
        return self.num_tokens - int(self.lengths.sum())


def segment_ids(
    tokens: np.ndarray, length: int, eos_id: int | None, row_starts: np.ndarray | None = None
) -> np.ndarray:
    """Segment ids for one sequence whose first ``length`` slots hold ``tokens`` (the rest is padding).

    With ``eos_id``, a new segment starts after each EOS; otherwise at the positions in ``row_starts`` (document
    starts relative to the sequence's first token).
    """
    seq_len = len(tokens)
    seg = np.full(seq_len, PAD_SEGMENT, dtype=np.int32)
    if length == 0:
        return seg
    boundary = np.zeros(length, dtype=np.int32)
    if eos_id is not None:
        boundary[1:] = tokens[: length - 1] == eos_id
    elif row_starts is not None:
        inside = row_starts[(row_starts > 0) & (row_starts < length)]
        boundary[inside] = 1
    seg[:length] = np.cumsum(boundary, dtype=np.int32)
    return seg
