"""A jagged array (rows of varying length) stored as two TensorStore arrays, Levanter's layout.

``<path>/offsets`` (int64): ``offsets[0]`` = number of committed rows, ``offsets[i+1]`` = end of row ``i`` in data.
``<path>/data``: the rows' elements, concatenated.

Commit protocol: data and ``offsets[1..n]`` are written first and awaited, ``offsets[0]`` last. A reader that
trusts ``offsets[0]`` never sees a half-written row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorstore as ts

from datapipe.io import fs
from datapipe.store.tensorstore_spec import open_array


def write_jagged(path: str, rows: Sequence[np.ndarray], dtype: str = "uint32") -> tuple[int, int]:
    """Create a jagged array holding ``rows`` in one large write each for data and offsets.

    Returns (rows, elements).
    """
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    ends = np.cumsum(lengths, dtype=np.int64)
    total = int(ends[-1]) if len(rows) else 0
    data = np.concatenate([np.asarray(r, dtype=dtype) for r in rows]) if total else np.zeros(0, dtype=dtype)
    offsets_arr = open_array(fs.join(path, "offsets"), "int64", create=True)
    data_arr = open_array(fs.join(path, "data"), dtype, create=True)
    futures = []
    if total:
        futures.append(data_arr[0:total].write(data))
    if len(rows):
        futures.append(offsets_arr[1 : len(rows) + 1].write(ends))
    for f in futures:
        f.result()
    offsets_arr[0].write(np.int64(len(rows))).result()
    return len(rows), total


def concat_jagged(dest: str, parts: Sequence[str], dtype: str = "uint32") -> tuple[int, int]:
    """Concatenate jagged arrays, in the given order, into a new one at ``dest``.

    Offsets are shifted by prefix sums and written in one transaction; data is copied part by part in large
    writes. ``offsets[0]`` is written last. Returns (rows, elements).
    """
    readers = [JaggedReader(p) for p in parts]
    counts = [(r.num_rows, r.num_elements) for r in readers]
    total_rows = sum(c[0] for c in counts)
    offsets_arr = open_array(fs.join(dest, "offsets"), "int64", create=True)
    data_arr = open_array(fs.join(dest, "data"), dtype, create=True)
    row0, elem0 = 0, 0
    all_ends = []
    pending = []
    for r, (nrows, nelem) in zip(readers, counts, strict=True):
        if nelem:
            pending.append(data_arr[elem0 : elem0 + nelem].write(r.data[0:nelem].read().result()))
        all_ends.append(r.ends() + elem0)
        row0 += nrows
        elem0 += nelem
    for f in pending:
        f.result()
    if total_rows:
        with ts.Transaction() as txn:
            offsets_arr.with_transaction(txn)[1 : total_rows + 1].write(np.concatenate(all_ends)).result()
    offsets_arr[0].write(np.int64(total_rows)).result()
    return total_rows, elem0


class JaggedReader:
    """Read-only view of a jagged array; sees only committed rows (``offsets[0]``)."""

    def __init__(self, path: str, context: ts.Context | None = None) -> None:
        self.path = path
        self.offsets = open_array(fs.join(path, "offsets"), "int64", create=False, context=context)
        self.data = open_array(fs.join(path, "data"), "", create=False, context=context)
        self.num_rows = int(self.offsets[0].read().result())
        self.num_elements = int(self.offsets[self.num_rows].read().result()) if self.num_rows else 0

    def __len__(self) -> int:
        return self.num_rows

    def ends(self) -> np.ndarray:
        """End offset of every row (``offsets[1..n]``)."""
        if not self.num_rows:
            return np.zeros(0, dtype=np.int64)
        return np.asarray(self.offsets[1 : self.num_rows + 1].read().result(), dtype=np.int64)

    def row(self, i: int) -> np.ndarray:
        if not 0 <= i < self.num_rows:
            raise IndexError(f"{self.path}: row {i} out of range (rows: {self.num_rows})")
        bounds = self.offsets[i : i + 2].read().result()
        start = 0 if i == 0 else int(bounds[0])
        return self.data[start : int(bounds[1])].read().result()

    def rows(self, start: int = 0, stop: int | None = None) -> list[np.ndarray]:
        """Rows ``start..stop`` with one read of offsets and one of data."""
        stop = self.num_rows if stop is None else min(stop, self.num_rows)
        if start >= stop:
            return []
        all_ends = self.ends()
        ends = all_ends[start:stop]
        first = 0 if start == 0 else int(all_ends[start - 1])
        flat = self.data[first : int(ends[-1])].read().result()
        bounds = np.concatenate([[first], ends]) - first
        return [flat[bounds[k] : bounds[k + 1]] for k in range(stop - start)]
