"""Arrow tables built from buffers (datapipe.io.arrow): the same Parquet bytes as ``from_pylist``, and no pandas."""

from __future__ import annotations

import io
import math
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datapipe.browse.index import schema as index_schema
from datapipe.io.arrow import table_from_rows
from datapipe.runtime.decisions import RemovedLog, removed_schema
from datapipe.runtime.evidence import Removal

REPO = Path(__file__).resolve().parents[1]
SCHEMA = pa.schema(
    [("s", pa.string()), ("i32", pa.int32()), ("i64", pa.int64()), ("f", pa.float64()), ("t", pa.string())]
)


def parquet(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()


def same_as_pylist(rows, schema) -> None:
    ours = table_from_rows(rows, schema)
    theirs = pa.Table.from_pylist(rows, schema=schema)
    assert ours.schema == theirs.schema and ours.num_rows == theirs.num_rows
    assert parquet(ours) == parquet(theirs)
    for name in schema.names:  # values and nulls, NaN included (equals() says NaN != NaN)
        a, b = ours.column(name).to_pylist(), theirs.column(name).to_pylist()
        assert [("nan" if isinstance(x, float) and math.isnan(x) else x) for x in a] == [
            ("nan" if isinstance(x, float) and math.isnan(x) else x) for x in b
        ]


rows_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "s": st.one_of(st.none(), st.text()),
            "i32": st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
            "i64": st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
            "f": st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
        },
        optional={"t": st.text(max_size=3)},  # a missing key is a null, as in from_pylist
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(rows=rows_strategy)
def test_the_same_table_and_bytes_as_from_pylist(rows):
    same_as_pylist(rows, SCHEMA)


def test_examples_at_the_edges():
    same_as_pylist([], SCHEMA)
    same_as_pylist([{}], SCHEMA)
    same_as_pylist(
        [{"s": "", "f": -0.0, "i32": -(2**31), "i64": 2**63 - 1}] * 9, SCHEMA
    )  # > 8: two bitmap bytes
    same_as_pylist([{"s": "ü€😀\x00", "t": None}] * 3, SCHEMA)


@pytest.mark.parametrize(
    "row",
    [
        {"s": 3},  # an int in a string column: from_pylist refuses it
        {"i32": 2**31},  # out of range: from_pylist refuses it
        {"i64": True},  # a bool in an int column
        {"f": 2},  # an int in a double column: from_pylist converts it
        {"s": "\ud800"},  # not encodable as UTF-8
    ],
)
def test_values_not_plainly_of_their_type_get_from_pylist_as_before(row):
    try:
        theirs = pa.Table.from_pylist([row], schema=SCHEMA)
    except (pa.ArrowException, UnicodeEncodeError, OverflowError) as e:
        with pytest.raises(type(e)):
            table_from_rows([row], SCHEMA)
    else:
        assert table_from_rows([row], SCHEMA).equals(theirs)


def our_rows() -> list[tuple[list[dict], pa.Schema]]:
    log = RemovedLog()
    log.add(0, {"id": "a", "text": "x", "metadata": {"url": "u"}}, Removal("filter/r", "words", 3, 50))
    log.add(1, {"id": "b", "text": "", "metadata": None}, "dedup/exact")
    row = {
        "source": "web",
        "step": 1,
        "stage": "filter",
        "shard": 0,
        "index": 2,
        "outcome": "kept",
        "text": "t",
    }
    return [
        (log.rows, removed_schema()),
        ([row, {**row, "quality": 0.5, "language_score": 0.99}], index_schema()),
    ]


def test_our_two_schemas_match_from_pylist():
    for rows, schema in our_rows():
        same_as_pylist(rows, schema)


FRESH = """
import sys
from tests.test_arrow_rows import our_rows
from datapipe.io.arrow import table_from_rows
from datapipe.runtime.decisions import RemovedLog
for rows, schema in our_rows():
    table_from_rows(rows, schema)
log = RemovedLog()
log.rows = our_rows()[0][0]
log.write(sys.argv[1])
print("pandas" in sys.modules)
"""


def test_writing_our_rows_imports_no_pandas(tmp_path):
    """Both files' rows go through the buffers: in a fresh process, pandas is not imported (``from_pylist``, the
    fallback, imports it)."""
    path = tmp_path / "part-00000.removed.parquet"
    out = subprocess.run(
        [sys.executable, "-c", FRESH, str(path)], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "False"
    assert pq.read_table(path).num_rows == 2
