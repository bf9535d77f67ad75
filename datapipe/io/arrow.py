"""Arrow tables from rows of Python values, built without importing pandas.

``pyarrow.array`` (and ``Table.from_pylist``, which calls it per column) first asks whether its input is a pandas
object, and asking imports pandas: 0.14 s of CPU on this machine, which every build worker paid on the first
removal list it wrote (the e2e build's first extract shard, in both workers at once; Beam's workers are forked
without pandas, :mod:`pipelines.beam.quiet`). The column types our Parquet files use (strings, 32- and 64-bit
integers, doubles, each nullable) are built here from their buffers with ``pyarrow.Array.from_buffers``, which
asks nothing; a table with a column of any other type, or a value that is not plainly of its column's type (an
int in a string column, a bool, an int out of range, a string that is not valid UTF-8), goes to ``from_pylist``
as before, which converts or refuses it as it always did. Where the fast path is taken the table is the one
``from_pylist`` makes, so the Parquet bytes are too (``tests/test_arrow_rows.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

_INT_RANGE = {32: (-(2**31), 2**31 - 1), 64: (-(2**63), 2**63 - 1)}
_STRING_BYTES_MAX = 2**31 - 1  # pa.string()'s offsets are int32


class _Slow(Exception):
    """A column the buffers below do not build exactly as ``from_pylist`` would."""


def _validity(values: Sequence[object]) -> tuple[object, int]:
    import pyarrow as pa

    valid = np.fromiter((v is not None for v in values), dtype=np.bool_, count=len(values))
    nulls = len(values) - int(valid.sum())
    if nulls == 0:
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little")), nulls


def _strings(values: Sequence[object]) -> object:
    import pyarrow as pa

    encoded = []
    for v in values:
        if v is None:
            encoded.append(b"")
        elif type(v) is str:
            try:
                encoded.append(v.encode("utf-8"))
            except UnicodeEncodeError:  # a lone surrogate: from_pylist's error, not ours
                raise _Slow from None
        else:
            raise _Slow
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    if offsets[-1] > _STRING_BYTES_MAX:
        raise _Slow
    validity, nulls = _validity(values)
    buffers = [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(pa.string(), len(values), buffers, null_count=nulls)


def _numbers(values: Sequence[object], arrow_type: object, bits: int | None) -> object:
    import pyarrow as pa

    if bits is None:  # a double column takes floats only (from_pylist would also convert ints)
        if any(v is not None and type(v) is not float for v in values):
            raise _Slow
        data = np.array([0.0 if v is None else v for v in values], dtype=np.float64)
    else:
        low, high = _INT_RANGE[bits]
        if any(v is not None and (type(v) is not int or not low <= v <= high) for v in values):
            raise _Slow
        data = np.array([0 if v is None else v for v in values], dtype=np.int32 if bits == 32 else np.int64)
    validity, nulls = _validity(values)
    return pa.Array.from_buffers(arrow_type, len(values), [validity, pa.py_buffer(data)], null_count=nulls)


def table_from_rows(rows: Sequence[dict[str, Any]], schema: Any) -> Any:
    """``pyarrow.Table.from_pylist(rows, schema=schema)``, column by column from buffers where it can be."""
    import pyarrow as pa

    builders: dict[object, Callable[[list[object]], object]] = {
        pa.string(): _strings,
        pa.int32(): partial(_numbers, arrow_type=pa.int32(), bits=32),
        pa.int64(): partial(_numbers, arrow_type=pa.int64(), bits=64),
        pa.float64(): partial(_numbers, arrow_type=pa.float64(), bits=None),
    }
    try:
        columns = []
        for field in schema:
            build = builders.get(field.type)
            if build is None or not field.nullable:
                raise _Slow
            columns.append(build([row.get(field.name) for row in rows]))
    except _Slow:
        return pa.Table.from_pylist(list(rows), schema=schema)
    return pa.Table.from_arrays(columns, schema=schema)
