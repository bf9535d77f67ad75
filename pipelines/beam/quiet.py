"""Import Apache Beam without its import-time noise.

``apache_beam`` logs a root-level warning about apitools/BigQuery at import when the GCP extras are absent; that
says nothing about a local run, so it is dropped here once, in one place.
"""

from __future__ import annotations

import logging

_root = logging.getLogger()
_level = _root.level
_root.setLevel(logging.ERROR)
try:
    import apache_beam as beam  # noqa: E402
    from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402
finally:
    _root.setLevel(_level)

__all__ = ["beam", "PipelineOptions"]
