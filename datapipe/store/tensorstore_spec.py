"""TensorStore specs for the cache arrays, in the exact layout Levanter opens.

Levanter opens ``offsets`` and ``data`` with fixed zarr3 metadata, and TensorStore refuses an existing array that
conflicts: shape 2**54, outer (shard) chunk 134217728, a ``sharding_indexed`` codec with inner chunk 262144 and
blosc at clevel 5. See ../../shared/DESIGN.md ("The token cache").
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from datapipe.io import fs

if TYPE_CHECKING:  # loaded by open_array, when an array is opened (see datapipe.store.jagged)
    import tensorstore as ts

SHAPE = 2**54
OUTER_CHUNK = 134_217_728
INNER_CHUNK = 262_144


def kvstore(url: str) -> dict[str, object]:
    """A TensorStore kvstore spec for a local path or a gs:// / s3:// URL."""
    if fs.is_local(url):
        return {"driver": "file", "path": os.path.abspath(fs.local_path(url)) + "/"}
    u = urlparse(url)
    if u.scheme in ("gs", "gcs"):
        return {"driver": "gcs", "bucket": u.netloc, "path": u.path.lstrip("/") + "/"}
    if u.scheme == "s3":
        return {"driver": "s3", "bucket": u.netloc, "path": u.path.lstrip("/") + "/"}
    if u.scheme == "memory":
        return {"driver": "memory", "path": u.netloc + u.path + "/"}
    raise ValueError(f"{url}: TensorStore cannot open this URL scheme ({u.scheme!r})")


def array_spec(url: str, dtype: str) -> dict[str, object]:
    return {
        "driver": "zarr3",
        "kvstore": kvstore(url),
        "metadata": {
            "shape": [SHAPE],
            "data_type": dtype,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [OUTER_CHUNK]}},
            "codecs": [
                {
                    "name": "sharding_indexed",
                    "configuration": {
                        "chunk_shape": [INNER_CHUNK],
                        "codecs": [
                            {"name": "bytes", "configuration": {"endian": "little"}},
                            {
                                "name": "blosc",
                                "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle"},
                            },
                        ],
                        "index_codecs": [
                            {"name": "bytes", "configuration": {"endian": "little"}},
                            {"name": "crc32c"},
                        ],
                    },
                }
            ],
        },
    }


def open_array(
    url: str, dtype: str, *, create: bool, reuse: bool = False, context: ts.Context | None = None
) -> ts.TensorStore:
    """Open an existing array (``create=False``), create it afresh (``create=True``), or with ``reuse`` open it
    if it exists and create it if not: readers polling the array never find it missing."""
    import tensorstore as ts

    spec = array_spec(url, dtype)
    if create and reuse:
        return ts.open(spec, create=True, open=True, context=context).result()
    if create:
        return ts.open(spec, create=True, delete_existing=True, context=context).result()
    return ts.open({"driver": "zarr3", "kvstore": kvstore(url)}, open=True, context=context).result()
