"""The compiled inner loops of exact-substring dedup: comparing windows, grouping a chunk's sorted suffixes,
merging two chunks' sorted windows, and turning decisions into runs.

Every loop here is resumable where its output has no bound known in advance: it works until an output buffer
is full and returns where it stopped, so the caller writes the buffer to disk and calls again. That is what keeps
a unit's memory at its inputs plus fixed buffers, whatever the corpus's repeats look like (one boilerplate line
repeated a million times in a chunk is one group of a million members, never a million-entry array in memory).

Texts are handed over as ``uint64`` views of their bytes padded with 16 zero bytes, so a window comparison reads
8 bytes a step (two aligned loads and a shift) instead of one: a duplicated window costs ``min_bytes / 8`` steps,
not ``min_bytes``.
"""

from __future__ import annotations

import numpy as np

from datapipe.kernels.jit import kernel, leaf

# a window that stays (global positions of an earlier build's text are negative, so not -1)
KEPT = np.int64(-(2**62))
# "no occurrence": larger than any global position, so min() picks a real one
FAR = np.int64(2**62)


@leaf
def word_at(t64, pos):  # pragma: no cover - compiled
    """The 8 bytes at byte offset ``pos`` as one little-endian word (an unaligned load from two aligned ones)."""
    q = pos >> 3
    s = (pos & 7) * 8
    lo = t64[q]
    if s == 0:
        return lo
    return (lo >> np.uint64(s)) | (t64[q + 1] << np.uint64(64 - s))


@leaf
def common_prefix(ta, a, tb, b, start, limit):  # pragma: no cover - compiled
    """The length of the common prefix of ``ta[a:]`` and ``tb[b:]``, given that it is at least ``start``, capped
    at ``limit``; 8 bytes a step."""
    i = start
    while i < limit:
        x = word_at(ta, a + i) ^ word_at(tb, b + i)
        if x != 0:
            while (x & np.uint64(0xFF)) == 0:
                x >>= np.uint64(8)
                i += 1
            return min(i, limit)
        i += 8
    return limit


@leaf
def bit(bits, i):  # pragma: no cover - compiled
    return (bits[i >> 3] >> (i & 7)) & 1


@leaf
def mark_windows(doc_ends, owned, k, valid):  # pragma: no cover - compiled
    """Set bit ``p`` of ``valid`` for every window start ``p < owned`` whose ``k`` bytes end inside its document
    (``doc_ends``: the local end of every document that reaches into the chunk, ascending): windows never cross
    a document boundary."""
    start = 0
    for d in range(doc_ends.shape[0]):
        end = doc_ends[d]
        if end <= 0:
            continue
        last = min(end - k, owned - 1)  # the last start whose window fits
        p = max(start, 0)
        while p <= last:
            valid[p >> 3] |= np.uint8(1 << (p & 7))
            p += 1
        start = end
        if start >= owned:
            break


@leaf
def phi_pass(sa_piece, prev, phi):  # pragma: no cover - compiled
    """Kärkkäinen, Manzini and Puglisi's Phi array from a piece of the suffix array: ``phi[sa[i]] = sa[i - 1]``
    (-1 for the first suffix); returns the piece's last suffix, the next piece's ``prev``."""
    for i in range(sa_piece.shape[0]):
        p = sa_piece[i]
        phi[p] = prev
        prev = p
    return prev


@leaf
def plcp_pass(phi, t64, n, k):  # pragma: no cover - compiled
    """Overwrite Phi with the permuted LCP array, capped at ``k``: ``phi[i]`` becomes the common prefix of the
    suffix at ``i`` and the one before it in sorted order (of the ``n`` bytes, not past them). In text order a
    suffix's value is at least the previous one's minus one, so the comparisons add up to O(n + n) bytes
    however repetitive the text, where comparing sorted neighbours directly costs up to ``k`` bytes each."""
    h = 0
    for i in range(n):
        j = phi[i]
        if j < 0:
            phi[i] = 0
            h = 0
            continue
        limit = min(k, n - i, n - j)
        h = common_prefix(t64, i, t64, j, min(h, limit), limit)
        phi[i] = h
        h = max(h - 1, 0)


