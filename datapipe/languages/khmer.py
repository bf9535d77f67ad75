"""khmer-nltk's word tokenizer (the one datatrove assigns to Khmer), with the same words, 1.5x faster.

khmer-nltk cuts the text into Khmer character clusters (KCCs), builds a dict of some 25 features per cluster
(the cluster, its type and its neighbours' up to three away) and asks a CRF (python-crfsuite) for the best
labelling; a cluster labelled ``1`` starts a word. Building the dicts and converting them for crfsuite took
~40 us per cluster, and Khmer was the slowest language of the FineWeb-2 pipeline (``benchmarks/multilingual.py``:
13 s for 500 pages, as slow as datatrove). Measured on 600 LibreOffice pages, raw and simplified: khmer-nltk
16-17 s, this 11.4 s. What is left is Python looking up 32 features per cluster (and khmer-nltk's own cluster
segmentation); compiling those lookups is the next step if Khmer matters.

Here the clusters come from khmer-nltk's own ``cleanup_str`` and ``seg_kcc``, each cluster's type is computed once,
and the features are looked up directly in the model's weights, read exactly (float64) from the crfsuite model
file: its feature table in the attribute order that crfsuite's own dump lists, checked weight by weight against
that dump. The state scores are summed per label in the features' order, as crfsuite sums them, and the Viterbi
pass is crfsuite's (the first of equal scores wins), so the labels, and the words, are the same
(``tests/test_languages.py`` compares them with khmer-nltk on every Khmer fixture page).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np


def quiet_khmer_nltk() -> None:
    """khmer-nltk's logger prints an INFO line each time its model loads."""
    import logging

    import khmernltk  # noqa: F401  (it sets its logger up on import)

    logging.getLogger("khmer-nltk").setLevel(logging.WARNING)


FEATURE = np.dtype([("type", "<i4"), ("src", "<i4"), ("dst", "<i4"), ("w", "<f8")])


def _exact_weights(crf: Any) -> tuple[dict[str, tuple[float, ...]], list[list[float]], list[str]]:
    """(attribute -> weight per label id, transition weights [from][to], label names) from the model file."""
    with open(crf.modelfile.name, "rb") as f:
        data = f.read()
    (magic, _, _, _, _, n_labels, _, off_feat, _, _, _, off_attrrefs) = struct.unpack_from(
        "<4sI4sIIIIIIIII", data
    )
    if magic != b"lCRF":
        raise ValueError("not a crfsuite model")
    _, _, n_feat = struct.unpack_from("<4sII", data, off_feat)
    feats = np.frombuffer(data, dtype=FEATURE, count=n_feat, offset=off_feat + 12)
    _, _, n_attrs = struct.unpack_from("<4sII", data, off_attrrefs)
    offsets = np.frombuffer(data, dtype="<u4", count=n_attrs, offset=off_attrrefs + 12)
    ordered: list[int] = []
    for off in offsets.tolist():
        (n,) = struct.unpack_from("<I", data, off)
        ordered.extend(np.frombuffer(data, dtype="<i4", count=n, offset=off + 4).tolist())
    state = [fid for fid in ordered if feats["type"][fid] == 0]
    info = crf.tagger_.info()  # crfsuite's own text dump: attribute names, weights to 6 decimals, same order
    dumped = list(info.state_features.items())
    labels = list(crf.tagger_.labels())
    if len(state) != len(dumped):
        raise ValueError("the model's feature table and its dump disagree")
    weights: dict[str, list[float]] = {}
    for fid, ((attr, label), w) in zip(state, dumped, strict=True):
        exact = float(feats["w"][fid])
        if abs(exact - w) > 5e-7 or labels[int(feats["dst"][fid])] != label:
            raise ValueError(f"feature {attr!r}: the model file and its dump disagree")
        weights.setdefault(attr, [0.0] * n_labels)[int(feats["dst"][fid])] = exact
    trans = [[0.0] * n_labels for _ in range(n_labels)]
    for f in feats[feats["type"] == 1]:
        trans[int(f["src"])][int(f["dst"])] = float(f["w"])
    return {k: tuple(v) for k, v in weights.items()}, trans, labels


def _cat(*seqs: list[str]) -> list[str]:
    """The strings at each index joined, up to the shortest sequence (the n-gram features)."""
    return ["".join(parts) for parts in zip(*seqs, strict=False)]


