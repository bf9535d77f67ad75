"""The engine registry: which engines can run a build, the flags each adds to the launcher, and how each is made.

The engines live outside ``datapipe``: Beam's and datatrove's are packages of ``pipelines``, which ``datapipe`` never
imports (engines move data; the decisions are here). So an engine registers itself, as a Python entry point of the
group ``datapipe.engines`` that names an :class:`EngineEntry` (``pyproject.toml``: ``beam`` and ``datatrove``), and
the launcher (:mod:`datapipe.orchestrate.launch`) finds it by name. A third engine is one more entry point in its own
package, not an edit here or in the launcher. Bundled mixtures are found the same way (group ``datapipe.mixtures``:
a folder of YAML files).

An entry is light to import (its engine's module, which imports Beam or datatrove, loads only in ``make``), since
the launcher loads every entry to write ``--help``.
"""

from __future__ import annotations

import argparse
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from datapipe.errors import DatapipeError

if TYPE_CHECKING:  # the launcher parses its flags and starts the engine before it imports the build's modules
    from datapipe.orchestrate.run import Engine

ENGINES_GROUP = "datapipe.engines"
MIXTURES_GROUP = "datapipe.mixtures"
DEFAULT_ENGINE = "beam"


class EngineEntry(Protocol):
    """One registered engine."""

    name: str  # the value of --engine
    summary: str  # one line for --engine's help

    def add_flags(self, group: argparse._ArgumentGroup) -> None:
        """Add this engine's own flags to the launcher (their values reach :meth:`make`)."""
        ...

    def make(self, args: argparse.Namespace, extra: list[str], known: list[str]) -> Engine:
        """The engine for these flags; ``extra`` are the flags the launcher does not know (``known`` lists those
        it does, for did-you-mean hints): an engine that takes none must refuse them with one line."""
        ...


def registered() -> dict[str, EngineEntry]:
    """Every installed engine by name, the default first."""
    found = {ep.name: ep for ep in entry_points(group=ENGINES_GROUP)}
    if not found:
        raise DatapipeError(
            f"no build engine is registered (entry points {ENGINES_GROUP!r}): install the project "
            "(pip install -e .), which registers beam and datatrove"
        )
    names = sorted(found, key=lambda n: (n != DEFAULT_ENGINE, n))
    out: dict[str, EngineEntry] = {}
    for name in names:
        entry = found[name].load()
        if getattr(entry, "name", None) != name:
            raise DatapipeError(
                f"engine entry point {name!r} ({found[name].value}) names itself {entry.name!r}"
            )
        out[name] = entry
    return out


def bundled_mixture_folders() -> tuple[Path, ...]:
    """Folders of bundled mixture YAMLs that installed packages register (``--mixture dclm_phase3.yaml``)."""
    return tuple(Path(ep.load()) for ep in sorted(entry_points(group=MIXTURES_GROUP), key=lambda e: e.name))
