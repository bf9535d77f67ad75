"""fastText's top-label prediction for hierarchical-softmax models (``lid.176``), read from the model file and
computed exactly as fastText computes it, with each distinct word's rows found once.

Why: language ID classifies whole pages, and fastText finds a word's rows anew at every occurrence (it hashes
every character 2- to 4-gram and looks each one up in the pruned n-gram table), which made it the largest CPU cost
of extraction (~1.4 ms per page). Pages repeat their words: on the e2e crawl 6% of 5.2M words are distinct. Here
a word's row ids are computed once per worker and remembered; the page's vector is then summed from them.

The arithmetic is fastText's own, in its order and precision: float32 sums of the (product-quantized) input rows
in token order, scaled by ``float(1.0 / n)``; the tree walk of ``HierarchicalSoftmaxLoss::dfs`` (left child
first, the same pruning), its sigmoid ``1. / (1 + expf(-f))`` and ``std_log(x) = log(x + 1e-5)`` rounded to float
where fastText rounds; ``expf`` of the best path's score. So labels and probabilities are the same bits as
``fasttext.FastText._FastText.predict(text, k=1)`` (``tests/test_langid.py`` checks every page of a real crawl and
generated strings: non-ASCII, NUL bytes, ``__label__`` tokens, a literal ``</s>`` that ends fastText's line).

Supported: supervised models (file version 12) with hierarchical softmax, word n-grams of 1, a dense or
product-quantized input matrix (with or without quantized norms) and a dense output matrix. :func:`read_model`
returns None for any other model, and callers keep fastText's own predict.
"""

from __future__ import annotations

import itertools
import math
import struct

import numba
import numpy as np

MAGIC, VERSION = 793712314, 12
LOSS_HS, MODEL_SUPERVISED = 1, 3
EOS = b"</s>"
LABEL = b"__label__"
KSUB = 256  # centroids per sub-quantizer
LOG_THRESHOLD = np.float32(math.log(0.0 + 1e-5))  # std_log(threshold) for predict's default threshold 0.0


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def unpack(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def array(self, dtype, count: int) -> np.ndarray:
        a = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.pos)
        self.pos += a.nbytes
        return a

    def cstring(self) -> bytes:
        end = self.data.index(b"\0", self.pos)
        s, self.pos = self.data[self.pos : end], end + 1
        return s


def _product_quantizer(r: _Reader) -> tuple[int, int, int, int, np.ndarray]:
    dim, nsubq, dsub, lastdsub = r.unpack("iiii")
    return dim, nsubq, dsub, lastdsub, r.array(np.float32, dim * KSUB)


def _decode(codes: np.ndarray, pq: tuple, rows: int, norms: np.ndarray | None) -> np.ndarray:
    """Every row as fastText's ``addcode`` adds it to a zero vector: ``norm * centroid`` in float32."""
    dim, nsubq, dsub, lastdsub, centroids = pq
    codes = codes.reshape(rows, nsubq)
    out = np.empty((rows, dim), dtype=np.float32)
    for m in range(nsubq):
        d = lastdsub if m == nsubq - 1 else dsub
        table = centroids[m * KSUB * dsub : m * KSUB * dsub + KSUB * d].reshape(KSUB, d)
        out[:, m * dsub : m * dsub + d] = table[codes[:, m]]
    if norms is not None:
        out *= norms[:, None]  # float32 products, as alpha * c[n] is in fastText
    return out


