"""The units of exact-substring dedup: independent, resumable pieces of work an engine schedules in rows.

```
row      unit                       reads                                   writes
sort     sort_chunk(work, c)        chunk c's text                          chunks/chunk-c/
match    match_pair(work, a, b)     the texts and sorted windows of a, b    pairs/a--b/
finish   finish_chunk(work, c, K)   chunk c's groups, every pair with c     runs-K/chunk-c.bin
apply    apply_part(work, p, K)     part p's text, the runs over it         nothing: yields each document
```

A row needs the row before it finished; the units of one row are independent of each other. ``budget.units``
lists them. Each unit commits by renaming its output into place, and is skipped when that exists.

**Why pairs.** Two windows in different chunks are found equal by merging the two chunks' sorted windows, with
both texts in memory and the sorted windows streamed from disk: exact (every byte compared), and no unit ever
holds more than two chunks' text. The number of pairs grows as the square of the number of chunks, so chunks
are as large as the memory budget allows (``budget.plan``), and a pair's merge is split into key ranges that run
on threads sharing the two texts.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from datapipe.substrings import kernels
from datapipe.substrings.work import (
    MATCH,
    MULTI,
    RUN,
    ChunkRef,
    SortedRows,
    chunk_name,
    chunk_text,
    commit_dir,
    doc_starts,
    fresh_tmp,
    read_layout,
    read_rows,
    rows_in,
)

KEEP = ("first", "none")
DECIDED = np.dtype([("p", "<i4"), ("copy", "<i8")])  # a removed window (local start) and its copy
BUFFER = 1 << 20  # rows per output buffer of a resumable kernel
PIECE = 1 << 20  # sorted windows per piece a merge reads at a time (per list, per thread)
FINISH_BYTES = 256 << 20  # the most a finish pass decides at once (8 bytes per window start)
MEMBERS = 1 << 20  # members per piece of the finish pass (a multiple of 8: pieces start on a byte of bits)


def chunk_dir(ref: ChunkRef) -> Path:
    """Where a chunk's sorted windows are: in the work folder that holds its text (an earlier build's own)."""
    return Path(ref.work) / "chunks" / chunk_name(ref.index)


def _meta(ref: ChunkRef) -> dict[str, int]:
    meta: dict[str, int] = json.loads((chunk_dir(ref) / "meta.json").read_text())
    return meta


def sort_chunk(work: str | Path, c: int) -> None:
    """Suffix-sort chunk ``c``'s text (libdivsufsort) and group its windows: for every distinct window of
    ``min_bytes`` bytes that starts in the chunk and ends inside its document, the earliest start (``reps``,
    in sorted order), the common prefix with the previous distinct window (``lcp``), the second earliest start
    of those that occur twice or more (``multi``), and every start in sorted order (``members``) with a bit
    where each group begins (``bounds``).

    The LCPs come from Kärkkäinen, Manzini and Puglisi's Phi algorithm (linear, whatever the repeats), with
    the suffix array on disk meanwhile. Memory: the text plus its suffix array (5 bytes a byte), then Phi plus
    the text, then the PLCP array, then the members; and fixed buffers.
    """
    import pydivsufsort

    layout = read_layout(work)
    ref = layout.own_chunks(work)[c]
    final = chunk_dir(ref)
    if (final / "meta.json").exists():
        return
    k = layout.min_bytes
    text8, text64 = chunk_text(ref)
    starts = doc_starts(work)
    ends = starts[1:]
    lo = int(np.searchsorted(ends, ref.base, "right"))
    hi = int(np.searchsorted(ends, ref.base + ref.length, "left")) + 1
    valid = np.zeros((ref.owned + 7) // 8, np.uint8)
    kernels.mark_windows(ends[lo:hi] - ref.base, ref.owned, k, valid)
    tmp = fresh_tmp(final)
    n = ref.length
    sa = pydivsufsort.divsufsort(text8[:n])
    sa.tofile(tmp / "sa.i32")  # kept on disk while the LCPs are computed: never the text, SA and Phi at once
    del sa
    phi = np.empty(n, np.int32)
    prev = -1
    for lo in range(0, n, PIECE):
        prev = kernels.phi_pass(read_rows(tmp / "sa.i32", np.int32, lo, min(PIECE, n - lo)), prev, phi)
    kernels.plcp_pass(phi, text64, n, k)
    del text8, text64
    bounds = np.zeros((ref.owned + 7) // 8, np.uint8)
    members_out = np.empty(BUFFER, np.int32)
    lcp_out = np.empty(BUFFER, np.uint16)
    state = np.zeros(3, np.int64)
    state[2] = -1
    groups = 0
    with open(tmp / "lcp.u16", "wb") as fl, open(tmp / "members.i32", "wb") as fm:
        for lo in range(0, n, PIECE):
            piece = read_rows(tmp / "sa.i32", np.int32, lo, min(PIECE, n - lo))
            state[0] = 0
            while state[0] < len(piece):
                n_m, n_l = kernels.group_pass(piece, phi, valid, k, state, bounds, members_out, lcp_out)
                members_out[:n_m].tofile(fm)
                lcp_out[:n_l].tofile(fl)
                groups += n_l
    members = int(state[1])
    del phi, valid
    os.remove(tmp / "sa.i32")
    bounds[: (members + 7) // 8].tofile(tmp / "bounds.u8")
    sa = read_rows(tmp / "members.i32", np.int32, 0, members)
    multi_g = np.empty(BUFFER, np.int32)
    multi_second = np.empty(BUFFER, np.int32)
    state = np.zeros(2, np.int64)
    multis = 0
    with open(tmp / "multi.bin", "wb") as f:
        while state[0] < members:
            n = kernels.earliest_pass(sa, members, bounds, state, multi_g, multi_second)
            rows = np.empty(n, MULTI)
            rows["g"], rows["second"] = multi_g[:n], multi_second[:n]
            rows.tofile(f)
            multis += n
    assert state[1] == groups
    sa[:groups].tofile(tmp / "reps.i32")
    meta = {"members": members, "groups": groups, "multi": multis, "base": ref.base, "owned": ref.owned}
    (tmp / "meta.json").write_text(json.dumps(meta) + "\n")
    commit_dir(tmp, final)


def pair_dir(work: str | Path, a: ChunkRef, b: ChunkRef) -> Path:
    return Path(work) / "pairs" / f"{a.name}--{b.name}"


def match_pair(work: str | Path, a: int, b: int, threads: int = 1) -> None:
    """Find every distinct window chunk ``a`` and chunk ``b`` share (``a < b`` in the global chunk order of
    ``Layout.all_chunks``: an earlier build's chunks first). Writes, sorted by group, ``a.bin``: a's groups with
    b's earliest start of the same bytes, and ``b.bin``: the same from b's side (global positions).

    The two sorted lists are merged in ``threads`` key ranges at once, cut at a's quantiles (the cut window's
    place in b found by binary search), each range streamed in pieces: memory is the two texts and
    ``threads`` x 2 pieces."""
    layout = read_layout(work)
    refs = layout.all_chunks(work)
    ra, rb = refs[a], refs[b]
    final = pair_dir(work, ra, rb)
    if final.exists():
        return
    k = layout.min_bytes
    ta8, ta64 = chunk_text(ra)
    tb8, tb64 = chunk_text(rb)
    ga, gb = _meta(ra)["groups"], _meta(rb)["groups"]
    reps_a, reps_b = chunk_dir(ra) / "reps.i32", chunk_dir(rb) / "reps.i32"

    def rep(path: Path, i: int) -> int:
        return int(read_rows(path, np.int32, i, 1)[0])

    cuts_a = [ga * t // threads for t in range(threads + 1)]
    cuts_b = [0]
    for t in range(1, threads):
        if cuts_a[t] >= ga:
            cuts_b.append(gb)
            continue
        key = rep(reps_a, cuts_a[t])
        lo, hi = cuts_b[-1], gb
        while lo < hi:
            mid = (lo + hi) // 2
            if kernels.order(tb64, tb8, rep(reps_b, mid), ta64, ta8, key, k) < 0:
                lo = mid + 1
            else:
                hi = mid
        cuts_b.append(lo)
    cuts_b.append(gb)
    tmp = fresh_tmp(final)

    def merge(t: int) -> None:
        _merge_range(
            (ra, ta8, ta64, cuts_a[t], cuts_a[t + 1]),
            (rb, tb8, tb64, cuts_b[t], cuts_b[t + 1]),
            k,
            tmp / f"a.{t}",
            tmp / f"b.{t}",
        )

    if threads == 1:
        merge(0)
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(merge, range(threads)))
    for side in ("a", "b"):
        with open(tmp / f"{side}.bin", "wb") as out:
            for t in range(threads):
                with open(tmp / f"{side}.{t}", "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 22)
                os.remove(tmp / f"{side}.{t}")
    commit_dir(tmp, final)


class _Stream:
    """One list's sorted windows ``[start, stop)`` in pieces: ``reps`` (starts) and ``lcp``."""

    def __init__(self, ref: ChunkRef, start: int, stop: int) -> None:
        self.folder, self.next, self.stop = chunk_dir(ref), start, stop
        self.offset = start
        self.reps = np.empty(0, np.int32)
        self.lcp = np.empty(0, np.uint16)

    def load(self) -> bool:
        count = min(PIECE, self.stop - self.next)
        if count <= 0:
            return False
        self.offset = self.next
        self.reps = read_rows(self.folder / "reps.i32", np.int32, self.next, count)
        self.lcp = read_rows(self.folder / "lcp.u16", np.uint16, self.next, count)
        self.next += count
        return True


