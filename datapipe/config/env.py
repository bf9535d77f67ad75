"""``${VAR}`` / ``${VAR:-default}`` expansion in configuration strings.

Expansion happens before schema validation, so a value such as ``weight: ${WEB_WEIGHT:-700}`` is checked after it
has become a number-looking string; :func:`expand_tree` turns pure-number results back into numbers so that YAML's
typing still applies.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from datapipe.errors import ConfigError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_NUMBER = re.compile(r"^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def expand_string(value: str, *, file: str, field: str, env: Mapping[str, str] | None = None) -> str:
    """Replace each ``${VAR}`` or ``${VAR:-default}``; an unset variable without a default is a config error."""
    env = os.environ if env is None else env

    def repl(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        if name in env and env[name] != "":
            return env[name]
        if default is not None:
            return default
        raise ConfigError(file, field, f"environment variable ${{{name}}} is not set and has no default")

    return _VAR.sub(repl, value)


def expand_tree(node: Any, *, file: str, path: str = "", env: Mapping[str, str] | None = None) -> Any:
    """Expand variables in every string of a parsed YAML tree (keys are left alone)."""
    if isinstance(node, dict):
        return {
            k: expand_tree(v, file=file, path=f"{path}.{k}" if path else str(k), env=env)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [expand_tree(v, file=file, path=f"{path}[{i}]", env=env) for i, v in enumerate(node)]
    if isinstance(node, str) and "${" in node:
        out = expand_string(node, file=file, field=path, env=env)
        if _NUMBER.match(out):
            return float(out) if any(c in out for c in ".eE") else int(out)
        return out
    return node