class HsModel:
    """A loaded model: the vocabulary, the pruned n-gram table, the decoded input rows, the output rows and the
    Huffman tree of the labels. ``top(text)`` -> (label, probability) or None (no word at all)."""

    def __init__(
        self,
        words: dict[bytes, int],
        labels: list[str],
        label_words: frozenset[bytes],
        args: dict,
        prune: dict[int, int] | None,
        inp: np.ndarray,
        out: np.ndarray,
        memo_size: int = 1_000_000,
    ) -> None:
        self.words, self.labels, self.label_words = words, labels, label_words
        self.nwords, self.minn, self.maxn, self.bucket = (
            args["nwords"],
            args["minn"],
            args["maxn"],
            args["bucket"],
        )
        # an n-gram's bucket -> its input row (-1: pruned away); an unpruned model's table is the identity
        self.rows_of_bucket = np.arange(self.nwords, self.nwords + self.bucket, dtype=np.int32)
        if prune is not None:
            self.rows_of_bucket[:] = -1
            if prune:
                keys = np.fromiter(prune.keys(), dtype=np.int64, count=len(prune))
                self.rows_of_bucket[keys] = self.nwords + np.fromiter(
                    prune.values(), dtype=np.int64, count=len(prune)
                )
        self.inp, self.out = inp, out
        self.left, self.right = _huffman_tree(args["label_counts"])
        self.osz = len(labels)
        self.memo_size = memo_size
        self._reset()

    def _reset(self) -> None:
        self._memo: dict[bytes, int] = {}
        # word u's row ids are _ids[_offsets[u]:_offsets[u + 1]]; both grow by doubling
        self._offsets = np.zeros(1 << 16, dtype=np.int64)
        self._ids = np.zeros(1 << 18, dtype=np.int32)
        eos = self.words.get(EOS)
        self._append(
            [EOS], np.array([] if eos is None else [eos], dtype=np.int32), np.array([0 if eos is None else 1])
        )

    def _append(self, tokens: list[bytes], ids: np.ndarray, counts: np.ndarray) -> None:
        u, end = len(self._memo), int(self._offsets[len(self._memo)])
        for k, t in enumerate(tokens, start=u):
            self._memo[t] = k
        need_u, need_ids = u + len(tokens) + 1, end + len(ids)
        if need_u > len(self._offsets):
            self._offsets = np.resize(self._offsets, max(need_u, 2 * len(self._offsets)))
        if need_ids > len(self._ids):
            self._ids = np.resize(self._ids, max(need_ids, 2 * len(self._ids)))
        self._offsets[u + 1 : need_u] = end + np.cumsum(counts)
        self._ids[end:need_ids] = ids

    def _add(self, tokens: list[bytes]) -> None:
        """Row ids of new tokens: a vocabulary word's id then its n-grams' rows, an unknown word's n-grams' rows;
        a label (``__label__...``) is not a word and adds nothing."""
        words, labels = self.words, self.label_words
        skipped = [t for t in tokens if t in labels or (t.startswith(LABEL) and t not in words)]
        if skipped:
            self._append(skipped, np.zeros(0, dtype=np.int32), np.zeros(len(skipped), dtype=np.int64))
            tokens = sorted(set(tokens).difference(skipped))
        if not tokens:
            return
        joined = b"".join([b"<" + t + b">" for t in tokens])
        lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens)) + 2
        ends = np.cumsum(lengths)
        wids = np.fromiter(map(words.get, tokens, itertools.repeat(-1)), dtype=np.int64, count=len(tokens))
        ids, counts = _subword_ids(
            np.frombuffer(joined, dtype=np.uint8),
            ends - lengths,
            ends,
            wids,
            self.minn,
            self.maxn,
            self.rows_of_bucket,
        )
        self._append(tokens, ids, counts)

    def top(self, text: str) -> tuple[str, float] | None:
        """fastText's ``predict(text, k=1)`` for a text without newlines (fastText appends one: end of line)."""
        data = text.encode("utf-8")
        if b"\0" in data:  # fastText splits at NUL bytes too
            data = data.replace(b"\0", b" ")
        tokens = data.split()  # ASCII whitespace: fastText's separators
        try:
            tokens = tokens[: tokens.index(EOS) + 1]  # a literal </s> ends fastText's line there
        except ValueError:
            tokens.append(EOS)
        new = set(tokens).difference(self._memo)
        if new:
            if len(self._memo) + len(new) > self.memo_size:
                self._reset()  # a memo, not a record: starting over changes no result
                new = set(tokens).difference(self._memo)
            self._add(sorted(new))
        uids = np.fromiter(map(self._memo.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        node, score = _predict(
            uids, self._offsets, self._ids, self.inp, self.out, self.left, self.right, self.osz
        )
        if node < 0:
            return None
        return self.labels[node], float(_expf(score))


def read_model(path: str) -> HsModel | None:
    """The model at ``path`` (a local file) when it is one this module computes exactly, else None (fastText's
    own loader then reads it, or says what is wrong with the file)."""
    with open(path, "rb") as f:
        r = _Reader(f.read())
    try:
        return _parse(r)
    except (struct.error, ValueError):  # cut short or not a fastText model at all
        return None


def _parse(r: _Reader) -> HsModel | None:
    magic, version = r.unpack("ii")
    if magic != MAGIC or version != VERSION:
        return None
    dim, _ws, _epoch, _min_count, _neg, word_ngrams, loss, model, bucket, minn, maxn, _lr_update = r.unpack(
        "12i"
    )
    r.unpack("d")
    if loss != LOSS_HS or model != MODEL_SUPERVISED or word_ngrams != 1:
        return None
    size, nwords, nlabels, _ntokens, prune_size = r.unpack("iiiqq")
    words: dict[bytes, int] = {}
    labels: list[str] = []
    label_words: set[bytes] = set()
    counts: list[int] = []
    for i in range(size):
        word = r.cstring()
        count, kind = r.unpack("qb")
        if kind == 0:
            words[word] = i
        else:
            label_words.add(word)
            labels.append(word.decode("utf-8", errors="replace").removeprefix("__label__"))
            counts.append(count)
    if len(words) != nwords or len(labels) != nlabels or nlabels < 2:
        return None
    prune = None
    if prune_size >= 0:
        pairs = r.array(np.int32, 2 * prune_size).reshape(-1, 2) if prune_size else np.zeros((0, 2), np.int32)
        prune = dict(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist(), strict=True))
    (quant_input,) = r.unpack("?")
    if quant_input:
        (qnorm,) = r.unpack("?")
        rows, cols = r.unpack("qq")
        (codesize,) = r.unpack("i")
        codes = r.array(np.uint8, codesize)
        pq = _product_quantizer(r)
        norms = None
        if qnorm:
            norm_codes = r.array(np.uint8, rows)
            norms = _product_quantizer(r)[4][norm_codes]
        inp = _decode(codes, pq, rows, norms)
    else:
        rows, cols = r.unpack("qq")
        inp = r.array(np.float32, rows * cols).reshape(rows, cols)
    (qout,) = r.unpack("?")
    if qout:
        return None
    orows, ocols = r.unpack("qq")
    out = np.ascontiguousarray(r.array(np.float32, orows * ocols).reshape(orows, ocols))
    if cols != dim or ocols != dim or orows < nlabels - 1 or r.pos != len(r.data):
        return None
    args = {"nwords": nwords, "minn": minn, "maxn": maxn, "bucket": bucket, "label_counts": counts}
    return HsModel(words, labels, frozenset(label_words), args, prune, np.ascontiguousarray(inp), out)


def _huffman_tree(counts: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """``HierarchicalSoftmaxLoss::buildTree``: children of every node (leaves 0..osz-1 are the labels, in the
    dictionary's order, most frequent first)."""
    osz = len(counts)
    count = list(counts) + [10**15] * (osz - 1)  # fastText's int64 counts, 1e15 for inner nodes
    left = np.full(2 * osz - 1, -1, dtype=np.int64)
    right = np.full(2 * osz - 1, -1, dtype=np.int64)
    leaf, node = osz - 1, osz
    for i in range(osz, 2 * osz - 1):
        mini = [0, 0]
        for j in range(2):
            if leaf >= 0 and count[leaf] < count[node]:
                mini[j], leaf = leaf, leaf - 1
            else:
                mini[j], node = node, node + 1
        left[i], right[i] = mini
        count[i] = count[mini[0]] + count[mini[1]]
    return left, right


@numba.njit(cache=True, nogil=True)
def _subword_ids(buf, starts, ends, wids, minn, maxn, rows_of_bucket):  # pragma: no cover - compiled
    """Row ids of each ``<word>`` in ``buf``: fastText's ``addSubwords`` / ``computeSubwords`` / ``pushHash``
    (FNV-1a over signed bytes, n-grams of minn..maxn UTF-8 characters, single characters at either end left out,
    each n-gram's bucket mapped through the pruned table or dropped)."""
    bound = 0
    for k in range(len(starts)):
        bound += (ends[k] - starts[k]) * (maxn - minn + 1) + 1
    out = np.empty(bound, dtype=np.int32)
    counts = np.zeros(len(starts), dtype=np.int64)
    p = 0
    for k in range(len(starts)):
        p0 = p
        if wids[k] >= 0:
            out[p] = wids[k]
            p += 1
        s, e = starts[k], ends[k]
        for i in range(s, e):
            if (buf[i] & 0xC0) == 0x80:
                continue
            h = np.uint64(2166136261)
            j = i
            n = 1
            while j < e and n <= maxn:
                c = np.uint64(buf[j])
                if c >= 128:
                    c |= np.uint64(0xFFFFFF00)  # uint32(int8(c))
                h = ((h ^ c) * np.uint64(16777619)) & np.uint64(0xFFFFFFFF)
                j += 1
                while j < e and (buf[j] & 0xC0) == 0x80:
                    c = np.uint64(buf[j]) | np.uint64(0xFFFFFF00)
                    h = ((h ^ c) * np.uint64(16777619)) & np.uint64(0xFFFFFFFF)
                    j += 1
                if n >= minn and not (n == 1 and (i == s or j == e)):
                    row = rows_of_bucket[np.int64(h % np.uint64(len(rows_of_bucket)))]
                    if row >= 0:
                        out[p] = row
                        p += 1
                n += 1
        counts[k] = p - p0
    return out[:p].copy(), counts


@numba.njit(cache=True, nogil=True)
def _expf(x):  # pragma: no cover - compiled
    return math.exp(np.float32(x))


@numba.njit(cache=True, nogil=True)
def _std_log(x):  # pragma: no cover - compiled
    return np.float32(math.log(np.float64(np.float32(x)) + 1e-5))


@numba.njit(cache=True, nogil=True)
def _predict(uids, offsets, ids, inp, out, left, right, osz):  # pragma: no cover - compiled
    """(best label, its log-probability score as float32), or (-1, 0) with no row at all."""
    dim = inp.shape[1]
    hidden = np.zeros(dim, dtype=np.float32)
    n = 0
    for u in uids:
        for q in range(offsets[u], offsets[u + 1]):
            row = ids[q]
            for d in range(dim):
                hidden[d] += inp[row, d]
            n += 1
    if n == 0:
        return -1, np.float32(0.0)
    scale = np.float32(1.0 / n)
    for d in range(dim):
        hidden[d] *= scale
    nodes = np.empty(2 * osz, dtype=np.int64)
    scores = np.empty(2 * osz, dtype=np.float32)
    nodes[0], scores[0], top = 2 * osz - 2, np.float32(0.0), 1
    best, best_score = -1, np.float32(0.0)
    while top > 0:
        top -= 1
        node, score = nodes[top], scores[top]
        if score < LOG_THRESHOLD:
            continue
        if best >= 0 and score < best_score:
            continue
        if left[node] == -1 and right[node] == -1:
            best, best_score = node, score  # a leaf reached here scores >= the best: fastText keeps the later
            continue
        f = np.float32(0.0)
        r = node - osz
        for d in range(dim):
            f += out[r, d] * hidden[d]
        f = np.float32(1.0 / np.float64(np.float32(1.0) + np.float32(math.exp(-f))))
        nodes[top], scores[top] = right[node], np.float32(score + _std_log(f))
        nodes[top + 1], scores[top + 1] = (
            left[node],
            np.float32(score + _std_log(np.float32(1.0 - np.float64(f)))),
        )
        top += 2
    return best, best_score