def _merge_range(
    a: tuple[ChunkRef, np.ndarray, np.ndarray, int, int],
    b: tuple[ChunkRef, np.ndarray, np.ndarray, int, int],
    k: int,
    out_a: Path,
    out_b: Path,
) -> None:
    (ra, ta8, ta64, a0, a1), (rb, tb8, tb64, b0, b1) = a, b
    sa, sb = _Stream(ra, a0, a1), _Stream(rb, b0, b1)
    hit_a = np.empty(BUFFER, np.int64)
    hit_b = np.empty(BUFFER, np.int64)
    state = np.zeros(4, np.int64)  # ia, ib, ha, hb: no window output yet, so both heads share 0 bytes with it
    with open(out_a, "wb") as fa, open(out_b, "wb") as fb:
        if not (sa.load() and sb.load()):
            return
        while True:
            n = kernels.merge_pass(
                ta64, ta8, sa.reps, sa.lcp, tb64, tb8, sb.reps, sb.lcp, k, state, hit_a, hit_b
            )
            if n:
                ia, ib = hit_a[:n], hit_b[:n]
                rows = np.empty(n, MATCH)
                rows["g"], rows["pos"] = ia + sa.offset, sb.reps[ib].astype(np.int64) + rb.base
                rows.tofile(fa)
                rows["g"], rows["pos"] = ib + sb.offset, sa.reps[ia].astype(np.int64) + ra.base
                rows.tofile(fb)
            if state[0] >= len(sa.reps):
                if not sa.load():
                    return
                state[0], state[2] = 0, sa.lcp[0]
            if state[1] >= len(sb.reps):
                if not sb.load():
                    return
                state[1], state[3] = 0, sb.lcp[0]


