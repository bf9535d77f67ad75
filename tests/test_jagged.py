"""The jagged TensorStore arrays: Levanter's layout, commit order, concatenation."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from datapipe.store.jagged import JaggedReader, concat_jagged, write_jagged
from datapipe.store.tensorstore_spec import INNER_CHUNK, OUTER_CHUNK, SHAPE, open_array


def test_roundtrip(tmp_path):
    rows = [np.arange(n, dtype=np.uint32) + n for n in (3, 0, 1, 700_000)]
    assert write_jagged(str(tmp_path / "a"), rows) == (4, 700_004)
    r = JaggedReader(str(tmp_path / "a"))
    assert len(r) == 4 and r.num_elements == 700_004
    for i, row in enumerate(rows):
        np.testing.assert_array_equal(r.row(i), row)
    got = r.rows(1, 4)
    assert [len(x) for x in got] == [0, 1, 700_000]
    np.testing.assert_array_equal(got[2], rows[3])


def test_layout_matches_levanter(tmp_path):
    write_jagged(str(tmp_path / "a"), [np.array([1, 2, 3], dtype=np.uint32)])
    for name, dtype in (("offsets", "int64"), ("data", "uint32")):
        meta = json.loads((tmp_path / "a" / name / "zarr.json").read_text())
        assert meta["zarr_format"] == 3 and meta["shape"] == [SHAPE] and meta["data_type"] == dtype
        assert meta["chunk_grid"]["configuration"]["chunk_shape"] == [OUTER_CHUNK]
        (codec,) = meta["codecs"]
        assert codec["name"] == "sharding_indexed"
        assert codec["configuration"]["chunk_shape"] == [INNER_CHUNK]
        blosc = [c for c in codec["configuration"]["codecs"] if c["name"] == "blosc"]
        assert blosc and blosc[0]["configuration"]["clevel"] == 5


def test_uncommitted_rows_are_invisible(tmp_path):
    """Rows written past offsets[0] (a writer killed before its commit) are not seen by readers."""
    path = str(tmp_path / "a")
    write_jagged(path, [np.array([1, 2], dtype=np.uint32)])
    data = open_array(f"{path}/data", "uint32", create=False)
    offsets = open_array(f"{path}/offsets", "int64", create=False)
    data[2:5].write(np.array([7, 8, 9], dtype=np.uint32)).result()
    offsets[2:3].write(np.array([5], dtype=np.int64)).result()
    r = JaggedReader(path)
    assert len(r) == 1 and r.num_elements == 2
    offsets[0].write(np.int64(2)).result()
    np.testing.assert_array_equal(JaggedReader(path).row(1), [7, 8, 9])


@settings(max_examples=15, deadline=None)
@given(st.lists(st.lists(st.lists(st.integers(0, 50_000), max_size=20), max_size=6), min_size=1, max_size=4))
def test_concat_is_concatenation(tmp_path_factory, parts):
    base = tmp_path_factory.mktemp("cat")
    paths = []
    for k, rows in enumerate(parts):
        p = str(base / f"p{k}")
        write_jagged(p, [np.array(r, dtype=np.uint32) for r in rows])
        paths.append(p)
    flat = [r for rows in parts for r in rows]
    assert concat_jagged(str(base / "all"), paths) == (len(flat), sum(map(len, flat)))
    r = JaggedReader(str(base / "all"))
    assert [x.tolist() for x in r.rows()] == flat
