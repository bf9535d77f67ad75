"""fastText's top-label prediction for hierarchical-softmax models (``lid.176``), read from the model file and
computed exactly as fastText computes it, with each distinct word's rows found once.

Why: language ID classifies whole pages, and fastText finds a word's rows anew at every occurrence (it hashes
every character 2- to 4-gram and looks each one up in the pruned n-gram table), which made it the largest CPU cost
of extraction (~1.4 ms per page). Pages repeat their words: on the e2e crawl 6% of 5.2M words are distinct. Here
one compiled pass splits the page's UTF-8 bytes as fastText does, finds each word in a table of the words seen so
far (their row ids computed once per worker) and sums the rows: 1.2 s for the crawl's 4,073 pages where fastText
takes 5.6 s. The table grows as new words come: the pass stops before a word it has no room for, and goes on once
the table is grown (:func:`datapipe.kernels.interned.scan_growing`). It made room before each text for the most
the text could add instead (~6.5 ids a byte: 25 MB for a million characters, kept until the memo started over),
which took 0.05-0.11 s of each e2e build worker's extract stage (2026-12-05, thirteenth session).

The arithmetic is fastText's own, in its order and precision: float32 sums of the (product-quantized) input rows
in token order, scaled by ``float(1.0 / n)``; the tree walk of ``HierarchicalSoftmaxLoss::dfs`` (left child
first, the same pruning), its sigmoid ``1. / (1 + expf(-f))`` and ``std_log(x) = log(x + 1e-5)`` rounded to float
where fastText rounds; ``expf`` of the best path's score. So labels and probabilities are the same bits as
``fasttext.FastText._FastText.predict(text, k=1)`` (``tests/test_langid.py`` checks every page of a real crawl and
generated strings: non-ASCII, NUL bytes, ``__label__`` tokens, a literal ``</s>`` that ends fastText's line).

Supported: supervised models (file version 12) with hierarchical softmax, word n-grams of 1, a dense or
product-quantized input matrix (with or without quantized norms) and a dense output matrix. :func:`read_model`
returns None for any other model, and callers keep fastText's own predict.

A kernel, not language ID's own: language ID (:mod:`datapipe.langid.identifier`) and the quality stage's softmax
scorer (:mod:`datapipe.quality.softmax`) both compute with it.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

from datapipe.kernels.interned import Interned, fill, find, has_room, insert, scan_growing
from datapipe.kernels.jit import kernel, leaf
from datapipe.kernels.spans import same_span

MAGIC, VERSION = 793712314, 12
LOSS_HS, LOSS_SOFTMAX, MODEL_SUPERVISED = 1, 3, 3
EOS = b"</s>"
LABEL = b"__label__"
LABEL_BYTES = np.frombuffer(LABEL, dtype=np.uint8).copy()
SEPARATORS = np.zeros(256, dtype=np.bool_)
SEPARATORS[[32, 10, 13, 9, 11, 12, 0]] = True  # fastText's readWord: space, \n, \r, \t, \v, \f, NUL
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
        entries: list[bytes],
        kinds: np.ndarray,
        args: dict,
        prune: np.ndarray | None,
        inp: np.ndarray,
        out: np.ndarray,
        memo_size: int = 1_000_000,
    ) -> None:
        """``entries``: the dictionary in file order (words first, so a word's index is its id), ``kinds`` 0 for a
        word and 1 for a label; ``prune``: (bucket, row) pairs of a pruned model, None for an unpruned one."""
        nwords, bucket = args["nwords"], args["bucket"]
        self.labels = [
            e.decode("utf-8", errors="replace").removeprefix("__label__") for e in entries[nwords:]
        ]
        self.minn, self.maxn = args["minn"], args["maxn"]
        self.buckets = bucket_index(nwords, bucket, prune)
        self.bucket = bucket
        self.vocab = vocabulary(entries)
        self.kinds = kinds
        self.eos_rows = eos_rows(entries, nwords)
        self.inp, self.out = inp, out
        self.left, self.right = _huffman_tree(args["label_counts"])
        self.osz = len(self.labels)
        self.memo_size = memo_size
        self._memo = Interned()

    def top(self, text: str) -> tuple[str, float] | None:
        """fastText's ``predict(text, k=1)`` for a text without newlines (fastText appends one: end of line)."""
        data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        if self._memo.counts[0] > self.memo_size:
            self._memo = Interned()  # a memo, not a record: starting over changes no result
        v = self.vocab
        hidden = np.zeros(self.inp.shape[1], dtype=np.float32)
        need = np.zeros(1, dtype=np.int64)  # the ids the word the scan stopped before needs

        def scan(m: Interned, pos: int, rows: int) -> tuple[int, int]:
            return _scan(
                data,
                pos,
                rows,
                m.table,
                m.hashes,
                m.starts,
                m.arena,
                m.offsets,
                m.ids,
                m.counts,
                v.table,
                v.hashes,
                v.starts,
                v.arena,
                self.kinds,
                self.eos_rows,
                self.minn,
                self.maxn,
                *self.buckets,
                self.bucket,
                self.inp,
                hidden,
                need,
            )

        try:
            n = scan_growing(self._memo, scan, len(data), lambda pos: len(data) - pos, lambda: int(need[0]))
        except BaseException:
            # a growth that failed half-way leaves arrays of unequal sizes: start over
            self._memo = Interned()
            raise
        node, score = _tree_top(hidden, n, self.out, self.left, self.right, self.osz)
        if node < 0:
            return None
        return self.labels[node], float(expf(score))


def bucket_index(
    nwords: int, bucket: int, prune: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An n-gram bucket's input row, as ``(bits, base, rows)`` for :func:`bucket_row`. A pruned model keeps rows
    for few of its buckets (``lid.176.ftz``: 42,765 of 2,000,000): bit ``b`` of ``bits`` says whether bucket ``b``
    has one, and it is ``rows[base[b // 64] + (the set bits of bits[b // 64] below b)]``. The bits take 250 KB
    where a row per bucket took 8 MB, read at a random place for every n-gram of every new word: 0.11 s less of
    each e2e build worker's 2,600 pages (2026-12-06). An unpruned model's row is ``nwords + b``: no bits, and
    ``rows`` holds ``nwords``."""
    if prune is None:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64), np.array([nwords], dtype=np.int32)
    order = np.argsort(prune[:, 0], kind="stable")
    buckets, rows = prune[order, 0], (nwords + prune[order, 1]).astype(np.int32)
    # as fastText's map: a bucket named twice has the row named last; one out of range is never looked up
    keep = np.append(buckets[1:] != buckets[:-1], True) & (buckets >= 0) & (buckets < bucket)
    buckets, rows = buckets[keep], rows[keep]
    words = bucket // 64 + 1  # at least one: an empty ``base`` marks an unpruned model
    present = np.zeros(words * 64, dtype=np.bool_)
    present[buckets] = True
    bits = np.packbits(present, bitorder="little").view(np.uint64)
    counts = np.bincount(buckets >> 6, minlength=words)
    return bits, np.cumsum(counts) - counts, rows


def vocabulary(entries: list[bytes]) -> Interned:
    """The dictionary as an interning table (entry ``i`` is token ``i``), for a scan to find a token's entry."""
    vocab = Interned(len(entries) + 1, sum(map(len, entries)) + 1, 1)
    lengths = np.fromiter(map(len, entries), dtype=np.int64, count=len(entries))
    words = np.frombuffer(b"".join(entries), dtype=np.uint8)
    fill(vocab.table, vocab.hashes, vocab.starts, vocab.arena, vocab.counts, words, lengths)
    return vocab


def eos_rows(entries: list[bytes], nwords: int) -> np.ndarray:
    """The end-of-line token's input row (none when the dictionary lacks it)."""
    return np.array([i for i, e in enumerate(entries[:nwords]) if e == EOS], dtype=np.int32)


def read_model(path: str) -> HsModel | None:
    """The model at ``path`` (a local file) when it is one this module computes exactly, else None (fastText's
    own loader then reads it, or says what is wrong with the file)."""
    sup = read_supervised(path)
    if sup is None or sup.args["loss"] != LOSS_HS or sup.args["word_ngrams"] != 1:
        return None
    return HsModel(sup.entries, sup.kinds, sup.args, sup.prune, sup.inp, sup.out)


@dataclass(frozen=True)
class Supervised:
    """A supervised fastText model as its file holds it: the dictionary in file order (words first, so a word's
    index is its id; ``kinds`` 0 for a word, 1 for a label), the arguments predict reads (``loss``,
    ``word_ngrams``, ``nwords``, ``bucket``, ``minn``, ``maxn``, ``label_counts``), the pruned n-gram table
    (None: unpruned), the input rows (decoded when product-quantized) and the dense output rows."""

    entries: list[bytes]
    kinds: np.ndarray
    args: dict
    prune: np.ndarray | None
    inp: np.ndarray
    out: np.ndarray


def read_supervised(path: str) -> Supervised | None:
    """The supervised model at ``path`` (a local file, version 12, dense output), or None for any other file."""
    with open(path, "rb") as f:
        r = _Reader(f.read())
    try:
        return _parse(r)
    except (struct.error, ValueError):  # cut short or not a fastText model at all
        return None


def _parse(r: _Reader) -> Supervised | None:
    magic, version = r.unpack("ii")
    if magic != MAGIC or version != VERSION:
        return None
    dim, _ws, _epoch, _min_count, _neg, word_ngrams, loss, model, bucket, minn, maxn, _lr_update = r.unpack(
        "12i"
    )
    r.unpack("d")
    if model != MODEL_SUPERVISED or word_ngrams < 1:
        return None
    size, nwords, nlabels, _ntokens, prune_size = r.unpack("iiiqq")
    data = np.frombuffer(r.data, dtype=np.uint8)
    starts, ends, all_counts, kinds, r.pos = _dictionary(data, r.pos, size)
    if r.pos < 0:
        return None  # cut short
    entries = [r.data[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
    counts = all_counts[kinds != 0].tolist()
    if kinds[:nwords].any() or not kinds[nwords:].all() or nlabels != size - nwords or nlabels < 2:
        return None  # words come first in a fastText dictionary: a word's entry index is its id
    prune = r.array(np.int32, 2 * prune_size).reshape(-1, 2).astype(np.int64) if prune_size >= 0 else None
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
    args = {
        "nwords": nwords,
        "minn": minn,
        "maxn": maxn,
        "bucket": bucket,
        "label_counts": counts,
        "loss": loss,
        "word_ngrams": word_ngrams,
    }
    return Supervised(entries, kinds, args, prune, np.ascontiguousarray(inp), out)


@kernel
def _dictionary(data, pos, size):  # pragma: no cover - compiled
    """The dictionary's ``size`` entries from byte ``pos``: each a NUL-ended word, an int64 count and an int8 type
    (fastText's ``Dictionary::load``), as (word starts, word ends, counts, types, the position after them; -1 for a
    file cut short). 0.16 s of a 61,000-word model's load in Python, a few ms here."""
    starts = np.empty(size, dtype=np.int64)
    ends = np.empty(size, dtype=np.int64)
    counts = np.empty(size, dtype=np.int64)
    kinds = np.empty(size, dtype=np.int8)
    n = len(data)
    for i in range(size):
        starts[i] = pos
        while pos < n and data[pos] != 0:
            pos += 1
        if pos + 10 > n:
            return starts, ends, counts, kinds, -1
        ends[i] = pos
        pos += 1
        c = np.uint64(0)
        for k in range(8):
            c |= np.uint64(data[pos + k]) << np.uint64(8 * k)
        counts[i] = np.int64(c)
        kinds[i] = np.int8(data[pos + 8])
        pos += 9
    return starts, ends, counts, kinds, pos


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


@leaf
def add_row(hidden, inp, row):  # pragma: no cover - compiled
    """``hidden += inp[row]`` in float32, element by element (fastText's ``Vector::addRow``)."""
    for d in range(len(hidden)):
        hidden[d] += inp[row, d]


@leaf
def fasttext_hash(data, s, e):  # pragma: no cover - compiled
    """``Dictionary::hash`` of ``data[s:e]``: FNV-1a over the bytes as signed chars, 32 bits, as the int32 fastText
    keeps it."""
    f = np.uint64(2166136261)
    for k in range(s, e):
        c = np.uint64(data[k])
        if c >= 128:
            c |= np.uint64(0xFFFFFF00)  # uint32(int8(c))
        f = ((f ^ c) * np.uint64(16777619)) & np.uint64(0xFFFFFFFF)
    return np.int64(np.int32(np.uint32(f)))


@leaf
def dictionary_entry(vtable, vhashes, vstarts, varena, vkinds, data, s, e, h):  # pragma: no cover - compiled
    """The token ``data[s:e]``'s dictionary entry (-1: none) and whether fastText reads it as a label: by its
    entry's type, or for a token not in the dictionary, by the ``__label__`` prefix."""
    entry, _ = find(vtable, vhashes, vstarts, varena, data, s, e, h)
    if entry >= 0:
        return entry, vkinds[entry] == 1
    return entry, e - s >= len(LABEL_BYTES) and same_span(data, s, LABEL_BYTES, 0, len(LABEL_BYTES))


@leaf
def popcount(x):  # pragma: no cover - compiled
    """The set bits of a uint64."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@leaf
def bucket_row(bits, base, rows, b):  # pragma: no cover - compiled
    """Bucket ``b``'s input row, -1 for one a pruned model dropped (:func:`bucket_index` tells the layout)."""
    if len(base) == 0:
        return np.int64(rows[0]) + b
    word = bits[b >> 6]
    bit = np.uint64(1) << np.uint64(b & 63)
    if word & bit:
        return np.int64(rows[base[b >> 6] + popcount(word & (bit - np.uint64(1)))])
    return np.int64(-1)


@leaf
def subword_rows(
    data, s, e, wid, minn, maxn, bits, base, rows, bucket, ids, p
):  # pragma: no cover - compiled
    """fastText's ``addSubwords`` for the token ``data[s:e]`` (word id ``wid`` or -1), written at ``ids[p:]``:
    the word's row, then ``computeSubwords("<" + token + ">")`` through ``pushHash`` (FNV-1a over signed bytes,
    n-grams of minn..maxn UTF-8 characters, single characters at either end left out, each n-gram's bucket mapped
    to its row by :func:`bucket_row`, or dropped). Returns the new end."""
    if wid >= 0:
        ids[p] = wid
        p += 1
    size = e - s + 2  # with "<" and ">"
    for i in range(size):
        c0 = 60 if i == 0 else (62 if i == size - 1 else data[s + i - 1])
        if (c0 & 0xC0) == 0x80:
            continue
        h = np.uint64(2166136261)
        j = i
        n = 1
        while j < size and n <= maxn:
            c = np.uint64(60 if j == 0 else (62 if j == size - 1 else data[s + j - 1]))
            if c >= 128:
                c |= np.uint64(0xFFFFFF00)  # uint32(int8(c))
            h = ((h ^ c) * np.uint64(16777619)) & np.uint64(0xFFFFFFFF)
            j += 1
            while j < size - 1 and (data[s + j - 1] & 0xC0) == 0x80:
                c = np.uint64(data[s + j - 1]) | np.uint64(0xFFFFFF00)
                h = ((h ^ c) * np.uint64(16777619)) & np.uint64(0xFFFFFFFF)
                j += 1
            if n >= minn and not (n == 1 and (i == 0 or j == size)):
                row = bucket_row(bits, base, rows, np.int64(h % np.uint64(bucket)))
                if row >= 0:
                    ids[p] = row
                    p += 1
            n += 1
    return p


@kernel
def _scan(
    data,
    pos,
    n_rows,
    table,
    hashes,
    starts,
    arena,
    offsets,
    ids,
    counts,
    vtable,
    vhashes,
    vstarts,
    varena,
    vkinds,
    eos_rows,
    minn,
    maxn,
    bits,
    base,
    rows,
    bucket,
    inp,
    hidden,
    need,
):  # pragma: no cover - compiled
    """fastText's ``getLine`` + ``computeHidden`` before the scaling, from byte ``pos`` on with ``n_rows`` rows summed
    into ``hidden`` so far: the sum of every token's rows in order, a token's rows computed once and remembered (new
    tokens go into the memo arrays). Returns (where it stopped, the rows summed): the end of the text, or the start of
    a new token the memo has no room for, with the ids that token needs in ``need[0]``
    (:func:`~datapipe.kernels.interned.scan_growing` grows the memo and calls again)."""
    end = len(data)
    grams = max(1, maxn - minn + 1)
    while True:
        while pos < end and SEPARATORS[data[pos]]:
            pos += 1
        if pos >= end:
            break
        s = pos
        h = np.uint64(14695981039346656037)  # _fnv of the token, computed while finding its end
        while pos < end and not SEPARATORS[data[pos]]:
            h = (h ^ np.uint64(data[pos])) * np.uint64(1099511628211)
            pos += 1
        e = pos
        if e - s == 4 and data[s] == 60 and data[s + 1] == 47 and data[s + 2] == 115 and data[s + 3] == 62:
            break  # a literal </s> ends fastText's line: it is the end-of-line token
        u, slot = find(table, hashes, starts, arena, data, s, e, h)
        if u < 0:
            most = (e - s + 2) * grams + 1  # the word's row and one row per n-gram at most (subword_rows)
            if not has_room(table, hashes, arena, counts, e - s) or counts[2] + most > len(ids):
                need[0] = most
                return s, n_rows
            u = insert(table, slot, hashes, starts, arena, counts, data, s, e, h)
            entry, label = dictionary_entry(vtable, vhashes, vstarts, varena, vkinds, data, s, e, h)
            q = counts[2]
            if not label:  # a label is not a word: no rows
                q = subword_rows(data, s, e, entry, minn, maxn, bits, base, rows, bucket, ids, q)
            offsets[u + 1] = q
            counts[2] = q
        for q in range(offsets[u], offsets[u + 1]):
            add_row(hidden, inp, ids[q])
            n_rows += 1
    for row in eos_rows:
        add_row(hidden, inp, row)
        n_rows += 1
    return end, n_rows


@kernel
def expf(x):  # pragma: no cover - compiled
    return math.exp(np.float32(x))


@kernel
def std_log(x):  # pragma: no cover - compiled
    return np.float32(math.log(np.float64(np.float32(x)) + 1e-5))


@kernel
def _tree_top(hidden, n, out, left, right, osz):  # pragma: no cover - compiled
    """``hidden *= float(1.0 / n)``, then ``HierarchicalSoftmaxLoss::dfs`` for k = 1: (best label, its
    log-probability score as float32), or (-1, 0) with no row at all."""
    dim = len(hidden)
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
        nodes[top], scores[top] = right[node], np.float32(score + std_log(f))
        nodes[top + 1], scores[top + 1] = (
            left[node],
            np.float32(score + std_log(np.float32(1.0 - np.float64(f)))),
        )
        top += 2
    return best, best_score
