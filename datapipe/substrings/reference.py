"""The brute-force reference the chunked algorithm is held to: one suffix array over the whole text (an earlier
build's first), its LCP array by Kasai's algorithm (pydivsufsort's), and every window decided from its group of
equal windows, all in memory. Nothing is shared with the chunked path but the definition of a run, so the
two agreeing means the chunking, the pair merges and the spilled streams lose and invent nothing.

Memory is about 17 bytes per byte of text: for checks on tens of MB, not for a build.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from datapipe.kernels.jit import kernel
from datapipe.substrings.kernels import KEPT, runs_of
from datapipe.substrings.work import RUN


@kernel
def _decide_all(sa, lcp, doc_end_of, k, keep_first, skip, copy):  # pragma: no cover - compiled
    """Walk the suffix array; consecutive valid windows whose LCP (the minimum of Kasai's values between them)
    reaches ``k`` share their bytes; decide each group's members into ``copy`` (positions from ``skip``)."""
    n = sa.shape[0]
    group = np.empty(n, np.int64)
    size = 0
    shared = 0  # LCP between the last valid suffix and the current one
    for i in range(n + 1):
        p = sa[i] if i < n else -1
        ok = i < n and p + k <= doc_end_of[p]
        if i < n and not ok:
            if i < n - 1:
                shared = min(shared, lcp[i])
            continue
        if size > 0 and (i == n or shared < k):
            first = group[0]
            second = -1
            for j in range(1, size):
                q = group[j]
                if q < first:
                    second = first
                    first = q
                elif second < 0 or q < second:
                    second = q
            for j in range(size):
                q = group[j]
                if q < skip:
                    continue
                if keep_first:
                    if q != first:
                        copy[q - skip] = first - skip
                elif size > 1:
                    copy[q - skip] = (first if q != first else second) - skip
            size = 0
        if i < n:
            group[size] = p
            size += 1
            shared = lcp[i] if i < n - 1 else 0


def reference_runs(prior_texts: Sequence[bytes], texts: Sequence[bytes], k: int, keep: str) -> np.ndarray:
    """The runs (``work.RUN``: global window starts, counts, copy starts; an earlier build's text at negative
    positions) that one in-memory suffix array gives for ``texts`` after ``prior_texts``."""
    import pydivsufsort

    every = [*prior_texts, *texts]
    skip = sum(len(t) for t in prior_texts)
    data = np.frombuffer(b"".join(every), dtype=np.uint8).copy()
    ends = np.cumsum([len(t) for t in every], dtype=np.int64)
    doc_end_of = np.repeat(ends, [len(t) for t in every]) if len(data) else np.empty(0, np.int64)
    copy = np.full(len(data) - skip, KEPT, np.int64)
    if len(data):
        sa = pydivsufsort.divsufsort(data).astype(np.int64)
        lcp = pydivsufsort.kasai(data, sa.astype(np.int32) if len(data) < 2**31 else sa).astype(np.int64)
        _decide_all(sa, lcp, doc_end_of, k, keep == "first", skip, copy)
    s, c, q = runs_of(copy, 0)
    rows = np.empty(len(s), RUN)
    rows["start"], rows["count"], rows["copy"] = s, c, q
    return rows


def join_runs(rows: np.ndarray) -> np.ndarray:
    """Runs with consecutive windows and consecutive copies joined: the chunked path cuts runs where its chunks
    and ranges end, the reference does not."""
    out: list[tuple[int, int, int]] = []
    for start, count, copy in rows.tolist():
        if out and out[-1][0] + out[-1][1] == start and out[-1][2] + out[-1][1] == copy:
            out[-1] = (out[-1][0], out[-1][1] + count, out[-1][2])
        else:
            out.append((start, count, copy))
    joined = np.empty(len(out), RUN)
    if out:
        joined["start"], joined["count"], joined["copy"] = np.array(out, dtype=np.int64).T
    return joined
