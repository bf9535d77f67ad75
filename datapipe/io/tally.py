"""What a reader saw in one shard, in its own terms; the stage that reads decides what each count means.

A reader knows only what it met: records (and their bytes), records it could not make a document of
(``unusable[kind]``: cut short, not JSON, no text field, ...), things in the file that are no record of a document at
all (``not_records[kind]``: WARC requests and metadata, a damaged region, an empty file) and notes on records it
did make a document of (``notes[kind]``: invalid UTF-8 replaced). The extract stage accounts for them
(``datapipe.extract.stage.account_read``): an unusable record is a removal with its kind as the reason, a
non-record a skip. So ``io`` imports no stage statistics and decides no removal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class ReadTally:
    records: int = 0  # every record met, documents and unusable ones
    bytes: int = 0
    unusable: Counter[str] = field(default_factory=Counter)
    not_records: Counter[str] = field(default_factory=Counter)
    notes: Counter[str] = field(default_factory=Counter)
    # the input file's read position (compressed bytes consumed), set by the reader that opened it: what the
    # progress display measures a first stage's share done by
    position: Callable[[], int] | None = field(default=None, compare=False, repr=False)

    def bytes_read(self) -> int:
        if self.position is None:
            raise ValueError("no input file open")
        return self.position()

    def unusable_record(self, kind: str, n: int = 1) -> None:
        self.unusable[kind] += n

    def not_a_record(self, kind: str, n: int = 1) -> None:
        self.not_records[kind] += n
