"""Types of the walk's records (``records.pyx``; built by ``python -m datapipe.extract.build``)."""

class Record:
    FIELDS: tuple[str, ...]
    def _fields(self) -> tuple[object, ...]: ...

class Block(Record):
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

class Container(Record):
    kind: str
    tier: int
    start: int
    end: int
    chars: int
    tag: str
    attrs: dict[str, str | None] | None
    skipped: bool
    link_chars: int
    def __init__(
        self,
        kind: str,
        tier: int,
        start: int,
        end: int = -1,
        chars: int = 0,
        tag: str = "",
        attrs: dict[str, str | None] | None = None,
        skipped: bool = False,
        link_chars: int = 0,
    ) -> None: ...
    @property
    def name(self) -> str: ...
