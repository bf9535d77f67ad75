"""Import Apache Beam without its import-time noise.

``apache_beam`` logs a root-level warning about apitools/BigQuery at import when the GCP extras are absent; that
says nothing about a local run, so it is dropped here once, in one place. :func:`warnings_dropped` does the same
around a call that would log them again (checking a runner's options).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

_root = logging.getLogger()
_level = _root.level
_root.setLevel(logging.ERROR)
try:
    import apache_beam as beam  # noqa: E402
    from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402
finally:
    _root.setLevel(_level)


@contextlib.contextmanager
def warnings_dropped() -> Iterator[None]:
    """Beam's warnings (root and ``apache_beam`` loggers) dropped meanwhile: what a check finds is said as its
    own error, not beside Beam's guesses (``Unable to create default GCS bucket``)."""
    loggers = [logging.getLogger(), logging.getLogger("apache_beam")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


__all__ = ["beam", "PipelineOptions", "warnings_dropped"]
