# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The learned extractor's arithmetic, compiled: each block's text statistics and features, a gradient-boosted tree
ensemble evaluated over a page's blocks, and the choice of the blocks kept (:func:`choose`).

Why compiled: a page has ~250 blocks. LightGBM's own ``Booster.predict`` took 5.1 ms for 250 rows of a 300-tree
model (2.6 ms with 150 trees), more than the whole extraction of a page (about 1 ms on Trafilatura's evaluation
pages); the same trees walked here over a contiguous float32 matrix take a fraction of that, and give the same
scores (a test holds them to LightGBM's). The text statistics read each block's characters once, in C, where the
same counts made with ``str`` methods in Python cost several microseconds a block.

Nothing here decides but :func:`choose`, the compiled twin of :func:`datapipe.extract.model.choose` (the reference;
a test holds the two together): :mod:`datapipe.extract.model` says what the numbers mean.
"""

from cpython.unicode cimport PyUnicode_KIND, PyUnicode_DATA, PyUnicode_GET_LENGTH

from libc.math cimport exp, isnan, log1p
from libc.stdlib cimport calloc, free, malloc

import numpy as np
cimport numpy as cnp

from datapipe.extract.records cimport Block, Container

cnp.import_array()

# the columns of text_stats, in order
STATS = ("words", "digit_share", "upper_share", "ends_sentence", "currency", "sentences")


cdef extern from "Python.h":
    unsigned long long PyLong_AsUnsignedLongLongMask(object) except? <unsigned long long> -1

cdef extern from *:
    """
    #include <stdint.h>
    /* what text_stats reads of a character: bit 0 a word character (ASCII: a letter, a digit or "_"; any other:
       str.isalnum), bit 1 a digit among them (str.isdigit), bit 2 an upper-case letter among them that is no digit
       (str.isupper), bit 3 a currency sign, bit 4 a sign that ends a sentence; a table for the Basic Multilingual
       Plane (dp_classes_fill), the Unicode database asked for the rest */
    static unsigned char dp_classes[65536];
    static inline unsigned dp_class_of(uint32_t c) {
        unsigned out;
        if (c < 128) {
            out = ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_');
            out |= (c >= '0' && c <= '9') << 1;
            out |= (c >= 'A' && c <= 'Z') << 2;
        } else if (Py_UNICODE_ISALNUM(c)) {
            out = 1 | (Py_UNICODE_ISDIGIT(c) ? 2 : Py_UNICODE_ISUPPER(c) ? 4 : 0);
        } else {
            out = 0;
        }
        if (c == 0x24 || c == 0xA3 || c == 0xA5 || c == 0x20AC || c == 0x20B9 || c == 0x20BD || c == 0x20A9)
            out |= 8;
        if (c == 0x2E || c == 0x21 || c == 0x3F || c == 0x3002 || c == 0xFF01 || c == 0xFF1F || c == 0x2026)
            out |= 16;
        return out;
    }
    static void dp_classes_fill(void) {
        for (uint32_t c = 0; c < 65536; c++) dp_classes[c] = (unsigned char) dp_class_of(c);
    }
    typedef struct { Py_ssize_t words, digits, upper, alnum, cur, sent; int ends; } dp_counts;
    /* a text's counts (see text_stats), one loop per width of its characters */
    #define DP_COUNT(T) \
        for (Py_ssize_t j = 0; j < n; j++) { \
            uint32_t c = ((const T *) data)[j]; \
            unsigned cls = c < 65536 ? dp_classes[c] : dp_class_of(c), w = cls & 1; \
            k->alnum += w; k->digits += (cls >> 1) & 1; k->upper += (cls >> 2) & 1; \
            k->words += w & !inword; inword = w; k->cur += (cls >> 3) & 1; \
            k->sent += (c == 0x20) & ends; ends = (cls >> 4) & 1; \
        }
    static void dp_count(int kind, const void *data, Py_ssize_t n, dp_counts *k) {
        unsigned inword = 0, ends = 0;
        k->words = k->digits = k->upper = k->alnum = k->cur = k->sent = 0;
        if (kind == 1) { DP_COUNT(uint8_t) } else if (kind == 2) { DP_COUNT(uint16_t) } else { DP_COUNT(uint32_t) }
        k->ends = (int) ends;
    }
    """
    ctypedef struct dp_counts:
        Py_ssize_t words, digits, upper, alnum, cur, sent
        int ends
    void dp_classes_fill() noexcept nogil
    void dp_count(int kind, const void *data, Py_ssize_t n, dp_counts *k) noexcept nogil


dp_classes_fill()  # the table of characters' classes, once per process (65,536 characters)


def text_stats(list texts):
    """Per text: words (runs of ``\\w``, as the metric's ``\\w+`` finds them), the share of digits and of upper-case
    letters among its letters and digits, whether it ends a sentence (``.``, ``!``, ``?``, ``…``, ``。``), the
    currency signs in it, and its sentence ends followed by a space (``. ``). Each character's classes come from one
    table (``str.isalnum``, ``isdigit``, ``isupper``, the signs), in a loop per width of the text's characters:
    with a call into the Unicode database per character beyond ASCII this took ~9 ns a character."""
    cdef Py_ssize_t n = len(texts), i, length
    cdef cnp.ndarray[cnp.float32_t, ndim=2] out = np.zeros((n, len(STATS)), dtype=np.float32)
    cdef dp_counts k
    cdef str text
    for i in range(n):
        text = texts[i]
        length = PyUnicode_GET_LENGTH(text)
        dp_count(PyUnicode_KIND(text), PyUnicode_DATA(text), length, &k)
        out[i, 0] = k.words
        out[i, 1] = k.digits / <double> k.alnum if k.alnum else 0.0
        out[i, 2] = k.upper / <double> k.alnum if k.alnum else 0.0
        out[i, 3] = 1.0 if length and k.ends else 0.0
        out[i, 4] = k.cur
        out[i, 5] = k.sent
    return out


cdef packed struct Node:  # an inner node of a tree, as NODE lays it out: one 16-byte read a step
    float threshold
    int feature  # the column, and DEFAULT_LEFT where a missing value goes left
    int left
    int right

# the layout of pack_nodes' array (Node's)
NODE = np.dtype([("threshold", np.float32), ("feature", np.int32), ("left", np.int32), ("right", np.int32)])
cdef enum:
    DEFAULT_LEFT = 1 << 30  # in a Node's feature: a missing value goes left
    FEATURE = DEFAULT_LEFT - 1  # the column, below it


def pack_nodes(feature, threshold, left, right, default_left):
    """A forest's inner nodes as one array of :data:`NODE` records, for :func:`forest_scores`. The threshold is
    the largest float32 not above the model's (float64) one: for a float32 value ``v``, ``v <= t`` exactly when
    ``v <= threshold``, so every row takes the same branches as against the model's own thresholds."""
    if len(feature) and int(np.max(feature)) >= DEFAULT_LEFT:
        raise ValueError("a feature index too large for the packed layout")
    out = np.zeros(len(feature), dtype=NODE)
    threshold = np.asarray(threshold, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        t32 = threshold.astype(np.float32)
        over = t32.astype(np.float64) > threshold
    t32[over] = np.nextafter(t32[over], np.float32(-np.inf))
    out["threshold"] = t32
    out["feature"] = np.asarray(feature, dtype=np.int32) | np.where(np.asarray(default_left) != 0, DEFAULT_LEFT, 0)
    out["left"] = left
    out["right"] = right
    return out


cdef extern from *:
    """
    typedef struct __attribute__((packed)) { float threshold; int feature; int left; int right; } dp_node;
    /* one step of a row down a tree (Node's layout: the column, DEFAULT_LEFT = 1 << 30 where a missing value goes
       left), branch-free: the child's number, a leaf's (< 0) kept once reached */
    static inline int dp_step(const dp_node *tree, int node, const float *row) {
        const dp_node *nd = tree + (node & ~(node >> 31));
        int f = nd->feature;
        float v = row[f & 0x3FFFFFFF];
        int right = !(v <= nd->threshold) & !((v != v) & (f >> 30));
        int next = (&nd->left)[right];
        return node < 0 ? node : next;
    }
    /* one row down eight trees at once (their roots at roots[0..7]): the leaves reached, in out[0..7] */
    static inline void dp_trees8(const dp_node *tree, const int *roots, const float *row, int *out) {
        int n0 = roots[0], n1 = roots[1], n2 = roots[2], n3 = roots[3];
        int n4 = roots[4], n5 = roots[5], n6 = roots[6], n7 = roots[7];
        while ((n0 & n1 & n2 & n3 & n4 & n5 & n6 & n7) >= 0) {
            n0 = dp_step(tree, n0, row); n1 = dp_step(tree, n1, row); n2 = dp_step(tree, n2, row);
            n3 = dp_step(tree, n3, row); n4 = dp_step(tree, n4, row); n5 = dp_step(tree, n5, row);
            n6 = dp_step(tree, n6, row); n7 = dp_step(tree, n7, row);
        }
        out[0] = n0; out[1] = n1; out[2] = n2; out[3] = n3; out[4] = n4; out[5] = n5; out[6] = n6; out[7] = n7;
    }
    /* eight rows (row, stride floats apart) down one tree from root at once: the leaves reached, in out[0..7] */
    static inline void dp_rows8(const dp_node *tree, int root, const float *row, Py_ssize_t stride, int *out) {
        int n0 = root, n1 = root, n2 = root, n3 = root, n4 = root, n5 = root, n6 = root, n7 = root;
        while ((n0 & n1 & n2 & n3 & n4 & n5 & n6 & n7) >= 0) {
            n0 = dp_step(tree, n0, row); n1 = dp_step(tree, n1, row + stride);
            n2 = dp_step(tree, n2, row + 2 * stride); n3 = dp_step(tree, n3, row + 3 * stride);
            n4 = dp_step(tree, n4, row + 4 * stride); n5 = dp_step(tree, n5, row + 5 * stride);
            n6 = dp_step(tree, n6, row + 6 * stride); n7 = dp_step(tree, n7, row + 7 * stride);
        }
        out[0] = n0; out[1] = n1; out[2] = n2; out[3] = n3; out[4] = n4; out[5] = n5; out[6] = n6; out[7] = n7;
    }
    """
    ctypedef struct dp_node:
        pass
    void dp_trees8(const dp_node *tree, const int *roots, const float *row, int *out) noexcept nogil
    void dp_rows8(const dp_node *tree, int root, const float *row, Py_ssize_t stride, int *out) noexcept nogil


cdef inline int leaf_of(const Node *tree, int node, const float *row) noexcept nogil:
    """The leaf (``< 0``, the leaf ``~leaf``) a row reaches from ``node``: left where its value is ``<=`` the
    threshold (a missing value, NaN, where the node's default says), right otherwise."""
    cdef const Node *nd
    cdef int f
    cdef float v
    while node >= 0:
        nd = tree + node
        f = nd.feature
        v = row[f & FEATURE]
        if v <= nd.threshold:
            node = nd.left
        elif isnan(v):
            node = nd.left if f & DEFAULT_LEFT else nd.right
        else:
            node = nd.right
    return node


# below this many rows a model's trees are walked eight at a time for each row (the page-type model: one row, 840
# trees); from it, as before, each tree by every row
FEW_ROWS = 8


def forest_scores(
    cnp.ndarray[cnp.float32_t, ndim=2] x,
    cnp.ndarray nodes,
    cnp.ndarray[cnp.int32_t, ndim=1] roots,
    cnp.ndarray[cnp.float64_t, ndim=1] leaf_value,
    int classes,
):
    """The raw score of each row (and class): the sum over its class's trees of the leaf each row reaches. A tree is
    the nodes from ``roots[t]`` (``nodes``: :func:`pack_nodes`' records): an inner node goes left when the row's
    ``feature`` is ``<= threshold`` (a missing value, NaN, where its default says), and a child ``< 0`` is the leaf
    ``~child``. Tree ``t`` belongs to class ``t % classes``, as LightGBM orders a multiclass model's trees.

    Trees outer, rows inner: every row of a page walks one tree while its ~30 nodes are in the first-level cache and
    the processor's branch predictor has learnt them. Over a page's ~250 blocks and 300 trees of 31 leaves this took
    1.0 ms; rows outer (a row's features cached, all trees read for each) 1.6-2.0 ms, and a branch-free step
    (``child[v > threshold]``) 2.4 ms. A node is one 16-byte record: with its fields in five arrays a step read five
    cache lines, which cost most where the trees are not cached (the extraction benchmark runs other extractors
    between two pages).

    Many rows (a page's blocks, for the block model: 60 trees of 127 leaves): a page's rows share many columns (its
    own features, its type's probabilities, the groups and kinds none of its blocks has), and a node that tests one
    sends every row the same way. Such nodes are decided once for the page (``dp_fold``: 39% of a row's steps on
    extract_quality's pages) and the trees walked without them, eight rows at a time, branch-free (``dp_rows8``):
    with the trees that much shallower, the eight wait less for the deepest. Each row reaches the same leaf of each
    tree as before and its leaves are added in the trees' order: the same doubles. 0.200 -> 0.187 ms a page on
    extract_quality's held-out pages; the branch-free walk without the folding was no faster than the plain one,
    nor the folding without it (its steps were the ones the branch predictor got right)."""
    cdef Py_ssize_t n = x.shape[0], t, r, trees = roots.shape[0], stride = x.shape[1]
    cdef cnp.ndarray[cnp.float64_t, ndim=2] out = np.zeros((n, classes), dtype=np.float64)
    cdef int cls
    cdef const float *row
    cdef const Node *tree = <const Node *> nodes.data
    cdef const double *leaf = <const double *> leaf_value.data
    cdef const int *root = <const int *> roots.data
    cdef const float *base = <const float *> x.data
    cdef int leaves[8]
    cdef Py_ssize_t k, node_count = nodes.shape[0]
    cdef Node *page_nodes = NULL
    cdef int *page_roots = NULL
    cdef int status
    if nodes.dtype != NODE or not nodes.flags.c_contiguous:
        raise ValueError("forest_scores reads pack_nodes' records")
    if n < FEW_ROWS:
        # few rows (the page-type model's one): eight trees at a time, each step of the eight branch-free, so that
        # their reads of nodes not cached (the extraction runs beside others) overlap; every row's leaves are still
        # added in the trees' order, so the sums are the same doubles. The page-type model took 0.08 ms this way
        # 0.04-0.05 (its 188 KB of nodes mostly out of the cache)
        for r in range(n):
            row = base + r * stride
            t = 0
            while t + 8 <= trees:
                dp_trees8(<const dp_node *> tree, root + t, row, leaves)
                for k in range(8):
                    out[r, (t + k) % classes] += leaf[~leaves[k]]
                t += 8
            while t < trees:
                out[r, t % classes] += leaf[~leaf_of(tree, root[t], row)]
                t += 1
        return out
    # a page's rows share many columns (the page's own features, its type's probabilities, groups and kinds none
    # of its blocks has): a node that tests one sends every row the same way, so it is decided once here and the
    # trees walked without it (page_nodes)
    page_nodes = <Node *> malloc(max(node_count, 1) * sizeof(Node))
    page_roots = <int *> malloc(max(trees, 1) * sizeof(int))
    if page_nodes == NULL or page_roots == NULL:
        free(page_nodes)
        free(page_roots)
        raise MemoryError()
    try:
        status = dp_fold(
            <const dp_node *> tree, node_count, root, trees, base, n, stride, <dp_node *> page_nodes, page_roots
        )
        if status == -1:
            raise MemoryError()
        if status == -2:
            raise ValueError("a tree reads a column the rows do not have")
        for t in range(trees):
            cls = t % classes
            r = 0
            while r + 8 <= n:
                dp_rows8(<const dp_node *> page_nodes, page_roots[t], base + r * stride, stride, leaves)
                for k in range(8):
                    out[r + k, cls] += leaf[~leaves[k]]
                r += 8
            for r in range(r, n):
                out[r, cls] += leaf[~leaf_of(page_nodes, page_roots[t], base + r * stride)]
    finally:
        free(page_nodes)
        free(page_roots)
    return out


cdef extern from *:
    """
    #if defined(__SSE2__)
    #include <emmintrin.h>
    #endif
    /* which columns of n rows (stride values apart, from x) hold the same bits in every row: same[c] = 1 or 0; the
       rows read in order, their differences from the first gathered a word a column (SSE2: four at a step) */
    static int dp_same_columns(const unsigned int *x, Py_ssize_t n, Py_ssize_t stride, unsigned char *same) {
        unsigned int *diff = (unsigned int *) calloc(stride ? stride : 1, sizeof(unsigned int));
        if (diff == NULL) return -1;
        for (Py_ssize_t r = 1; r < n; r++) {
            const unsigned int *row = x + r * stride;
            Py_ssize_t c = 0;
    #if defined(__SSE2__)
            for (; c + 4 <= stride; c += 4) {
                __m128i d = _mm_loadu_si128((const __m128i *) (diff + c));
                __m128i v = _mm_xor_si128(_mm_loadu_si128((const __m128i *) (row + c)),
                                          _mm_loadu_si128((const __m128i *) (x + c)));
                _mm_storeu_si128((__m128i *) (diff + c), _mm_or_si128(d, v));
            }
    #endif
            for (; c < stride; c++) diff[c] |= row[c] ^ x[c];
        }
        for (Py_ssize_t c = 0; c < stride; c++) same[c] = diff[c] == 0;
        free(diff);
        return 0;
    }
    /* from node (or leaf) c, past every node whose column is one of the same (as the walk decides it for the first
       row, so for every row); -1 << 31 where a node reads a column past the rows' */
    static inline int dp_past_same(const dp_node *tree, int c, const float *first, const unsigned char *same,
                                   Py_ssize_t stride) {
        while (c >= 0) {
            const dp_node *nd = tree + c;
            int f = nd->feature & 0x3FFFFFFF;
            if (f >= stride) return (int) (-2147483647 - 1);
            if (!same[f]) break;
            float v = first[f];
            if (v <= nd->threshold) c = nd->left;
            else if (v != v) c = (nd->feature >> 30) & 1 ? nd->left : nd->right;
            else c = nd->right;
        }
        return c;
    }
    /* the forest as n rows walk it: every node whose column the rows share decided once, and every reference to it
       (a tree's root, a parent's child) sent on to the node or leaf the rows reach; the nodes the rows can reach
       copied into page_nodes (at their own numbers, children redirected), the roots into page_roots. 0, -1 where
       memory failed, -2 where a node reads a column past the rows' */
    static int dp_fold(const dp_node *tree, Py_ssize_t node_count, const int *roots, Py_ssize_t trees,
                       const float *x, Py_ssize_t n, Py_ssize_t stride, dp_node *page_nodes, int *page_roots) {
        const int bad = (int) (-2147483647 - 1);
        int status = 0;
        unsigned char *same = (unsigned char *) malloc(stride ? stride : 1);
        int *stack = (int *) malloc((node_count ? node_count : 1) * sizeof(int));
        Py_ssize_t top = 0;
        if (same == NULL || stack == NULL || dp_same_columns((const unsigned int *) x, n, stride, same) < 0) {
            status = -1;
            goto done;
        }
        /* a row at its leaf still reads node 0 in dp_rows8 (and drops what it read): never an unset record */
        if (node_count > 0) {
            page_nodes[0] = tree[0];
            page_nodes[0].feature = 0;
        }
        for (Py_ssize_t t = 0; t < trees; t++) {
            int c = dp_past_same(tree, roots[t], x, same, stride);
            if (c == bad) { status = -2; goto done; }
            page_roots[t] = c;
            if (c >= 0) stack[top++] = c;
            while (top > 0) {  /* each node has one parent: pushed once at most */
                int i = stack[--top];
                int left = dp_past_same(tree, tree[i].left, x, same, stride);
                int right = dp_past_same(tree, tree[i].right, x, same, stride);
                if (left == bad || right == bad) { status = -2; goto done; }
                page_nodes[i] = tree[i];
                page_nodes[i].left = left;
                page_nodes[i].right = right;
                if (left >= 0) stack[top++] = left;
                if (right >= 0) stack[top++] = right;
            }
        }
    done:
        free(same);
        free(stack);
        return status;
    }
    """
    int dp_fold(const dp_node *tree, Py_ssize_t node_count, const int *roots, Py_ssize_t trees, const float *x,
                Py_ssize_t n, Py_ssize_t stride, dp_node *page_nodes, int *page_roots) nogil


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
    cdef Py_ssize_t n = len(blocks)
    cdef cnp.ndarray[cnp.float32_t, ndim=2] out = np.zeros((n, n_features), dtype=np.float32)
    # the per-block scratch, in C (a dozen numpy arrays made for it cost more than filling them)
    cdef double *chars = NULL
    cdef double *links = NULL
    cdef double *kept = NULL
    cdef long long *paths = NULL  # a block's path, four a block
    cdef long long *kind = NULL
    cdef long long *verdict = NULL
    cdef double *repeats = NULL
    cdef double *tier = NULL
    cdef double *boiler = NULL
    # log1p of every whole number up to n (the counts below are: regions' blocks, repeats, distances), and of each
    # block's characters: each the same double as log1p called at its every use, once (log1p was a tenth of this)
    cdef double *small = NULL
    cdef double *log_chars = NULL
    if n == 0:
        return out
    try:
        chars = <double *> calloc(n, sizeof(double))
        links = <double *> calloc(n, sizeof(double))
        kept = <double *> calloc(n, sizeof(double))
        paths = <long long *> calloc(4 * n, sizeof(long long))
        kind = <long long *> calloc(n, sizeof(long long))
        verdict = <long long *> calloc(n, sizeof(long long))
        repeats = <double *> calloc(n, sizeof(double))
        tier = <double *> calloc(n, sizeof(double))
        boiler = <double *> calloc(n + 1, sizeof(double))
        small = <double *> calloc(n + 1, sizeof(double))
        log_chars = <double *> calloc(n, sizeof(double))
        if (
            chars == NULL or links == NULL or kept == NULL or paths == NULL or kind == NULL or verdict == NULL
            or repeats == NULL or tier == NULL or boiler == NULL or small == NULL or log_chars == NULL
        ):
            raise MemoryError()
        return _fill(
            blocks, why, containers, kinds, whys, n_kinds, n_whys, n_groups, li_kind, p_kind, prose_chars, out,
            chars, links, kept, paths, kind, verdict, repeats, tier, boiler, small, log_chars,
        )
    finally:
        free(chars)
        free(links)
        free(kept)
        free(paths)
        free(kind)
        free(verdict)
        free(repeats)
        free(tier)
        free(boiler)
        free(small)
        free(log_chars)


cdef object _fill(
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
    cnp.ndarray[cnp.float32_t, ndim=2] out,
    double *chars,
    double *links,
    double *kept,
    long long *paths,
    long long *kind,
    long long *verdict,
    double *repeats,
    double *tier,
    double *boiler,
    double *small,
    double *log_chars,
):
    """:func:`fill_features` with its scratch (zeroed, of the page's sizes)."""
    cdef Py_ssize_t n = len(blocks), i, j, k, d, col, level, width
    cdef Block b
    cdef Container cont
    cdef list texts = [(<Block?> x).text for x in blocks]
    cdef cnp.ndarray[cnp.float32_t, ndim=2] stats = text_stats(texts)
    cdef dict seen = {}, reasons = {}
    cdef object got
    cdef long long other = n_whys - 1
    cdef Py_ssize_t cstart, cend
    cdef int ctier
    cdef double total = 0.0, link_total = 0.0, kept_total = 0.0, start, c, safe, words
    cdef long long top = 0, first = -1, last = -1, held = 0, prose_n = 0, nearest, dist, key
    cdef object mask, path
    cdef unsigned long long part
    cdef double *agg = NULL  # a region's totals, five an element number
    cdef double log_total, log_n, log_prose
    for i in range(n + 1):
        small[i] = log1p_(<double> i)
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
        b = <Block> blocks[i]
        kind[i] = kinds.get(b.kind, 0)
        chars[i] = b.chars
        links[i] = b.link_chars
        kept[i] = 1.0 if verdict[i] == 0 else 0.0
        total += chars[i]
        link_total += links[i]
        kept_total += chars[i] * kept[i]
        path = b.path
        for k in range(4):
            paths[4 * i + k] = path[k]
            if paths[4 * i + k] > top:
                top = paths[4 * i + k]
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
    for i in range(n):
        log_chars[i] = log1p_(chars[i])
    # kind, verdict, size, place, roots
    start = 0.0
    for i in range(n):
        out[i, kind[i]] = 1.0
        out[i, n_kinds + verdict[i]] = 1.0
        col = n_kinds + n_whys
        words = stats[i, 0]
        out[i, col] = log_chars[i]
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
        mask = (<Block> blocks[i]).mask
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
        out[i, col + 5] = small[<Py_ssize_t> repeats[i]]
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
            out[i, col + 1] = log_chars[j]
            out[i, col + 2] = links[j] / chars[j] if chars[j] > 0 else 0.0
            out[i, col + 3] = kind[j]
            out[i, col + 4] = 1.0 if kind[j] == kind[i] else 0.0
        col += 5
    # the page
    log_total = log1p_(total)
    log_n = log1p_(n)
    for i in range(n):
        out[i, col] = log_total
        out[i, col + 1] = log_n
        out[i, col + 2] = kept_total / total
        out[i, col + 3] = link_total / total
    col += 4
    # regions: blocks, chars, links, kept chars, list items per element number
    agg = <double *> malloc((top + 2) * 5 * sizeof(double))
    if agg == NULL:
        raise MemoryError()
    try:
        for level in range(1, 5):
            for i in range(n):  # only the rows this level uses are cleared (an element number is up to ~5,000)
                key = 5 * (paths[4 * i + 4 - level] + 1)
                for k in range(5):
                    agg[key + k] = 0.0
            for i in range(n):
                key = 5 * (paths[4 * i + 4 - level] + 1)
                agg[key] += 1
                agg[key + 1] += chars[i]
                agg[key + 2] += links[i]
                agg[key + 3] += chars[i] * kept[i]
                agg[key + 4] += 1 if kind[i] == li_kind else 0
            for i in range(n):
                key = 5 * (paths[4 * i + 4 - level] + 1)
                safe = agg[key + 1] if agg[key + 1] > 1.0 else 1.0
                out[i, col] = small[<Py_ssize_t> agg[key]]
                out[i, col + 1] = agg[key + 1] / total
                out[i, col + 2] = agg[key + 2] / safe
                out[i, col + 3] = agg[key + 3] / safe
                out[i, col + 4] = agg[key + 4] / agg[key]
                out[i, col + 5] = chars[i] / safe
            col += 6
    finally:
        free(agg)
    # the span the rules keep, and the nearest prose
    if first < 0:
        first = n
    nearest = -1
    log_prose = log1p_(prose_n)
    for i in range(n):
        out[i, col] = 1.0 if first <= i <= last else 0.0
        out[i, col + 1] = (i - first) / <double> n
        out[i, col + 2] = (last - i) / <double> n
        out[i, col + 4] = log_prose
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
        out[i, col + 3] = small[<Py_ssize_t> out[i, col + 3]]
    return out



cdef void merge_order(Py_ssize_t *order, Py_ssize_t *scratch, const double *key, Py_ssize_t n) noexcept:
    """``order`` (0..n-1) sorted by ``key`` descending, equal keys in their order: numpy's ``argsort(-key,
    kind="stable")`` (a merge sort, bottom-up)."""
    cdef Py_ssize_t width = 1, lo, mid, hi, i, j, k
    cdef Py_ssize_t *src = order
    cdef Py_ssize_t *dst = scratch
    cdef Py_ssize_t *swap
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if -key[src[j]] < -key[src[i]]:  # strictly before: the right run's wins only then (stable)
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
                k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < hi:
                dst[k] = src[j]
                j += 1
                k += 1
            lo = hi
        swap = src
        src = dst
        dst = swap
        width *= 2
    if src != order:
        for i in range(n):
            order[i] = src[i]


def choose(cnp.ndarray[cnp.float64_t, ndim=1] p, cnp.ndarray[cnp.float64_t, ndim=1] weight, double floor):
    """:func:`datapipe.extract.model.choose`, compiled: the blocks to keep, the top ``k`` by probability ``p`` that
    maximize the expected F1 with weights ``weight``, never one below ``floor``. The same arithmetic in the same
    order (the running sums in the order chosen, the page's total in numpy's pairwise order: :func:`pairwise_sum`),
    so the same choice; its ~17 numpy calls on arrays of a page's ~180 blocks cost more than the arithmetic."""
    cdef Py_ssize_t n = p.shape[0], i, j, k = 0
    cdef cnp.ndarray[cnp.uint8_t, ndim=1, cast=True] keep = np.zeros(n, dtype=bool)
    cdef double *pw = NULL
    cdef Py_ssize_t *order = NULL
    cdef Py_ssize_t *scratch = NULL
    cdef double *probability = NULL
    cdef double total, ran_p = 0.0, ran_w = 0.0, expected, best = 0.0
    if n == 0:
        return keep
    if weight.shape[0] != n:
        raise ValueError("choose: a weight for every block")
    try:
        pw = <double *> malloc(n * sizeof(double))
        probability = <double *> malloc(n * sizeof(double))
        order = <Py_ssize_t *> malloc(n * sizeof(Py_ssize_t))
        scratch = <Py_ssize_t *> malloc(n * sizeof(Py_ssize_t))
        if pw == NULL or probability == NULL or order == NULL or scratch == NULL:
            raise MemoryError()
        for i in range(n):
            probability[i] = p[i]
            pw[i] = p[i] * weight[i]
            order[i] = i
        total = 0.0 + dp_pairwise(pw, n)  # as numpy sums
        merge_order(order, scratch, probability, n)
        for j in range(n):
            i = order[j]
            ran_p = ran_p + pw[i]
            ran_w = ran_w + weight[i]
            expected = 2.0 * ran_p / (ran_w + total + 1e-9)
            if j == 0 or expected > best:  # the first of equal maxima, as argmax
                best = expected
                k = j
        for j in range(k + 1):
            keep[order[j]] = 1
    finally:
        free(pw)
        free(probability)
        free(order)
        free(scratch)
    for i in range(n):
        if not p[i] >= floor:
            keep[i] = 0
    return keep


def kept_why(keep, list why):
    """The learned extractor's reasons (:func:`datapipe.extract.analysis._learned`): ``""`` for a block ``keep``
    keeps, else the rules' reason, or ``"model"`` where the rules kept it; a list comprehension over ``keep``'s
    ``tolist()`` cost ~15 us a page."""
    cdef cnp.ndarray[cnp.uint8_t, ndim=1, cast=True] kept = keep
    cdef Py_ssize_t n = len(why), i
    cdef list out = [None] * n
    cdef object w
    if kept.shape[0] != n:
        raise ValueError("kept_why: a verdict for every block")
    for i in range(n):
        if kept[i]:
            out[i] = ""
        else:
            w = why[i]
            out[i] = w if w else "model"
    return out


def page_block_sums(
    cnp.ndarray[cnp.float32_t, ndim=2] x,
    cnp.ndarray[cnp.float64_t, ndim=1] chars,
    cnp.ndarray[cnp.intp_t, ndim=1] kind_columns,
    Py_ssize_t link_column,
    Py_ssize_t currency_column,
    cnp.ndarray[cnp.intp_t, ndim=1] group_columns,
    double prose_chars,
):
    """What :func:`datapipe.extract.pagetype.page_features` reads of the blocks' features, where it can be read
    in one pass: the blocks of each kind (``kind_columns``, the paragraph's first), the characters of the
    paragraphs of ``prose_chars`` or more (each block's, in order: the caller sums them as numpy does) and of each
    block in links (the same), the currency signs, and the share of blocks in each group (``group_columns``; as
    numpy's float32 ``mean`` gives it: the count over the blocks in float64, rounded to float32). The columns are
    0/1 or counts, so every count is exact in any order; the sums of characters are left to numpy, whose pairwise
    order they were computed in. A dozen numpy calls here cost more than the arithmetic."""
    cdef Py_ssize_t n = x.shape[0], i, j, nk = kind_columns.shape[0], ng = group_columns.shape[0], m = 0
    cdef cnp.ndarray[cnp.float64_t, ndim=1] per_kind = np.zeros(nk, dtype=np.float64)
    cdef cnp.ndarray[cnp.float64_t, ndim=1] prose = np.empty(n, dtype=np.float64)
    cdef cnp.ndarray[cnp.float64_t, ndim=1] linked = np.empty(n, dtype=np.float64)
    cdef cnp.ndarray[cnp.float64_t, ndim=1] counts = np.zeros(ng, dtype=np.float64)
    cdef cnp.ndarray[cnp.float32_t, ndim=1] means = np.empty(ng, dtype=np.float32)
    cdef double currency = 0.0
    for i in range(n):
        for j in range(nk):
            per_kind[j] += x[i, kind_columns[j]]
        if x[i, kind_columns[0]] > 0 and chars[i] >= prose_chars:
            prose[m] = chars[i]
            m += 1
        linked[i] = chars[i] * <double> x[i, link_column]
        currency += x[i, currency_column]
        for j in range(ng):
            counts[j] += x[i, group_columns[j]]
    for j in range(ng):
        means[j] = <float> (counts[j] / <double> n)
    return per_kind.tolist(), prose[:m], linked, currency, means


cdef extern from *:
    """
    /* numpy's sum of a contiguous float64 array (its pairwise_sum: eight running sums over blocks of up to 128
       values, halves above that), the same additions in the same order, so the same double */
    static double dp_pairwise(const double *a, Py_ssize_t n) {
        if (n < 8) {
            double res = 0.;
            for (Py_ssize_t i = 0; i < n; i++) res += a[i];
            return res;
        }
        if (n <= 128) {
            double r[8], res;
            Py_ssize_t i;
            for (int k = 0; k < 8; k++) r[k] = a[k];
            for (i = 8; i < n - (n % 8); i += 8)
                for (int k = 0; k < 8; k++) r[k] += a[i + k];
            res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
            for (; i < n; i++) res += a[i];
            return res;
        }
        Py_ssize_t n2 = n / 2;
        n2 -= n2 % 8;
        return dp_pairwise(a, n2) + dp_pairwise(a + n2, n - n2);
    }
    """
    double dp_pairwise(const double *a, Py_ssize_t n) noexcept nogil


def pairwise_sum(cnp.ndarray[cnp.float64_t, ndim=1, mode="c"] a):
    """``a.sum()`` as numpy makes it (its pairwise order), for the tests."""
    return 0.0 + dp_pairwise(<const double *> a.data, a.shape[0])


cdef inline bint _settled(double q, double slack) noexcept:
    """Whether every double within ``slack`` (relative) of ``q`` rounds to the same float32 as ``q``: rounding is
    monotone, so the two ends of the interval say it."""
    cdef double d = (q if q >= 0 else -q) * slack
    return <float> (q - d) == <float> (q + d)


def page_block_part(
    cnp.ndarray[cnp.float32_t, ndim=2] x,
    cnp.ndarray[cnp.float64_t, ndim=1, mode="c"] chars,
    cnp.ndarray[cnp.intp_t, ndim=1] kind_columns,
    Py_ssize_t li,
    Py_ssize_t tr,
    Py_ssize_t pre,
    Py_ssize_t link_column,
    Py_ssize_t currency_column,
    cnp.ndarray[cnp.intp_t, ndim=1] group_columns,
    double prose_chars,
    double slack=1.0,
):
    """:func:`datapipe.extract.pagetype._block_part`'s values (its reference, ``_block_part_numpy``, says what each
    is) in one pass over the blocks' features, or None where this pass cannot promise the reference's float32s. A
    dozen numpy calls on a page's ~180 blocks cost ~50 us, the arithmetic a few.

    The same doubles: counts of 0/1 columns are exact in any order; the sums of characters that numpy's ``sum``
    made are made in its pairwise order (:func:`pairwise_sum`); ``log1p`` is the C library's, as Python's. Only the
    characters of each kind, which a matrix product made (BLAS: its order of additions is the library's and the
    processor's), are summed here in another order: every order's sum of these ``n`` non-negative terms lies within
    ``n`` roundings of the exact one, so each share's value here is trusted only where every double that near it
    (``slack`` times ``4n + 16`` units of the last place, with room) rounds to the same float32, the type the page
    model reads; else None, and the caller takes the reference (never on the 2,629 pages of the benchmarks)."""
    cdef Py_ssize_t n = x.shape[0], i, j, nk = kind_columns.shape[0], ng = group_columns.shape[0], m = 0
    cdef double *prose = NULL
    cdef double *linked = NULL
    cdef double *per_kind = NULL
    cdef double *kind_chars = NULL
    cdef double total, currency = 0.0, links, prose_sum, heads = 0.0, wide
    cdef cnp.ndarray[cnp.float64_t, ndim=1] out = np.empty(12 + ng, dtype=np.float64)
    cdef Py_ssize_t kind
    if n == 0 or chars.shape[0] != n or nk < 7:
        raise ValueError("page_block_part reads a page's blocks (one or more) and their characters")
    try:
        prose = <double *> malloc(n * sizeof(double))
        linked = <double *> malloc(n * sizeof(double))
        per_kind = <double *> calloc(nk, sizeof(double))
        kind_chars = <double *> calloc(nk, sizeof(double))
        if prose == NULL or linked == NULL or per_kind == NULL or kind_chars == NULL:
            raise MemoryError()
        for i in range(n):
            for j in range(nk):
                if x[i, kind_columns[j]] != 0:
                    per_kind[j] += x[i, kind_columns[j]]
                    kind_chars[j] += chars[i] * <double> x[i, kind_columns[j]]
            if x[i, kind_columns[0]] > 0 and chars[i] >= prose_chars:
                prose[m] = chars[i]
                m += 1
            linked[i] = chars[i] * <double> x[i, link_column]
            currency += x[i, currency_column]
        total = 0.0 + dp_pairwise(<const double *> chars.data, n)
        if total == 0.0:
            total = 1.0
        links = 0.0 + dp_pairwise(linked, n)
        prose_sum = 0.0 + dp_pairwise(prose, m)
        for j in range(1, 7):
            heads += per_kind[j]
        wide = slack * (4.0 * n + 16.0) * 1.1102230246251565e-16  # units of 2**-53
        out[0] = log1p(<double> n)
        out[1] = log1p(total)
        out[2] = kind_chars[0] / total
        out[3] = kind_chars[li] / total
        out[4] = heads / n
        out[5] = kind_chars[tr] / total
        out[6] = kind_chars[pre] / total
        out[7] = links / total
        out[8] = prose_sum / total
        out[9] = log1p(per_kind[1])
        out[10] = log1p(per_kind[2])
        out[11] = log1p(currency)
        for kind in (2, 3, 5, 6):
            if not _settled(out[kind], wide):
                return None
    finally:
        free(prose)
        free(linked)
        free(per_kind)
        free(kind_chars)
    for j in range(ng):
        wide = 0.0
        for i in range(n):
            wide += x[i, group_columns[j]]
        out[12 + j] = <float> (wide / <double> n)
    return out