@leaf
def group_pass(sa_piece, plcp, valid, k, state, bounds, members_out, lcp_out):  # pragma: no cover - compiled
    """Walk a piece of the suffix array (from ``state[0]`` within it), keep the suffixes that start a window
    this chunk owns (``valid``: windows never cross a document boundary), and split them into groups of equal
    windows.

    The common prefix of two kept suffixes is the smallest PLCP value between them. A new group starts where
    it is below ``k``: its bit in ``bounds`` (indexed by kept suffix) is set and that value is appended to
    ``lcp_out``, the LCP between consecutive groups that the pairwise merge needs; every kept suffix is
    appended to ``members_out``. Returns (members written, LCPs written) when either buffer is full or the piece
    is walked; ``state`` = (next index in the piece, suffixes kept so far, LCP since the last kept one or -1
    before the first) carries over, also from piece to piece.
    """
    i = state[0]
    w = state[1]
    shared = state[2]
    n_m = 0
    n_l = 0
    cap_m = members_out.shape[0]
    cap_l = lcp_out.shape[0]
    n_sa = sa_piece.shape[0]
    n_valid = valid.shape[0] * 8
    while i < n_sa and n_m < cap_m and n_l < cap_l:
        p = sa_piece[i]
        i += 1
        if shared >= 0:
            shared = min(shared, plcp[p])
        if p >= n_valid or bit(valid, p) == 0:
            continue
        if shared < k:
            bounds[w >> 3] |= np.uint8(1 << (w & 7))
            lcp_out[n_l] = max(shared, 0)
            n_l += 1
        members_out[n_m] = p
        n_m += 1
        w += 1
        shared = k
    state[0] = i
    state[1] = w
    state[2] = shared
    return n_m, n_l


@leaf
def earliest_pass(sa, n_members, bounds, state, multi_g, multi_second):  # pragma: no cover - compiled
    """For each group (from ``state``: next member, groups done), its earliest member, written over ``sa`` at
    the group's index (never past the members still to read), and for groups of two or more, its second
    earliest, appended to ``multi_g``/``multi_second``. Returns how many of those it appended; stops at a group
    boundary when the buffers are full."""
    m = state[0]
    g = state[1]
    n_out = 0
    cap = multi_g.shape[0]
    while m < n_members and n_out < cap:
        first = sa[m]
        second = np.int32(-1)
        size = 1
        m += 1
        while m < n_members and bit(bounds, m) == 0:
            p = sa[m]
            if p < first:
                second = first
                first = p
            elif second < 0 or p < second:
                second = p
            size += 1
            m += 1
        sa[g] = first
        if size > 1:
            multi_g[n_out] = g
            multi_second[n_out] = second
            n_out += 1
        g += 1
    state[0] = m
    state[1] = g
    return n_out


@leaf
def merge_pass(ta, ta8, ra, la, tb, tb8, rb, lb, k, state, out_a, out_b):  # pragma: no cover - compiled
    """Merge two chunks' sorted distinct windows (``ra``/``rb``: window starts in their texts ``ta``/``tb``;
    ``ta8``/``tb8``: the same texts as bytes; ``la``/``lb``: each one's common prefix with the one before it in its own list) and record the pairs that are
    equal: ``out_a[j]``/``out_b[j]`` are the indexes into ``ra``/``rb`` of the j-th equal pair.

    The merge is LCP-aware (Ng and Kakehi's binary merge): with ``ha``/``hb`` the common prefix of each head with
    the last window output, the larger one is the smaller window without reading a byte; only when they are
    equal are the texts compared, from that offset on. ``state`` = (ia, ib, ha, hb) carries over between calls;
    the call returns when either list or the output is used up. A list's next head has ``ha = la[next]``.
    """
    ia = state[0]
    ib = state[1]
    ha = state[2]
    hb = state[3]
    na = ra.shape[0]
    nb = rb.shape[0]
    n_out = 0
    cap = out_a.shape[0]
    while ia < na and ib < nb and n_out < cap:
        if ha > hb:
            ia += 1
            if ia < na:
                ha = la[ia]
        elif hb > ha:
            ib += 1
            if ib < nb:
                hb = lb[ib]
        else:
            shared = common_prefix(ta, ra[ia], tb, rb[ib], ha, k)
            if shared >= k:
                out_a[n_out] = ia
                out_b[n_out] = ib
                n_out += 1
                ia += 1
                ib += 1
                if ia < na:
                    ha = la[ia]
                if ib < nb:
                    hb = lb[ib]
            elif ta8[ra[ia] + shared] < tb8[rb[ib] + shared]:
                hb = shared
                ia += 1
                if ia < na:
                    ha = la[ia]
            else:
                ha = shared
                ib += 1
                if ib < nb:
                    hb = lb[ib]
    state[0] = ia
    state[1] = ib
    state[2] = ha
    state[3] = hb
    return n_out


