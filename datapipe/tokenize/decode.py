"""The decoder of the tokenizer a token cache was built with, wherever it can be found: what ``datapipe inspect``
and ``datapipe browse`` use to show cache rows as text."""

from __future__ import annotations

from collections.abc import Callable

from datapipe.config.stages import TokenizerConfig
from datapipe.io import fs
from datapipe.store.cache import TokenCache
from datapipe.store.manifest import TOKENIZER_FILE
from datapipe.tokenize.tokenizer import load_tokenizer


def decoder_for(cache: TokenCache, output: str | None = None) -> Callable[[list[int]], str] | None:
    """The decoder of the tokenizer the cache was built with: the copy the build wrote beside its manifest
    (``output``, or the build output two folders above the cache), else the tokenizer the ledger names; None when
    neither is there or has the ledger's hash."""
    tok = cache.tokenizer
    root = output or fs.parent(fs.parent(cache.path))
    copy = fs.join(root, TOKENIZER_FILE)
    for path in ([copy] if fs.exists(copy) else []) + [tok.name]:
        try:
            loaded = load_tokenizer(TokenizerConfig(path=path, add_bos=tok.add_bos, add_eos=tok.add_eos))
        except Exception:  # e.g. a tokenizer named by a path that is gone: try the next, or show ids
            continue
        if loaded.identity.sha256 == tok.sha256:
            return loaded.decode
    return None
