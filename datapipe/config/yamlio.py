"""YAML as our configs read it: ``safe_load`` (no Python objects), with YAML 1.2 floats.

PyYAML follows YAML 1.1, where ``1e-4`` (no dot) is a *string*; a learning rate written that way would fail
validation with a confusing type error. This loader also resolves such exponent forms as floats.
"""

from __future__ import annotations

import re

import yaml


class _Loader(yaml.SafeLoader):
    pass


_FLOAT = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


def load_yaml(text: str) -> object:
    """Parse YAML text safely (plain data only)."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
