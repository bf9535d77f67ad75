"""Training runs beside a build: ``OUT/runs/*`` and folders named with ``--run``. The report lists them and so does
the browser, which reads a build through this package (the report never imports the browser)."""

from __future__ import annotations

import os
from collections.abc import Sequence


def find_runs(output: str, extra: Sequence[str] = ()) -> list[str]:
    """Run folders (those with a ``metrics.jsonl``) under ``OUT/runs`` and among ``extra``, sorted, each once."""
    found = []
    runs = os.path.join(output, "runs")
    if os.path.isdir(runs):
        found += [os.path.join(runs, n) for n in sorted(os.listdir(runs))]
    found += list(extra)
    seen: set[str] = set()
    out = []
    for path in found:
        real = os.path.realpath(path)
        if real not in seen and os.path.isfile(os.path.join(path, "metrics.jsonl")):
            seen.add(real)
            out.append(path)
    return out
