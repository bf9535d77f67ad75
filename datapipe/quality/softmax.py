"""fastText's ``predict`` for softmax classifiers with word n-grams (DCLM's and our quality models), computed in
compiled code with fastText's own arithmetic, over the text as the quality scorer preprocesses it.

Why: scoring was the quality stage's whole cost, and most of it was fastText itself: on the e2e build's 1,512 kept
pages (15.3 M characters) its ``predict`` took 0.64 s and DCLM's preprocessing (``" ".join(text.split())``, a new
string per page) 0.14 s more, in each worker. fastText reads every token character by character from a
``std::stringstream``, looks it up in its hash table at every occurrence and adds its rows one float at a time.
Here one compiled pass splits the page's UTF-8 where ``str.split`` and then fastText would (``str.isspace``'s
white space, and NUL, which fastText also ends a word at), finds each token in a memo of the tokens seen so far
(their rows and their fastText hash, computed once per worker) and sums the rows, then the word n-grams' rows.

The arithmetic is fastText's, in its order and precision (``Dictionary::getLine``, ``addWordNgrams``,
``Model::computeHidden``, ``SoftmaxLoss::computeOutput``, ``Loss::findKBest``, ``FastText::predictLine``): the
float32 sum of the token rows in token order, the end-of-line token's, then each word n-gram's row (the n-gram
hash ``h * 116049371 + hash`` in 64 bits over the tokens' sign-extended 32-bit FNV-1a hashes, modulo the bucket
count), scaled by ``float(1.0 / n)``; each label's float32 dot product in order; the softmax's ``exp`` in double
rounded to float, float sums and quotients; ``std_log`` and the final ``expf`` as for language ID
(:mod:`datapipe.kernels.fasttext`). So a score is the same float as ``QualityModel``'s through fastText
(``tests/test_quality.py`` checks every fixture page and generated texts: labels and ``</s>`` in the text, NUL,
Unicode white space, no word at all).

Supported: what :func:`datapipe.kernels.fasttext.read_supervised` reads with the softmax loss (dense or
product-quantized input, dense output, pruned or not, any word n-gram length and subword range). Anything else,
a text with a lone surrogate or over :data:`MAX_CHARS` characters, is left to fastText.
"""

from __future__ import annotations

import math

import numpy as np

from datapipe.kernels.fasttext import (
    EOS,
    LOSS_SOFTMAX,
    Supervised,
    add_row,
    bucket_index,
    bucket_row,
    dictionary_entry,
    eos_rows,
    expf,
    fasttext_hash,
    read_supervised,
    std_log,
    subword_rows,
    vocabulary,
)
from datapipe.kernels.interned import Interned, find, has_room, insert, scan_growing
from datapipe.kernels.jit import kernel
from datapipe.kernels.utf8 import decode, utf8_within
from datapipe.languages.chunk_ids import white_space

MAX_CHARS = 1 << 24  # a longer text goes to fastText (the pass's per-text arrays are sized by the text)
NGRAM_MULTIPLIER = np.uint64(116049371)


