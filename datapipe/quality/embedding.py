"""Static embeddings (token vectors averaged) and a linear head on them: the ``embedding`` quality scorer.

Why: a fastText classifier sees words and word pairs; a scorer over a document's averaged token vectors sees what
the words mean, at a cost close to tokenizing (about 1,600-2,100 documents of 3 KB per CPU second here, against
~1,000 times less for a transformer). The vectors come from a folder in model2vec's format (``model.safetensors``
with ``embeddings``, ``tokenizer.json``, ``config.json``) or from ``builtin:wordllama``, the 32,000 x 256 token
vectors that the ``wordllama`` wheel ships (MIT; trained from LLaMA 2's and Phi-3's embedding tables, so LLaMA 2's
terms may carry over: see docs/quality.md). Nothing is downloaded.

A document's vector is exactly model2vec's ``StaticModel.encode`` (tested against it): the text cut to
``max_length x median token length`` characters, tokenized without special tokens and truncated to ``max_length``
tokens, the unknown token dropped, the rows averaged (documents of one length together, as model2vec does, so the
sums are the same), then scaled to unit length when ``normalize``. The head is a logistic regression trained from
a recipe (:mod:`datapipe.quality.train`); its score is the probability of the positive label.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from datapipe.errors import DatapipeError
from datapipe.io import fs

WORDLLAMA = "builtin:wordllama"
WORDLLAMA_RELEASE = "wordllama==0.4.0.post1"
SCORER_FILE = "scorer.json"  # what makes a folder an embedding scorer: its embeddings, head and labels
HEAD_FILE = "head.npz"


def _wordllama_files() -> tuple[str, str]:
    """The tokenizer and the token vectors inside the installed ``wordllama`` package (read as files: its own
    loader looks for the tokenizer in another folder and downloads it)."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise DatapipeError(
            f"{WORDLLAMA}: the wordllama package is not installed "
            f"(pip install --no-deps {WORDLLAMA_RELEASE}; make venv does)"
        )
    base = list(spec.submodule_search_locations)[0]
    tokenizer = os.path.join(base, "tokenizers", "l2_supercat_tokenizer_config.json")
    weights = os.path.join(base, "weights", "l2_supercat_256.safetensors")
    for path in (tokenizer, weights):
        if not os.path.exists(path):
            raise DatapipeError(
                f"{WORDLLAMA}: {path} is missing from the installed wordllama ({WORDLLAMA_RELEASE})"
            )
    return tokenizer, weights


class StaticEmbeddings:
    """Token vectors and their tokenizer: ``embed(texts)`` is model2vec's ``StaticModel.encode``."""

    def __init__(self, source: str) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.source = source
        if source == WORDLLAMA:
            tokenizer_file, weights_file = _wordllama_files()
            config: dict[str, Any] = {"normalize": True, "max_length": None}
            key = "embedding.weight"
        else:
            folder = fs.local_path(source)
            tokenizer_file = os.path.join(folder, "tokenizer.json")
            weights_file = os.path.join(folder, "model.safetensors")
            config_file = os.path.join(folder, "config.json")
            for path in (tokenizer_file, weights_file):
                if not os.path.exists(path):
                    raise DatapipeError(
                        f"{source}: not a static-embedding folder in model2vec's format (no {os.path.basename(path)})"
                    )
            config = (
                json.loads(Path(config_file).read_text(encoding="utf-8"))
                if os.path.exists(config_file)
                else {}
            )
            key = "embeddings"
        try:
            tensors = load_file(weights_file)
            self.tokenizer = Tokenizer.from_file(tokenizer_file)
        except Exception as e:  # a damaged file: one line naming it
            raise DatapipeError(f"{source}: could not read its vectors or tokenizer ({e})") from None
        if key not in tensors:
            key = next((k for k in ("embeddings", "embedding.weight") if k in tensors), key)
        if key not in tensors:
            raise DatapipeError(
                f"{source}: {weights_file} holds no 'embeddings' tensor ({', '.join(tensors)})"
            )
        vectors = tensors[key]
        # wordllama's float16 vectors are read as float32; a model2vec folder's are used in their own dtype, as
        # model2vec does (a float16 folder averages in float16)
        self.vectors = vectors.astype(np.float32) if source == WORDLLAMA else vectors
        vocab = self.tokenizer.get_vocab()
        if len(vocab) != len(self.vectors):
            raise DatapipeError(f"{source}: {len(vocab):,} tokens but {len(self.vectors):,} vectors")
        tokens = [t for t, _ in sorted(vocab.items(), key=lambda x: x[1])]
        self.median_token_length = int(np.median([len(t) for t in tokens]))
        self.normalize = bool(config.get("normalize", True))
        self.max_length: int | None = config.get("max_length", 512)
        self.tokenizer.no_padding()
        if self.max_length is None:
            self.tokenizer.no_truncation()
        else:
            self.tokenizer.enable_truncation(self.max_length)
        self.unk = _unk_id(self.tokenizer)

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit-length (with ``normalize``) float32 vector per text; an empty text's is zeros."""
        if self.max_length is not None:
            cut = self.max_length * self.median_token_length
            texts = [t[:cut] for t in texts]
        ids = [e.ids for e in self.tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)]
        if self.unk is not None:
            ids = [[i for i in row if i != self.unk] for row in ids]
        dtype = np.dtype(np.float32) if self.vectors.dtype == np.int8 else self.vectors.dtype
        out = np.zeros((len(ids), self.dim), dtype=dtype)
        by_length: dict[int, list[int]] = defaultdict(list)
        for i, row in enumerate(ids):
            if row:
                by_length[len(row)].append(i)
        for _, rows in by_length.items():
            out[rows] = self.vectors[np.array([ids[i] for i in rows], dtype=np.int64)].mean(axis=1)
        if self.normalize:
            out32 = out.astype(np.float32)
            out = (out32 / (np.linalg.norm(out32, axis=1, keepdims=True) + 1e-32)).astype(dtype)
        return out.astype(np.float32)


