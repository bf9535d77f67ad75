"""tiktoken as the encoder of GPT-2's tokenizer: the same ids as Hugging Face ``tokenizers``, ~6.7x less CPU.

Measured on the e2e benchmark's 1,513 kept pages (15.3M characters, 3.95M tokens), one process: ``tokenizers``'
``encode_batch_fast`` took 4.3 CPU s (its batch threads change the wall time, not the CPU time), tiktoken's
``encode_to_numpy`` 0.53 s, and the ids were the same on every page. ``tokenizers`` builds a full ``Encoding`` per
text (token strings, type ids, masks) and converts ids through a Python list; tiktoken returns the ids only.

Only where the ids are known to be the same: both apply byte-level BPE to the pieces of the same regex, but
tiktoken merges the adjacent pair whose *concatenation* ranks lowest, where ``tokenizers`` merges the lowest
*listed pair*. For a merge table in general the two can differ; for GPT-2's they do not (tiktoken's GPT-2 is
OpenAI's reference encoder, and ``tests/test_tokenize.py`` compares every vocabulary entry and real text). So the
fast path is taken only for a tokenizer equal to GPT-2's in every part that decides ids (model, vocabulary, merges,
normaliser, pre-tokenizer, added tokens): ``builtin:gpt2`` or the same ``tokenizer.json`` given by path. Every other
tokenizer is encoded by ``tokenizers``, and so is any text that holds an added token's literal
(``<|endoftext|>``), which ``tokenizers`` turns into its id and tiktoken's ordinary encoding would not.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from datapipe.kernels.interned import Interned
from datapipe.kernels.tables import array_text, stored, text_array
from datapipe.tokenize.gpt2 import build_gpt2
from datapipe.tokenize.pieces import PieceEncoder, vocabulary_table

# GPT-2's pre-tokenizer regex (``tokenizers``' ByteLevel with use_regex, OpenAI's encoder.py)
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

Encoder = Callable[[str], np.ndarray]


def _byte_decoder() -> dict[str, int]:
    """The inverse of GPT-2's ``bytes_to_unicode``: the printable character each byte is written as -> the byte."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    chars = list(printable)
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars, strict=True)}


def _decisive(serialized: str) -> dict[str, Any]:
    """The parts of a serialized tokenizer that decide its ids (not its decoder, padding or truncation)."""
    d = json.loads(serialized)
    return {k: d.get(k) for k in ("model", "normalizer", "pre_tokenizer", "added_tokens")}


@cache
def _gpt2_parts() -> dict[str, object]:
    return _decisive(build_gpt2().to_str())


def gpt2_ranks(tok: Tokenizer, is_gpt2: bool = False) -> tuple[dict[bytes, int], tuple[str, ...]] | None:
    """``(its vocabulary as bytes -> id, the added tokens' literals)`` when ``tok`` is GPT-2's tokenizer, else
    None. ``is_gpt2``: ``tok`` is the bundled GPT-2 itself (``builtin:gpt2``), so it need not be compared with it."""
    if tok.get_vocab_size(with_added_tokens=True) != 50257:
        return None
    # the bundled GPT-2's vocabulary and added tokens straight from the tokenizer: serializing it and reading the
    # JSON back took 0.04 s of each worker's first tokenize shard, these calls 0.02 s
    if is_gpt2:
        added = tok.get_added_tokens_decoder()
        literals = tuple(added[i].content for i in sorted(added))
        vocab: dict[str, int] = tok.get_vocab(with_added_tokens=False)
    else:
        parts = _decisive(tok.to_str())
        if parts != _gpt2_parts():
            return None
        literals = tuple(t["content"] for t in parts["added_tokens"])
        vocab = parts["model"]["vocab"]
    decode = _byte_decoder()
    if not set("".join(vocab)) <= decode.keys():
        return None  # a character outside GPT-2's byte alphabet: not its vocabulary
    # each character to the byte it stands for, as one translate and a Latin-1 encode (a character below 256
    # encodes as that byte): 50,257 entries in 0.01 s where a generator per entry took 0.07 s, in each worker's
    # first tokenize shard
    to_bytes = str.maketrans({c: chr(b) for c, b in decode.items()})
    # the added tokens' own entries are left out: their literals go to ``tok`` (see the module's docstring)
    ranks = {
        token.translate(to_bytes).encode("latin-1"): i for token, i in vocab.items() if token not in literals
    }
    return ranks, literals