@leaf
def order(ta, ta8, a, tb, tb8, b, k):  # pragma: no cover - compiled
    """-1, 0 or 1 as the window at ``a`` in one text is smaller than, equal to or larger than the window at
    ``b`` in another: where a merge can be split so that equal windows stay together."""
    shared = common_prefix(ta, a, tb, b, 0, k)
    if shared >= k:
        return 0
    return -1 if ta8[a + shared] < tb8[b + shared] else 1


@leaf
def decide_pass(
    members, bounds, g_start, base, reps, second, other, keep_first, p_out, copy_out
):  # pragma: no cover - compiled
    """Decide a piece of members (``bounds``: the piece's group-start bits; its first member is in group
    ``g_start``) and append each removed window's start (local) and copy (global position) to ``p_out`` /
    ``copy_out``, which hold a piece; returns how many.

    ``reps``/``second``/``other`` are indexed by group minus ``g_start``: the earliest and second earliest
    member (local, -1 for none) and the earliest occurrence in any other chunk (global, ``FAR`` for none).
    ``first``: a window goes when the earliest occurrence of its bytes is elsewhere, and names it; ``none``: a
    window goes when its bytes occur anywhere else, and names the earliest other occurrence.
    """
    g = g_start
    n = 0
    for m in range(members.shape[0]):
        if m > 0 and bit(bounds, m) == 1:
            g += 1
        p = members[m]
        j = g - g_start
        earliest = base + reps[j]
        if keep_first:
            c = min(earliest, other[j])
            if c == base + p:
                continue
        else:
            if p != reps[j]:
                c = earliest
            elif second[j] >= 0:
                c = base + second[j]
            else:
                c = FAR
            c = min(c, other[j])
            if c == FAR:
                continue
        p_out[n] = p
        copy_out[n] = c
        n += 1
    return n


@leaf
def fill(p, copy, lo, dense):  # pragma: no cover - compiled
    """``dense[p - lo] = copy`` for a spilled range of decided windows."""
    for i in range(p.shape[0]):
        dense[p[i] - lo] = copy[i]


@kernel
def runs_of(copy, lo):  # pragma: no cover - compiled
    """Runs of consecutive removed windows whose copies are consecutive too: ``(start, count, copy start)``, the
    window starts global (``lo`` + index)."""
    n = copy.shape[0]
    count = 0
    for i in range(n):
        if copy[i] != KEPT and (i == 0 or copy[i - 1] == KEPT or copy[i - 1] + 1 != copy[i]):
            count += 1
    starts = np.empty(count, np.int64)
    lengths = np.empty(count, np.int64)
    copies = np.empty(count, np.int64)
    r = -1
    for i in range(n):
        c = copy[i]
        if c == KEPT:
            continue
        if i == 0 or copy[i - 1] == KEPT or copy[i - 1] + 1 != c:
            r += 1
            starts[r] = lo + i
            lengths[r] = 0
            copies[r] = c
        lengths[r] += 1
    return starts, lengths, copies
