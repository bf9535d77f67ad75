"""JSON Schemas for datapipe's file formats (mixture YAML, document record, cache ledger, mixture manifest, stage record).

They ship as package data so that every config can be validated before any work starts.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

NAMES = ("mixture", "document", "ledger", "manifest", "classifier", "train", "stage")


@cache
def load(name: str) -> dict[str, Any]:
    """Return the parsed schema ``schemas/<name>.schema.json``."""
    if name not in NAMES:
        raise KeyError(f"unknown schema {name!r}; known: {', '.join(NAMES)}")
    return json.loads(resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8"))