class SoftmaxModel:
    """A loaded softmax classifier: ``probabilities(text, lowercase)`` -> every label's probability, as fastText's
    ``predict(preprocess(text), k=len(labels))`` gives them (zeros where it predicts nothing: a text without a
    row), or None for a text left to fastText."""

    def __init__(self, sup: Supervised, memo_size: int = 1_000_000) -> None:
        args = sup.args
        nwords, bucket = args["nwords"], args["bucket"]
        self.labels = [e.decode("utf-8", errors="replace") for e in sup.entries[nwords:]]
        self.minn, self.maxn, self.word_ngrams = args["minn"], args["maxn"], args["word_ngrams"]
        self.buckets = bucket_index(nwords, bucket, sup.prune)
        self.bucket = bucket
        self.vocab = vocabulary(sup.entries)
        self.kinds = sup.kinds
        # the end-of-line token: its rows (none when the dictionary lacks it) and its hash (a word either way)
        self.eos_rows = eos_rows(sup.entries, nwords)
        eos = np.frombuffer(EOS, dtype=np.uint8)
        self.eos_hash = np.int64(fasttext_hash(eos, 0, len(eos)))
        self.inp, self.out = sup.inp, sup.out
        self.space = white_space()
        self.memo_size = memo_size
        self._memo = Interned()
        self._token_hash = np.zeros(0, dtype=np.int64)  # a memo token's hash; -2**40: not a word

    def probabilities(self, text: str, lowercase: bool = False) -> np.ndarray | None:
        if lowercase:  # DCLM lowercases after joining; lowercasing makes and removes no white space
            text = text.lower()
        raw = utf8_within(text, MAX_CHARS)
        if raw is None:
            return None
        data = np.frombuffer(raw, dtype=np.uint8)
        if self._memo.counts[0] > self.memo_size:
            self._memo = Interned()  # a memo, not a record: starting over changes no result
            self._token_hash = np.zeros(0, dtype=np.int64)
        hidden = np.zeros(self.inp.shape[1], dtype=np.float32)
        sequence = np.empty(len(data) // 2 + 2, dtype=np.int64)  # the word tokens' hashes, in order
        state = np.zeros(3, dtype=np.int64)  # rows summed, word tokens, ids a stopped token needs

        def scan(m: Interned, pos: int, _rows: int) -> tuple[int, int]:
            if len(self._token_hash) < len(m.offsets):
                grown = np.zeros(len(m.offsets), dtype=np.int64)
                grown[: len(self._token_hash)] = self._token_hash
                self._token_hash = grown
            stop = _scan(
                data, pos, self.space, m.table, m.hashes, m.starts, m.arena, m.offsets, m.ids, m.counts,
                self._token_hash, self.vocab.table, self.vocab.hashes, self.vocab.starts, self.vocab.arena,
                self.kinds, self.minn, self.maxn, *self.buckets, self.bucket, self.inp, hidden, sequence, state,
            )  # fmt: skip
            return stop, int(state[0])

        try:
            scan_growing(self._memo, scan, len(data), lambda pos: len(data) - pos, lambda: int(state[2]))
        except BaseException:
            self._memo = Interned()  # a growth that failed half-way leaves arrays of unequal sizes
            self._token_hash = np.zeros(0, dtype=np.int64)
            raise
        probs = np.zeros(len(self.labels), dtype=np.float64)
        _finish(
            hidden, state, sequence, self.eos_rows, self.eos_hash, self.word_ngrams, *self.buckets, self.bucket,
            self.inp, self.out, probs,
        )  # fmt: skip
        return probs


def read_softmax(path: str) -> SoftmaxModel | None:
    """The model at ``path`` (a local file) when it is one this module computes exactly, else None."""
    sup = read_supervised(path)
    if (
        sup is None
        or sup.args["loss"] != LOSS_SOFTMAX
        or len(sup.out) != len(sup.entries) - sup.args["nwords"]
    ):
        return None
    return SoftmaxModel(sup)


NOT_A_WORD = -(1 << 40)


@kernel
def _scan(
    data, pos, space, table, hashes, starts, arena, offsets, ids, counts, token_hash, vtable, vhashes, vstarts,
    varena, vkinds, minn, maxn, bits, base, rows, bucket, inp, hidden, sequence, state,
):  # fmt: skip  # pragma: no cover - compiled
    """``getLine`` and ``computeHidden``'s sum over the token rows, from byte ``pos`` on: tokens end at white
    space (``space``: ``str.isspace`` by code point) and NUL; each token's rows are added to ``hidden`` in order
    (``state[0]`` counts them) and a word's hash appended to ``sequence`` (``state[1]`` of them). A new token goes
    into the memo with its rows and hash. Returns where it stopped: the end of the text, a literal ``</s>`` (which
    ends fastText's line: the caller adds the end-of-line token), or a new token the memo has no room for, with the
    ids it needs in ``state[2]``."""
    end = len(data)
    grams = max(1, maxn - minn + 1)
    while True:
        while pos < end:
            b = data[pos]
            if b < 0x80:
                if b != 0 and not space[b]:
                    break
                pos += 1
            else:
                c, length = decode(data, pos)
                if c < len(space) and space[c]:
                    pos += length
                else:
                    break
        if pos >= end:
            return end
        s = pos
        h = np.uint64(14695981039346656037)  # the memo's hash of the token, computed while finding its end
        while pos < end:
            b = data[pos]
            if b < 0x80:
                if b == 0 or space[b]:
                    break
                h = (h ^ np.uint64(b)) * np.uint64(1099511628211)
                pos += 1
            else:
                c, length = decode(data, pos)
                if c < len(space) and space[c]:
                    break
                for k in range(length):
                    h = (h ^ np.uint64(data[pos + k])) * np.uint64(1099511628211)
                pos += length
        e = pos
        if e - s == 4 and data[s] == 60 and data[s + 1] == 47 and data[s + 2] == 115 and data[s + 3] == 62:
            return end  # a literal </s>: the end-of-line token (the caller adds it), and the end of fastText's line
        u, slot = find(table, hashes, starts, arena, data, s, e, h)
        if u < 0:
            most = (e - s + 2) * grams + 1  # the word's row and one row per n-gram at most (subword_rows)
            if not has_room(table, hashes, arena, counts, e - s) or counts[2] + most > len(ids):
                state[2] = most
                return s
            u = insert(table, slot, hashes, starts, arena, counts, data, s, e, h)
            entry, label = dictionary_entry(vtable, vhashes, vstarts, varena, vkinds, data, s, e, h)
            q = counts[2]
            if label:
                token_hash[u] = NOT_A_WORD
            else:
                q = subword_rows(data, s, e, entry, minn, maxn, bits, base, rows, bucket, ids, q)
                token_hash[u] = fasttext_hash(data, s, e)
            offsets[u + 1] = q
            counts[2] = q
        for q in range(offsets[u], offsets[u + 1]):
            add_row(hidden, inp, ids[q])
            state[0] += 1
        if token_hash[u] != NOT_A_WORD:
            sequence[state[1]] = token_hash[u]
            state[1] += 1


@kernel
def _finish(
    hidden, state, sequence, eos_rows, eos_hash, word_ngrams, bits, base, rows, bucket, inp, out, probs
):  # pragma: no cover - compiled
    """The end-of-line token, the word n-grams (``addWordNgrams``), the scaling, the softmax and each label's
    probability as ``predictLine`` gives it, into ``probs`` (left at 0 when fastText predicts nothing)."""
    dim = inp.shape[1]
    n = state[0]
    for row in eos_rows:
        add_row(hidden, inp, row)
        n += 1
    m = state[1]
    sequence[m] = eos_hash
    m += 1
    buckets = np.uint64(bucket)
    for i in range(m):
        h = np.uint64(sequence[i])  # int32 -> uint64, sign-extended, as fastText converts it
        j = i + 1
        while j < m and j < i + word_ngrams:
            h = h * NGRAM_MULTIPLIER + np.uint64(sequence[j])
            row = bucket_row(bits, base, rows, np.int64(h % buckets))
            if row >= 0:
                add_row(hidden, inp, row)
                n += 1
            j += 1
    if n == 0:
        return
    scale = np.float32(1.0 / n)
    for d in range(dim):
        hidden[d] *= scale
    osz = out.shape[0]
    output = np.empty(osz, dtype=np.float32)
    for i in range(osz):
        f = np.float32(0.0)
        for d in range(dim):
            f += out[i, d] * hidden[d]
        output[i] = f
    top = output[0]
    for i in range(osz):
        top = top if output[i] < top else output[i]  # std::max(output[i], max)
    z = np.float32(0.0)
    for i in range(osz):
        output[i] = np.float32(math.exp(np.float64(np.float32(output[i] - top))))
        z += output[i]
    for i in range(osz):
        output[i] = np.float32(output[i] / z)
        probs[i] = expf(std_log(output[i]))