def runs_path(work: str | Path, keep: str, c: int) -> Path:
    return Path(work) / f"runs-{keep}" / f"chunk-{c:05d}.bin"


def finish_chunk(work: str | Path, c: int, keep: str, budget_bytes: int | None = None) -> None:
    """Decide every window of chunk ``c`` and write the removed ones as runs (``RUN``: start, count, copy
    start; a run's windows have consecutive copies), sorted by start.

    ``keep="first"``: a window goes when the earliest occurrence of its bytes (in document order, an earlier
    build's text first) is elsewhere; its copy is that occurrence. ``keep="none"``: a window goes when its bytes
    occur anywhere else; its copy is the earliest other occurrence.

    The members are in sorted order, the runs are wanted in text order: the window starts are decided a range
    at a time (``budget_bytes`` of 8-byte copies; by default twice the chunk size, at most 256 MiB, so less than
    the chunk's sort needed), each range by one streaming pass over the members.
    """
    if keep not in KEEP:
        raise ValueError(f"keep must be one of {KEEP}, not {keep!r}")
    layout = read_layout(work)
    refs = layout.all_chunks(work)
    first_own = len(refs) - layout.chunks
    me = refs[first_own + c]
    final = runs_path(work, keep, c)
    if final.exists():
        return
    final.parent.mkdir(parents=True, exist_ok=True)
    meta = _meta(me)
    folder = chunk_dir(me)
    sides = []
    for i, other in enumerate(refs):
        if i < first_own + c:
            sides.append(pair_dir(work, other, me) / "b.bin")
        elif i > first_own + c and i >= first_own:
            sides.append(pair_dir(work, me, other) / "a.bin")
    budget = budget_bytes or min(FINISH_BYTES, 2 * layout.chunk_bytes)
    span = max(8, min(me.owned, budget // 8))
    spill = final.with_name(final.name + ".spill")
    if spill.exists():
        shutil.rmtree(spill)
    spill.mkdir()
    ranges = range(0, me.owned, span)
    _decide(folder, meta, sides, me.base, keep == "first", span, [spill / f"{i}" for i in range(len(ranges))])
    tmp = final.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        for i, lo in enumerate(ranges):
            copy = np.full(min(span, me.owned - lo), kernels.KEPT, np.int64)
            for at in range(0, rows_in(spill / f"{i}", DECIDED), MEMBERS):
                decided = read_rows(spill / f"{i}", DECIDED, at, MEMBERS)
                kernels.fill(decided["p"], decided["copy"], lo, copy)
            starts, counts, copies = kernels.runs_of(copy, me.base + lo)
            rows = np.empty(len(starts), RUN)
            rows["start"], rows["count"], rows["copy"] = starts, counts, copies
            rows.tofile(out)
    os.replace(tmp, final)
    shutil.rmtree(spill)


def _decide(
    folder: Path,
    meta: dict[str, int],
    sides: Sequence[Path],
    base: int,
    keep_first: bool,
    span: int,
    spills: list[Path],
) -> None:
    """One streaming pass over the chunk's members in sorted order: decide each window and spill the removed
    ones (start, copy) to the file of their range of starts."""
    members, groups = meta["members"], meta["groups"]
    multi = SortedRows(folder / "multi.bin", MULTI, "g")
    others = [SortedRows(path, MATCH, "g") for path in sides]
    p_out = np.empty(MEMBERS, np.int32)
    copy_out = np.empty(MEMBERS, np.int64)
    files = [open(path, "wb") for path in spills]  # noqa: SIM115 - closed below, one per range
    g_last = -1  # the group of the member before this piece
    try:
        for m0 in range(0, members, MEMBERS):
            m1 = min(members, m0 + MEMBERS)
            part = read_rows(folder / "members.i32", np.int32, m0, m1 - m0)
            bounds = read_rows(folder / "bounds.u8", np.uint8, m0 // 8, (m1 - m0 + 7) // 8)
            bits = np.unpackbits(bounds, bitorder="little")[: m1 - m0]
            g0 = g_last + int(bits[0])
            g1 = g0 + int(bits[1:].sum())  # the group of the piece's last member
            reps = read_rows(folder / "reps.i32", np.int32, g0, g1 - g0 + 1)
            second = np.full(g1 - g0 + 1, -1, np.int32)
            rows = multi.between(g0, g1 + 1)
            second[rows["g"] - g0] = rows["second"]
            other = np.full(g1 - g0 + 1, kernels.FAR, np.int64)
            for side in others:
                rows = side.between(g0, g1 + 1)
                at = rows["g"] - g0  # one row per group in each side
                other[at] = np.minimum(other[at], rows["pos"])
            n = kernels.decide_pass(part, bounds, g0, base, reps, second, other, keep_first, p_out, copy_out)
            which = p_out[:n] // span
            for i in np.unique(which).tolist():
                picked = which == i
                rows = np.empty(int(picked.sum()), DECIDED)
                rows["p"], rows["copy"] = p_out[:n][picked], copy_out[:n][picked]
                rows.tofile(files[i])
            g_last = g1
    finally:
        for f in files:
            f.close()
    assert g_last == groups - 1 or members == 0
