"""The tokenizer identity a cache ledger and a mixture manifest record (name, vocab size, SHA-256, BOS/EOS).

It lives with the store, not with the tokenizer: a reader (the loader, the trainer, ``datapipe inspect``) checks a
cache against its manifest without importing HF tokenizers or the mixture config. ``datapipe.tokenize`` computes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast


@dataclass(frozen=True)
class TokenizerIdentity:
    name: str
    vocab_size: int
    sha256: str
    add_bos: bool
    add_eos: bool
    bos_id: int | None
    eos_id: int | None

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "vocab_size": self.vocab_size,
            "sha256": self.sha256,
            "add_bos": self.add_bos,
            "add_eos": self.add_eos,
            "bos_id": self.bos_id,
            "eos_id": self.eos_id,
        }

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> TokenizerIdentity:
        fields = ("name", "vocab_size", "sha256", "add_bos", "add_eos", "bos_id", "eos_id")
        return cls(**cast(dict[str, Any], {k: d.get(k) for k in fields}))