def _unk_id(tokenizer: Any) -> int | None:
    """The unknown token's id, dropped from every document (model2vec's rule: word-level vocabularies map every
    unseen word to it)."""
    model = tokenizer.model
    if hasattr(model, "unk_token"):
        token = model.unk_token
        return None if token is None else tokenizer.token_to_id(token)
    return json.loads(tokenizer.to_str())["model"].get("unk_id")


@dataclass(frozen=True)
class LinearHead:
    """``sigmoid(x . w + b)``: the probability of the positive label for an embedded document; with ``link=
    "identity"``, ``x . w + b`` itself (a student regressing a teacher's score)."""

    w: np.ndarray
    b: float
    link: str = "sigmoid"

    def __call__(self, x: np.ndarray) -> np.ndarray:
        z = x @ self.w + self.b
        return z if self.link == "identity" else 1.0 / (1.0 + np.exp(-z))


def fit_linear_head(x: np.ndarray, y: np.ndarray, l2: float = 1e-3) -> LinearHead:
    """Logistic regression by L-BFGS (scipy), deterministic: the same examples give the same head. ``l2`` is the
    weight penalty per example."""
    from scipy.optimize import minimize

    n, d = x.shape
    t = y.astype(np.float64)
    xs = x.astype(np.float64)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:d], theta[d]
        z = xs @ w + b
        p = 1.0 / (1.0 + np.exp(-z))
        # log(1 + e^z) - t z, stably
        value = float(np.sum(np.logaddexp(0.0, z) - t * z) / n + 0.5 * l2 * w @ w)
        g = (p - t) / n
        return value, np.concatenate([xs.T @ g + l2 * w, [g.sum()]])

    res = minimize(loss, np.zeros(d + 1), jac=True, method="L-BFGS-B", options={"maxiter": 500})
    return LinearHead(res.x[:d].astype(np.float32), float(res.x[d]))


class EmbeddingScorer:
    """A trained embedding scorer (a folder with :data:`SCORER_FILE`): ``scores(texts)`` as fastText's scorer."""

    def __init__(self, url: str, positive_label: str) -> None:
        folder = fs.local_path(url)
        meta_file = os.path.join(folder, SCORER_FILE)
        try:
            meta = json.loads(Path(meta_file).read_text(encoding="utf-8"))
            head = np.load(os.path.join(folder, meta.get("head", HEAD_FILE)))
            self.head = LinearHead(head["w"], float(head["b"]), meta.get("link", "sigmoid"))
        except (OSError, ValueError, KeyError) as e:
            raise DatapipeError(f"{url}: not a readable embedding scorer ({e})") from None
        if positive_label != meta.get("positive_label"):
            raise DatapipeError(
                f"{url}: the scorer's positive label is {meta.get('positive_label')!r}, not {positive_label!r}"
            )
        source = meta["embeddings"]
        if source != WORDLLAMA and not os.path.isabs(source):
            source = os.path.join(folder, source)
        self.embeddings = StaticEmbeddings(source)
        if self.embeddings.dim != len(self.head.w):
            raise DatapipeError(
                f"{url}: a head of {len(self.head.w)} inputs on vectors of {self.embeddings.dim}"
            )
        self.url = url

    def scores(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0)
        return self.head(self.embeddings.embed(texts)).astype(np.float64)


def save_scorer(folder: str, embeddings: str, head: LinearHead, positive_label: str) -> None:
    """Write a scorer folder: the head's weights and what it reads (the vectors' source and the label it scores)."""
    os.makedirs(folder, exist_ok=True)
    np.savez(os.path.join(folder, HEAD_FILE), w=head.w, b=np.float64(head.b))
    meta = {
        "kind": "embedding",
        "embeddings": embeddings,
        "head": HEAD_FILE,
        "positive_label": positive_label,
    }
    if head.link != "sigmoid":
        meta["link"] = head.link
    with open(os.path.join(folder, SCORER_FILE), "w", encoding="utf-8") as f:
        f.write(json.dumps(meta, indent=2, sort_keys=True) + "\n")


def is_scorer_folder(url: str) -> bool:
    return fs.exists(fs.join(url, SCORER_FILE))
