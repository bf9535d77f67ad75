"""Types of the compiled tree walk (``treewalk.pyx``; built by ``python -m datapipe.extract.build``)."""

from typing import Any

BUILT_FOR: str
TAGS: int

def text_chars(address: int) -> int: ...
def block_text(parts: list[str | None], kind: str) -> tuple[str | None, int]: ...

class Walk:
    blocks: list[Any]
    containers: list[Any]
    def __init__(self, rules: Any) -> None: ...
    def run(self, address: int) -> None: ...
