"""Types of the compiled tree walk (``treewalk.pyx``; built by ``python -m datapipe.extract.build``)."""

from typing import Any

BUILT_FOR: str
TAGS: int

def text_chars(address: int) -> int: ...
def block_text(parts: list[str | None], kind: str) -> tuple[str | None, int]: ...
def utf8(text: str) -> bytes: ...
def head_parts(address: int) -> tuple[list[str], list[str]]: ...
def first_title(address: int) -> str | None: ...

class Vocabulary:
    roles: dict[str, int]
    def __init__(
        self,
        groups: dict[str, int],
        boilerplate: Any,
        teasers: Any,
        paid: Any,
        comments: Any,
        states: Any,
        roots: Any,
        root_pairs: Any,
        layouts: Any,
        roles: dict[str, int],
        teaser_tier: int,
        paid_tier: int,
        tag_masks: tuple[int, ...],
        hidden_mask: int,
    ) -> None: ...
    def classify(self, names: str, discussion: bool = False) -> tuple[bool, int, int]: ...

class Walk:
    blocks: list[Any]
    containers: list[Any]
    def __init__(self, rules: Any) -> None: ...
    def run(self, address: int) -> None: ...
