"""The mixture YAML reference (``docs/mixture-reference.md``), generated from ``schemas/mixture.schema.json`` so the
two cannot drift (a test compares them). Regenerate: ``python -m datapipe.config.schema_doc > docs/mixture-reference.md``.
"""

from __future__ import annotations

import json
from typing import Any

import schemas

HEADER = """# Mixture YAML reference

Generated from `schemas/mixture.schema.json` by `python -m datapipe.config.schema_doc`; do not edit by hand
(`tests/test_docs.py` fails when this file and the schema differ). `${VAR}` and `${VAR:-default}` are expanded in
every string before validation. Keys are listed as dotted paths; `*` stands for any source name.
"""


def _type(node: dict[str, Any]) -> str:
    if "enum" in node:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "oneOf" in node or "anyOf" in node:
        return " or ".join(_type(n) for n in node.get("oneOf", node.get("anyOf", [])))
    kind = node.get("type", "object" if "properties" in node else "any")
    kind = " or ".join(kind) if isinstance(kind, list) else kind
    if kind == "array" and isinstance(node.get("items"), dict):
        kind = f"array of {_type(node['items'])}"
    return kind


def _limits(node: dict[str, object]) -> str:
    parts = []
    for key, text in (
        ("minimum", ">= {}"),
        ("exclusiveMinimum", "> {}"),
        ("maximum", "<= {}"),
        ("minItems", "at least {} item(s)"),
        ("pattern", "matches `{}`"),
        ("default", "default `{}`"),
    ):
        if key in node:
            value = json.dumps(node[key]) if key == "default" else node[key]
            parts.append(text.format(value))
    return "; ".join(parts)


def _rows(node: dict[str, Any], path: str, required: set[str], defs: dict[str, Any], out: list[str]) -> None:
    if "$ref" in node:
        node = defs[node["$ref"].split("/")[-1]]
    desc = node.get("description", "").replace("|", "\\|").replace("\n", " ")
    if path:
        req = "yes" if path.split(".")[-1] in required else ""
        out.append(f"| `{path}` | {_type(node)} | {req} | {_limits(node)} | {desc} |")
    props = node.get("properties", {})
    for name, child in props.items():
        _rows(child, f"{path}.{name}" if path else name, set(node.get("required", [])), defs, out)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and (extra.get("properties") or "$ref" in extra):
        _rows(extra, f"{path}.*", set(), defs, out)
    items = node.get("items")
    if isinstance(items, dict) and (items.get("properties") or "$ref" in items):
        _rows(items, f"{path}[]", set(), defs, out)


def render_reference() -> str:
    schema = schemas.load("mixture")
    out = [HEADER, "| key | type | required | constraints | meaning |", "| --- | --- | --- | --- | --- |"]
    _rows(schema, "", set(schema.get("required", [])), schema.get("$defs", {}), out)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(render_reference(), end="")
