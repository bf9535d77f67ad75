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


COPY_CHUNK = (
    1 << 26
)  # elements copied per write (256 MiB of uint32): bounded memory, large chunk-aligned writes


def concat_jagged(dest: str, parts: Sequence[str], dtype: str = "uint32") -> tuple[int, int]:
    """Concatenate jagged arrays, in the given order, into a new one at ``dest``.

    For each part: its data is copied in large writes (at most ``COPY_CHUNK`` elements in memory), then its
    offsets, shifted by the prefix sum of the parts before it, are written in one transaction, and only then is
    ``offsets[0]`` advanced. A reader of the cache while it is being consolidated sees a growing prefix of complete
    rows; the result does not depend on how the parts were produced. An existing array is reused rather than
    deleted, so a reader never finds the cache missing. Returns (rows, elements).
    """
    offsets_arr = open_array(fs.join(dest, "offsets"), "int64", create=True, reuse=True)
    data_arr = open_array(fs.join(dest, "data"), dtype, create=True, reuse=True)
    offsets_arr[0].write(np.int64(0)).result()  # a rerun after a kill starts over from no committed rows
    rows, elems = 0, 0
    for part in parts:
        r = JaggedReader(part)
        for start in range(0, r.num_elements, COPY_CHUNK):
            stop = min(start + COPY_CHUNK, r.num_elements)
            data_arr[elems + start : elems + stop].write(r.data[start:stop].read().result()).result()
        if r.num_rows:
            with ts.Transaction() as txn:
                offsets_arr.with_transaction(txn)[rows + 1 : rows + r.num_rows + 1].write(
                    r.ends() + elems
                ).result()
        rows += r.num_rows
        elems += r.num_elements
        offsets_arr[0].write(np.int64(rows)).result()  # commit: these rows are now visible
    return rows, elems


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
