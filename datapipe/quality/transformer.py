"""A Hugging Face sequence-classification folder as a quality scorer: the ``transformers`` kind.

Why: FineWeb-Edu's classifier (a BERT encoder with one regression output, read at 512 tokens) and the classifiers
built like it are such folders; users bring them as they are. The scorer runs transformers' own model class on torch
(on the GPU when torch sees one, else the CPU), so a score is transformers' forward on the same text; what this
module adds is what a pipeline needs around it:

- **bounded memory**: texts are cut to ``max_length x CHARS_PER_TOKEN`` characters before tokenizing (a 100 MB
  document is never tokenized whole), then scored in batches of at most ``batch_tokens`` padded tokens, sorted by
  length so that little of a batch is padding;
- **one line for a bad folder, before any work**: missing, no ``config.json``, a model of another architecture (an
  encoder without a ``...ForSequenceClassification`` head), no weights or tokenizer, weights only as a pickle
  (``pytorch_model.bin``: safetensors only, as no code path here loads a pickle), or weights that lack the head
  (transformers itself only warns and starts the head at random, which would score every document by noise);
- **the score**: with one output (``num_labels: 1``, FineWeb-Edu's regression) the raw output; with several, the
  softmax probability of the positive label, named as the folder's ``id2label`` names it (``__label__`` prefix
  optional).

torch and transformers are optional (``pip install 'datapipe[transformers]'``; about 5.5 GB from PyPI): the folder checks
above that need only ``config.json`` and the file names run without them. Cost: see docs/quality.md (a transformer
is about three orders of magnitude slower per document than fastText on a CPU), which is why
:mod:`datapipe.quality.distill` exists.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from datapipe.errors import DatapipeError
from datapipe.io import fs

CONFIG_FILE = "config.json"
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")
PICKLED_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json")  # refused: loading them runs a pickle
TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "tokenizer.model",
    "spiece.model",
    "sentencepiece.bpe.model",
)
HEAD_SUFFIX = "ForSequenceClassification"
MAX_LENGTH = 512  # FineWeb-Edu's truncation; also capped by the tokenizer's own model_max_length
# characters kept per token of max_length before tokenizing: a word-piece vocabulary maps any word over 100
# characters to one unknown token, so a text's first max_length tokens lie within this cut unless most of them are
# such words
CHARS_PER_TOKEN = 100
BATCH_TOKENS = (
    16_384  # padded tokens per forward: bounds the activations (about 0.5 GB for a BERT-base on a CPU)
)
EXTRA = "pip install 'datapipe[transformers]' (torch and transformers)"


def is_model_folder(url: str) -> bool:
    return fs.exists(fs.join(url, CONFIG_FILE))


def read_config(url: str) -> dict[str, object]:
    """The folder's ``config.json`` after the checks that need no torch: one line naming what is wrong."""
    folder = fs.local_path(url)
    if not os.path.isdir(folder):
        raise DatapipeError(f"{url}: no such model folder")
    config_file = os.path.join(folder, CONFIG_FILE)
    if not os.path.exists(config_file):
        raise DatapipeError(f"{url}: not a Hugging Face model folder (no {CONFIG_FILE})")
    try:
        config = json.loads(Path(config_file).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DatapipeError(f"{config_file}: not readable JSON ({e})") from None
    if not isinstance(config, dict):
        raise DatapipeError(f"{config_file}: not a JSON object")
    architectures = config.get("architectures") or []
    if not any(str(a).endswith(HEAD_SUFFIX) for a in architectures):
        said = ", ".join(map(str, architectures)) or f"model_type {config.get('model_type', '?')!r}"
        raise DatapipeError(
            f"{url}: a model of another architecture ({said}), not a sequence classifier: its config.json "
            f"'architectures' names no ...{HEAD_SUFFIX}"
        )
    if not any(os.path.exists(os.path.join(folder, f)) for f in WEIGHT_FILES):
        if any(os.path.exists(os.path.join(folder, f)) for f in PICKLED_WEIGHTS):
            raise DatapipeError(
                f"{url}: its weights are a pickle (pytorch_model.bin), which a build never loads: save them as "
                "model.safetensors (transformers: model.save_pretrained(DIR, safe_serialization=True))"
            )
        raise DatapipeError(f"{url}: no weights (model.safetensors)")
    if not any(os.path.exists(os.path.join(folder, f)) for f in TOKENIZER_FILES):
        raise DatapipeError(f"{url}: no tokenizer ({', '.join(TOKENIZER_FILES)})")
    return config


def positive_column(url: str, config: dict[str, Any], positive_label: str) -> int | None:
    """None for one regression output; else the column of the positive label among the folder's ``id2label``."""
    id2label = config.get("id2label") or {}
    n = int(config.get("num_labels", len(id2label) or 2))
    if n == 1:
        return None
    names = {str(v): int(k) for k, v in id2label.items()}
    for name in (positive_label, positive_label.removeprefix("__label__")):
        if name in names:
            return names[name]
    raise DatapipeError(
        f"{url}: no label {positive_label!r} among its {n} outputs ({', '.join(sorted(names)) or 'unnamed'}); "
        "name one as the classifier's positive_label"
    )


class TransformersScorer:
    """``scores(texts)``: transformers' forward of the folder's sequence classifier, batched with bounded memory."""

    def __init__(
        self,
        url: str,
        positive_label: str,
        max_length: int = MAX_LENGTH,
        batch_tokens: int = BATCH_TOKENS,
        device: str | None = None,
    ) -> None:
        config = read_config(url)
        self.column = positive_column(url, config, positive_label)
        try:
            import torch
            import transformers
        except ImportError:
            raise DatapipeError(
                f"{url}: the transformers scorer needs torch and transformers: {EXTRA}"
            ) from None
        folder = fs.local_path(url)
        verbosity = transformers.logging.get_verbosity()
        bars = transformers.utils.logging.is_progress_bar_enabled()
        transformers.logging.set_verbosity_error()  # its missing-weights warning becomes our error below
        transformers.utils.logging.disable_progress_bar()  # one bar per load, in every worker
        try:
            model, info = transformers.AutoModelForSequenceClassification.from_pretrained(
                folder, output_loading_info=True, use_safetensors=True
            )
            tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
        except (OSError, ValueError, KeyError, RuntimeError) as e:
            raise DatapipeError(f"{url}: transformers could not load it ({_first_line(e)})") from None
        finally:
            transformers.logging.set_verbosity(verbosity)
            if bars:
                transformers.utils.logging.enable_progress_bar()
        missing = sorted(info.get("missing_keys") or []) + sorted(
            str(k[0]) if isinstance(k, tuple) else str(k) for k in info.get("mismatched_keys") or []
        )
        if missing:
            raise DatapipeError(
                f"{url}: its weights lack {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}: no trained "
                "classification head (transformers would start it at random)"
            )
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device).train(False)  # inference: no dropout
        self.tokenizer = tokenizer
        limit = getattr(tokenizer, "model_max_length", None) or max_length
        self.max_length = int(min(max_length, limit))
        self.batch_tokens = max(batch_tokens, self.max_length)
        self._torch = torch
        self.url = url

    def scores(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0)
        cut = self.max_length * CHARS_PER_TOKEN
        encoded = self.tokenizer(
            [t[:cut] for t in texts], truncation=True, max_length=self.max_length, padding=False
        )
        fields = list(encoded.keys())
        out = np.zeros(len(texts))
        torch = self._torch
        with torch.inference_mode():
            for batch in length_batches([len(ids) for ids in encoded["input_ids"]], self.batch_tokens):
                rows = self.tokenizer.pad(
                    {k: [encoded[k][i] for i in batch] for k in fields}, padding=True, return_tensors="pt"
                )
                logits = self.model(**{k: v.to(self.device) for k, v in rows.items()}).logits.float()
                if self.column is None:
                    values = logits[:, 0]
                else:
                    values = torch.softmax(logits, dim=-1)[:, self.column]
                out[batch] = values.cpu().numpy().astype(np.float64)
        return out


def length_batches(lengths: list[int], batch_tokens: int) -> list[list[int]]:
    """Indices in batches of at most ``batch_tokens`` padded tokens (a batch pads to its longest), shortest texts
    first; a text longer than the budget is a batch of its own."""
    out: list[list[int]] = []
    batch: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda i: (lengths[i], i)):
        if batch and (len(batch) + 1) * lengths[i] > batch_tokens:
            out.append(batch)
            batch = []
        batch.append(i)
    if batch:
        out.append(batch)
    return out


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__
