"""Import Apache Beam without its import-time noise, and without pandas.

``apache_beam`` logs a root-level warning about apitools/BigQuery at import when the GCP extras are absent; that
says nothing about a local run, so it is dropped here once, in one place. :func:`warnings_dropped` does the same
around a call that would log them again (checking a runner's options).

Beam imports pandas only if it can (``apache_beam.typehints`` and ``textio`` try it), for its pandas batch types
and its CSV and JSON transforms, none of which a build uses; with pandas hidden while Beam imports, Beam took 0.31
s to import instead of 0.44 (gc off, 2026-12-05), in each of the two processes the first shard waits for: the
launcher, which builds the graph, and the warm parent the workers are forked from. Nothing else in a build
imports pandas. It is hidden only when nothing has imported it yet, and only meanwhile: ``import pandas`` works
as usual afterwards (Beam's pandas-only features stay off in that process).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator

_root = logging.getLogger()
_level = _root.level
_root.setLevel(logging.ERROR)
_hide_pandas = "pandas" not in sys.modules and "apache_beam" not in sys.modules
if _hide_pandas:
    sys.modules["pandas"] = None  # type: ignore[assignment]  # `import pandas` raises ImportError meanwhile
try:
    import apache_beam as beam  # noqa: E402
    from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402
finally:
    _root.setLevel(_level)
    if _hide_pandas and sys.modules.get("pandas", False) is None:
        del sys.modules["pandas"]


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
