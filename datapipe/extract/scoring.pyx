# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The learned extractor's arithmetic, compiled: each block's text statistics, and a gradient-boosted tree ensemble
evaluated over a page's blocks.

Why compiled: a page has ~250 blocks. LightGBM's own ``Booster.predict`` took 5.1 ms for 250 rows of a 300-tree
model (2.6 ms with 150 trees), more than the whole extraction of a page (about 1 ms on Trafilatura's evaluation
pages); the same trees walked here over a contiguous float32 matrix take a fraction of that, and give the same
scores (a test holds them to LightGBM's). The text statistics read each block's characters once, in C, where the
same counts made with ``str`` methods in Python cost several microseconds a block.

Nothing here decides: :mod:`datapipe.extract.model` says what the numbers mean.
"""

from cpython.unicode cimport PyUnicode_READ, PyUnicode_KIND, PyUnicode_DATA, PyUnicode_GET_LENGTH
from libc.math cimport exp, isnan, log1p

import numpy as np
cimport numpy as cnp

cnp.import_array()

cdef extern from "Python.h":
    bint Py_UNICODE_ISALNUM(Py_UCS4 ch)
    bint Py_UNICODE_ISUPPER(Py_UCS4 ch)
    bint Py_UNICODE_ISDIGIT(Py_UCS4 ch)
    bint Py_UNICODE_ISALPHA(Py_UCS4 ch)

# the columns of text_stats, in order
STATS = ("words", "digit_share", "upper_share", "ends_sentence", "currency", "sentences")


cdef extern from "Python.h":
    unsigned long long PyLong_AsUnsignedLongLongMask(object) except? <unsigned long long> -1

# ASCII characters' classes for text_stats: a word character, a digit, an upper-case letter (the same answers as
# Python's str.isalnum / isdigit / isupper give, without a call into the Unicode database per character)
cdef unsigned char ASCII[128]
for _c in range(128):
    ASCII[_c] = (
        (1 if chr(_c).isalnum() or _c == 0x5F else 0) | (2 if chr(_c).isdigit() else 0) | (4 if chr(_c).isupper() else 0)
    )


cdef inline bint is_currency(Py_UCS4 c) noexcept:
    return c == 0x24 or c == 0xA3 or c == 0xA5 or c == 0x20AC or c == 0x20B9 or c == 0x20BD or c == 0x20A9


cdef inline bint ends_sentence(Py_UCS4 c) noexcept:
    return c == 0x2E or c == 0x21 or c == 0x3F or c == 0x3002 or c == 0xFF01 or c == 0xFF1F or c == 0x2026


def text_stats(list texts):
    """Per text: words (runs of ``\\w``, as the metric's ``\\w+`` finds them), the share of digits and of upper-case
    letters among its letters and digits, whether it ends a sentence (``.``, ``!``, ``?``, ``…``, ``。``), the
    currency signs in it, and its sentence ends followed by a space (``. ``)."""
    cdef Py_ssize_t n = len(texts), i, j, length
    cdef cnp.ndarray[cnp.float32_t, ndim=2] out = np.zeros((n, len(STATS)), dtype=np.float32)
    cdef int kind
    cdef void *data
    cdef Py_UCS4 c, prev
    cdef Py_ssize_t words, digits, upper, alnum, cur, sent
    cdef bint inword, w
    cdef unsigned char cls
    cdef str text
    for i in range(n):
        text = texts[i]
        length = PyUnicode_GET_LENGTH(text)
        kind = PyUnicode_KIND(text)
        data = PyUnicode_DATA(text)
        words = digits = upper = alnum = cur = sent = 0
        inword = False
        prev = 0
        for j in range(length):
            c = PyUnicode_READ(kind, data, j)
            if c < 128:
                cls = ASCII[c]
                w = cls & 1
                if w:
                    alnum += 1
                    digits += (cls >> 1) & 1
                    upper += (cls >> 2) & 1
            else:
                w = Py_UNICODE_ISALNUM(c)
                if w:
                    alnum += 1
                    if Py_UNICODE_ISDIGIT(c):
                        digits += 1
                    elif Py_UNICODE_ISUPPER(c):
                        upper += 1
            if w and not inword:
                words += 1
            inword = w
            if is_currency(c):
                cur += 1
            if c == 0x20 and ends_sentence(prev):
                sent += 1
            prev = c
        out[i, 0] = words
        out[i, 1] = digits / <double> alnum if alnum else 0.0
        out[i, 2] = upper / <double> alnum if alnum else 0.0
        out[i, 3] = 1.0 if length and ends_sentence(prev) else 0.0
        out[i, 4] = cur
        out[i, 5] = sent
    return out


def forest_scores(
    cnp.ndarray[cnp.float32_t, ndim=2] x,
    cnp.ndarray[cnp.int32_t, ndim=1] roots,
    cnp.ndarray[cnp.int32_t, ndim=1] feature,
    cnp.ndarray[cnp.float64_t, ndim=1] threshold,
    cnp.ndarray[cnp.int32_t, ndim=1] left,
    cnp.ndarray[cnp.int32_t, ndim=1] right,
    cnp.ndarray[cnp.uint8_t, ndim=1] default_left,
    cnp.ndarray[cnp.float64_t, ndim=1] leaf_value,
    int classes,
):
    """The raw score of each row (and class): the sum over its class's trees of the leaf each row reaches. A tree is
    the nodes from ``roots[t]``: an inner node goes left when the row's ``feature`` is ``<= threshold`` (a missing
    value, NaN, where ``default_left`` says), and a child ``< 0`` is the leaf ``~child``. Tree ``t`` belongs to class
    ``t % classes``, as LightGBM orders a multiclass model's trees.

    Trees outer, rows inner: every row of a page walks one tree while its ~30 nodes are in the first-level cache and
    the processor's branch predictor has learnt them. Over a page's ~250 blocks and 300 trees of 31 leaves this took
    1.0 ms; rows outer (a row's features cached, all trees read for each) 1.6-2.0 ms, and a branch-free step
    (``child[v > threshold]``) 2.4 ms."""
    cdef Py_ssize_t n = x.shape[0], t, r, trees = roots.shape[0], stride = x.shape[1]
    cdef cnp.ndarray[cnp.float64_t, ndim=2] out = np.zeros((n, classes), dtype=np.float64)
    cdef int node, cls
    cdef float v
    cdef const float *row
    cdef const int *feat = <const int *> feature.data
    cdef const double *thr = <const double *> threshold.data
    cdef const int *lft = <const int *> left.data
    cdef const int *rgt = <const int *> right.data
    cdef const unsigned char *dfl = <const unsigned char *> default_left.data
    cdef const double *leaf = <const double *> leaf_value.data
    cdef const int *root = <const int *> roots.data
    cdef const float *base = <const float *> x.data
    for t in range(trees):
        cls = t % classes
        for r in range(n):
            row = base + r * stride
            node = root[t]
            while node >= 0:
                v = row[feat[node]]
                if v <= thr[node]:
                    node = lft[node]
                elif isnan(v):
                    node = lft[node] if dfl[node] else rgt[node]
                else:
                    node = rgt[node]
            out[r, cls] += leaf[~node]
    return out


cdef inline double log1p_(double v) noexcept:
    return log1p(v)


def fill_features(
    list blocks,
    list why,
    list containers,
    dict kinds,
    dict whys,
    int n_kinds,
    int n_whys,
    int n_groups,
    int li_kind,
    int p_kind,
    double prose_chars,
    int n_features,
):
    """The block features' matrix (the layout of :data:`datapipe.extract.features.FEATURES`, which says what each
    column is), filled in one pass per family over the page's blocks: each block's kind (``kinds``: a kind's
    column) and verdict (``why``: the reason before ``:``, its column in ``whys``, else the last), size, links,
    place, the lowest tier of content root around it and how many parts named as boilerplate (``containers``), groups (its ``mask``), text statistics, how often the page has its
    text, neighbours, the page, its four regions (its ``path``: the walk numbers elements from 1, so a region's
    totals are kept in arrays indexed by that number) and the span the rules keep."""
    cdef Py_ssize_t n = len(blocks), i, j, k, d, col, level, width
    cdef cnp.ndarray[cnp.float32_t, ndim=2] out = np.zeros((n, n_features), dtype=np.float32)
    cdef cnp.ndarray[cnp.float64_t, ndim=1] chars = np.empty(n, dtype=np.float64)
    cdef cnp.ndarray[cnp.float64_t, ndim=1] links = np.empty(n, dtype=np.float64)
    cdef cnp.ndarray[cnp.float64_t, ndim=1] kept = np.empty(n, dtype=np.float64)
    cdef cnp.ndarray[cnp.int64_t, ndim=2] paths = np.full((n, 4), -1, dtype=np.int64)
    cdef list texts = [b.text for b in blocks]
    cdef cnp.ndarray[cnp.float32_t, ndim=2] stats = text_stats(texts)
    cdef cnp.ndarray[cnp.int64_t, ndim=1] kind = np.empty(n, dtype=np.int64)
    cdef cnp.ndarray[cnp.int64_t, ndim=1] verdict = np.empty(n, dtype=np.int64)
    cdef cnp.ndarray[cnp.float64_t, ndim=1] repeats = np.empty(n, dtype=np.float64)
    cdef dict seen = {}, reasons = {}
    cdef object got
    cdef long long other = n_whys - 1
    cdef cnp.ndarray[cnp.float64_t, ndim=1] tier = np.zeros(n, dtype=np.float64)
    cdef cnp.ndarray[cnp.float64_t, ndim=1] boiler = np.zeros(n + 1, dtype=np.float64)
    cdef Py_ssize_t cstart, cend
    cdef int ctier
    cdef double total = 0.0, link_total = 0.0, kept_total = 0.0, start, c, safe, words
    cdef long long top = 0, first = -1, last = -1, held = 0, prose_n = 0, nearest, dist, key
    cdef object mask, path
    cdef unsigned long long part
    cdef cnp.ndarray[cnp.float64_t, ndim=2] agg
    if n == 0:
        return out
    for i in range(n):
        got = seen.get(texts[i])
        seen[texts[i]] = 1 if got is None else got + 1
        w = why[i]
        got = reasons.get(w)
        if got is None:
            got = reasons[w] = whys.get(w.partition(":")[0], other)
        verdict[i] = got
    for i in range(n):
        repeats[i] = seen[texts[i]]
        b = blocks[i]
        kind[i] = kinds.get(b.kind, 0)
        chars[i] = b.chars
        links[i] = b.link_chars
        kept[i] = 1.0 if verdict[i] == 0 else 0.0
        total += chars[i]
        link_total += links[i]
        kept_total += chars[i] * kept[i]
        path = b.path
        for k in range(4):
            paths[i, k] = path[k]
            if paths[i, k] > top:
                top = paths[i, k]
        if kept[i] > 0:
            if first < 0:
                first = i
            last = i
            held += 1
        if kind[i] == p_kind and chars[i] >= prose_chars:
            prose_n += 1
    if total <= 0:
        total = 1.0
    for cont in containers:
        cstart, cend = cont.start, cont.end
        if cend <= cstart:
            continue
        if cont.kind == "boiler":
            boiler[cstart] += 1
            boiler[cend] -= 1
        elif cont.kind == "root":
            ctier = cont.tier
            if 1 <= ctier <= 3:
                for i in range(cstart, cend):
                    if tier[i] == 0 or tier[i] > ctier:
                        tier[i] = ctier
    for i in range(1, n):
        boiler[i] += boiler[i - 1]
    # kind, verdict, size, place, roots
    start = 0.0
    for i in range(n):
        out[i, kind[i]] = 1.0
        out[i, n_kinds + verdict[i]] = 1.0
        col = n_kinds + n_whys
        words = stats[i, 0]
        out[i, col] = log1p_(chars[i])
        out[i, col + 1] = log1p_(words)
        out[i, col + 2] = links[i] / chars[i] if chars[i] > 0 else 0.0
        out[i, col + 3] = i / <double> n
        out[i, col + 4] = start / total
        start += chars[i]
        out[i, col + 5] = start / total
        out[i, col + 6] = tier[i]
        out[i, col + 7] = boiler[i]
    # groups
    col = n_kinds + n_whys + 8
    for i in range(n):
        mask = blocks[i].mask
        for k in range(0, n_groups, 64):
            part = PyLong_AsUnsignedLongLongMask(mask >> k if k else mask)
            if part == 0:
                continue
            width = min(64, n_groups - k)
            for j in range(width):
                if (part >> j) & 1:
                    out[i, col + k + j] = 1.0
    # text
    col += n_groups
    for i in range(n):
        for j in range(1, 6):
            out[i, col + j - 1] = stats[i, j]
        out[i, col + 5] = log1p_(repeats[i])
    # neighbours
    col += 6
    for d in (-2, -1, 1, 2):
        for i in range(n):
            j = i + d
            if j < 0 or j >= n:
                for k in range(5):
                    out[i, col + k] = -1.0
                continue
            out[i, col] = kept[j]
            out[i, col + 1] = log1p_(chars[j])
            out[i, col + 2] = links[j] / chars[j] if chars[j] > 0 else 0.0
            out[i, col + 3] = kind[j]
            out[i, col + 4] = 1.0 if kind[j] == kind[i] else 0.0
        col += 5
    # the page
    for i in range(n):
        out[i, col] = log1p_(total)
        out[i, col + 1] = log1p_(n)
        out[i, col + 2] = kept_total / total
        out[i, col + 3] = link_total / total
    col += 4
    # regions: blocks, chars, links, kept chars, list items per element number
    agg = np.zeros((top + 2, 5), dtype=np.float64)
    for level in range(1, 5):
        agg[:, :] = 0.0
        for i in range(n):
            key = paths[i, 4 - level] + 1
            agg[key, 0] += 1
            agg[key, 1] += chars[i]
            agg[key, 2] += links[i]
            agg[key, 3] += chars[i] * kept[i]
            agg[key, 4] += 1 if kind[i] == li_kind else 0
        for i in range(n):
            key = paths[i, 4 - level] + 1
            safe = agg[key, 1] if agg[key, 1] > 1.0 else 1.0
            out[i, col] = log1p_(agg[key, 0])
            out[i, col + 1] = agg[key, 1] / total
            out[i, col + 2] = agg[key, 2] / safe
            out[i, col + 3] = agg[key, 3] / safe
            out[i, col + 4] = agg[key, 4] / agg[key, 0]
            out[i, col + 5] = chars[i] / safe
        col += 6
    # the span the rules keep, and the nearest prose
    if first < 0:
        first = n
    nearest = -1
    for i in range(n):
        out[i, col] = 1.0 if first <= i <= last else 0.0
        out[i, col + 1] = (i - first) / <double> n
        out[i, col + 2] = (last - i) / <double> n
        out[i, col + 4] = log1p_(prose_n)
        out[i, col + 5] = held / <double> n
    # distance to the nearest prose block: a pass forward, then backward
    dist = -1
    for i in range(n):
        if kind[i] == p_kind and chars[i] >= prose_chars:
            dist = 0
        elif dist >= 0:
            dist += 1
        out[i, col + 3] = dist if dist >= 0 else n
    dist = -1
    for i in range(n - 1, -1, -1):
        if kind[i] == p_kind and chars[i] >= prose_chars:
            dist = 0
        elif dist >= 0:
            dist += 1
        if dist >= 0 and dist < out[i, col + 3]:
            out[i, col + 3] = dist
    for i in range(n):
        out[i, col + 3] = log1p_(out[i, col + 3])
    return out