def gpt2_tiktoken(
    tok: Tokenizer, is_gpt2: bool = False
) -> tuple[object, dict[bytes, int], tuple[str, ...]] | None:
    """``(tiktoken encoding, its vocabulary as bytes -> id, the added tokens' literals)`` when ``tok`` is GPT-2's
    tokenizer (:func:`gpt2_ranks`), else None."""
    found = gpt2_ranks(tok, is_gpt2)
    if found is None:
        return None
    return _encoding(found[0]), *found


def _encoding(ranks: dict[bytes, int]) -> Any:
    import tiktoken

    return tiktoken.Encoding("datapipe-gpt2", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={})


def _stored_ranks(
    tok: Tokenizer | Callable[[], Tokenizer], is_gpt2: bool, sha256: str
) -> tuple[dict[bytes, int], tuple[str, ...], Interned] | None:
    """:func:`gpt2_ranks` and the vocabulary's interning table (:func:`~datapipe.tokenize.pieces.vocabulary_table`)
    for the tokenizer whose serialized form hashes to ``sha256``, kept on disk (:mod:`datapipe.kernels.tables`):
    a worker's first tokenize shard built them in 0.09 s, and reads them in ~0.01 s."""
    import tokenizers

    def build() -> dict[str, np.ndarray]:
        found = gpt2_ranks(_made(tok), is_gpt2)
        if found is None:
            return {"gpt2": np.zeros(1, dtype=np.uint8)}
        ranks, literals = found
        vocab = vocabulary_table(ranks).arrays()
        return {"gpt2": np.ones(1, dtype=np.uint8), "literals": text_array(list(literals)), **vocab}

    key = {"tokenizer": sha256, "bundled": is_gpt2, "tokenizers": tokenizers.__version__}
    got = stored("gpt2-vocabulary", key, build)
    if not got["gpt2"][0]:
        return None
    vocab = Interned.from_arrays(got)
    n = int(vocab.counts[0])
    arena, starts, ids = vocab.arena.tobytes(), vocab.starts[: n + 1].tolist(), vocab.ids[:n].tolist()
    ranks = {arena[starts[i] : starts[i + 1]]: ids[i] for i in range(n)}
    return ranks, tuple(array_text(got["literals"])), vocab


def _made(tok: Tokenizer | Callable[[], Tokenizer]) -> Tokenizer:
    return tok if isinstance(tok, Tokenizer) else tok()


def fast_encoder(
    tok: Tokenizer | Callable[[], Tokenizer], is_gpt2: bool = False, sha256: str | None = None
) -> tuple[Encoder, tuple[str, ...]] | None:
    """``(encode, literals)`` when ``tok`` is GPT-2's tokenizer: ``encode(text)`` gives the ids ``tok`` gives for a
    text without any of ``literals`` (its added tokens), as a uint32 array; None for any other tokenizer.
    ``sha256``: the hash of ``tok.to_str()`` (its identity's), under which its tables are kept on disk; ``tok``
    may then be what makes the tokenizer, called only when the tables are not there."""
    vocab: Interned | None = None
    if sha256 is not None:
        got = _stored_ranks(tok, is_gpt2, sha256)
        if got is None:
            return None
        ranks, literals, vocab = got
    else:
        found = gpt2_ranks(_made(tok), is_gpt2)
        if found is None:
            return None
        ranks, literals = found
    enc = _encoding(ranks)
    # tiktoken's split in compiled code, its byte-pair encoding asked once per piece (datapipe.tokenize.pieces);
    # tiktoken alone where its CoreBPE is not where this tiktoken keeps it
    core = getattr(enc, "_core_bpe", None)
    pieces = PieceEncoder(core, ranks, vocab=vocab) if hasattr(core, "encode_single_piece") else None

    def encode(text: str) -> np.ndarray:
        got = pieces.encode(text) if pieces is not None else None
        if got is not None:
            return got
        return enc.encode_to_numpy(text, disallowed_special=()).astype(np.uint32, copy=False)

    return encode, literals