class KhmerWords:
    """``split(text)`` == datatrove's ``KhmerTokenizer().word_tokenize(text)``."""

    def __init__(self) -> None:
        from khmernltk.utils.data import cleanup_str, seg_kcc
        from khmernltk.utils.file_utils import load_model
        from khmernltk.word_tokenize import features, model_path

        quiet_khmer_nltk()
        self._cleanup, self._seg = cleanup_str, seg_kcc
        self._kcc_type, self._no_space = features.kcc_type, features.is_no_space
        self._weights, self._trans, labels = _exact_weights(load_model(model_path))
        self._start = labels.index("1")  # a cluster labelled "1" starts a word
        self._n = len(labels)

    def _scores(self, kccs: list[str]) -> np.ndarray:
        """Each cluster's state score per label: khmer-nltk's features, looked up template by template, then
        added in khmer-nltk's order (as crfsuite adds them; a feature the model lacks, or a false one, adds 0)."""
        n, last = len(kccs), len(kccs) - 1
        types = [self._kcc_type(k) for k in kccs]
        ns = [self._no_space(k) for k in kccs]
        zero = (0.0,) * self._n
        get = self._weights.get

        def column(values: list[str], prefix: str, start: int = 0) -> np.ndarray:
            """A template's weights at every position (rows before ``start`` or past the values: 0)."""
            out = np.zeros((n, self._n))
            if values:
                out[start : start + len(values)] = [
                    zero if v is None else get(prefix + v, zero) for v in values
                ]
            return out

        def flag(name: str, on: list[bool], start: int = 0) -> np.ndarray:
            out = np.zeros((n, self._n))
            w = get(name)
            if w is not None and on:
                out[start : start + len(on)] = [w if x else zero for x in on]
            return out

        k, t = kccs, types
        # per position, the features in the order kcc_to_features adds them (absent ones are zero rows)
        parts = [
            column(k, "kcc:"),
            column(t, "t:"),
            flag("ns", ns),
            column(k[:-1], "kcc[-1]:", 1),
            column(t[:-1], "kcc[-1]t:", 1),
            column(_cat(k, k[1:]), "kcc[-1:0]:", 1),
            flag("ns-1", ns[:-1], 1),
            flag("BOS", [True], 0),
            column(k[:-2], "kcc[-2]:", 2),
            column(t[:-2], "kcc[-2]t:", 2),
            column(_cat(k, k[1:-1]), "kcc[-2:-1]:", 2),
            column(_cat(k, k[1:], k[2:]), "kcc[-2:0]:", 2),
            column(k[:-3], "kcc[-3]:", 3),
            column(t[:-3], "kcc[-3]t:", 3),
            column(_cat(k, k[1:], k[2:], k[3:]), "kcc[-3:0]:", 3),
            column(_cat(k, k[1:], k[2:-1]), "kcc[-3:-1]:", 3),
            column(_cat(k, k[1:-2]), "kcc[-3:-2]:", 3),
            column(k[1:], "kcc[+1]:"),
            column(t[1:], "kcc[+1]t:"),
            column(_cat(k, k[1:]), "kcc[+1:0]:"),
            flag("ns+1", ns[1:]),
            flag("EOS", [True], last),
            column(k[2:], "kcc[+2]:"),
            column(t[2:], "kcc[+2]t:"),
            column(_cat(k[1:], k[2:]), "kcc[+1:+2]:"),
            column(_cat(k, k[1:], k[2:]), "kcc[0:+2]:"),
            flag("ns+2", ns[2:]),
            column(k[3:], "kcc[+3]:"),
            column(t[3:], "kcc[+3]t:"),
            column(_cat(k[2:], k[3:]), "kcc[+2:+3]:"),
            column(_cat(k[1:], k[2:], k[3:]), "kcc[+1:+3]:"),
            column(_cat(k, k[1:], k[2:], k[3:]), "kcc[0:+3]:"),
        ]
        total = parts[0].copy()
        for part in parts[1:]:
            total += part  # one addition per feature and label, in order: the same doubles as crfsuite's sums
        return total

    def _viterbi(self, scores: np.ndarray) -> list[int]:
        """crfsuite's ``crf1dc_viterbi``: strict ``<`` comparisons, so the first of equal scores wins."""
        n, trans = self._n, self._trans
        rows = scores.tolist()
        prev = rows[0]
        back: list[list[int]] = []
        for state in rows[1:]:
            cur, arg = [0.0] * n, [0] * n
            for j in range(n):
                best, at = -float("inf"), -1
                for i in range(n):
                    score = prev[i] + trans[i][j]
                    if best < score:
                        best, at = score, i
                arg[j] = at
                cur[j] = best + state[j]
            back.append(arg)
            prev = cur
        best, y = -float("inf"), 0
        for i in range(n):
            if best < prev[i]:
                best, y = prev[i], i
        path = [y]
        for arg in reversed(back):
            y = arg[y]
            path.append(y)
        return path[::-1]

    def split(self, text: str) -> list[str]:
        kccs = self._seg(self._cleanup(text))
        if not kccs:
            return []
        tokens: list[str] = []
        for i, (k, y) in enumerate(zip(kccs, self._viterbi(self._scores(kccs)), strict=True)):
            if y == self._start or i == 0:
                tokens.append(k)
            else:
                tokens[-1] += k
        return [s for s in (t.strip() for t in tokens) if s]
