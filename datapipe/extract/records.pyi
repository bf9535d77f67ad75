"""Types of the walk's block record (``records.pyx``; built by ``python -m datapipe.extract.build``)."""

class Block:
    kind: str
    text: str
    link_chars: int
    chars: int
    mask: int
    path: tuple[int, ...]
    def __init__(
        self,
        kind: str,
        text: str,
        link_chars: int,
        chars: int,
        mask: int = 0,
        path: tuple[int, ...] = (-1, -1, -1, -1),
    ) -> None: ...
