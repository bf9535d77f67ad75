"""Validate parsed documents against ``schemas/`` and turn every problem into a line of one :class:`ConfigError`.

jsonschema (with attrs and referencing) is imported where a document is validated: a build's worker processes
import this module with the config's classes and most never validate, and the import was 33 ms of the 0.8 s their
parent spends importing before any worker starts (the local engine's critical path; 2026-12-05). The one that
writes a cache's ledger validates it; the tokenize stage's warm-up loads the library for it beforehand
(:func:`load_validator`)."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

import schemas
from datapipe.errors import ConfigError

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from referencing import Registry

_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


def _registry() -> Registry:
    from referencing import Registry, Resource

    resources = [(s["$id"], Resource.from_contents(s)) for s in (schemas.load(n) for n in schemas.NAMES)]
    return Registry().with_resources(resources)


def _field_path(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _describe(value: object) -> str:
    kind = _JSON_TYPES.get(type(value), type(value).__name__)
    if value is None:
        return "null"
    text = repr(value)
    return f"{kind} {text[:60] + '...' if len(text) > 60 else text}"


def _message(err: ValidationError) -> tuple[str, str]:
    """Return (field path, human message) for one validation error."""
    path = _field_path(err.absolute_path)
    v, inst = err.validator, err.instance
    if v == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        extra = sorted(set(inst) - set(allowed)) if isinstance(inst, dict) else []
        key = extra[0] if extra else "?"
        hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
        return (f"{path}.{key}" if path else key), f"unknown key {key!r}{hint}"
    if v == "required":
        missing = [k for k in err.validator_value if isinstance(inst, dict) and k not in inst]
        key = missing[0] if missing else "?"
        return (f"{path}.{key}" if path else key), "required key is missing"
    if v == "type":
        want = (
            err.validator_value if isinstance(err.validator_value, str) else " or ".join(err.validator_value)
        )
        return path, f"expected {want}, got {_describe(inst)}"
    if v == "enum":
        return path, f"expected one of {', '.join(map(repr, err.validator_value))}, got {_describe(inst)}"
    if v == "exclusiveMinimum":
        return path, f"expected a number > {err.validator_value}, got {inst!r}"
    if v == "minimum":
        return path, f"expected a number >= {err.validator_value}, got {inst!r}"
    if v == "maximum":
        return path, f"expected a number <= {err.validator_value}, got {inst!r}"
    if v in ("minItems", "minProperties"):
        return (
            path,
            f"expected at least {err.validator_value} entr{'y' if err.validator_value == 1 else 'ies'}",
        )
    if v == "pattern":
        return path, f"{inst!r} does not match the pattern {err.validator_value!r}"
    if v == "minLength":
        return path, "expected a non-empty string"
    return path, err.message


def _position(instance: object, path) -> list[int]:
    """Where a field path is in the document: the index of each key in its mapping (YAML keeps the file's order),
    so problems are listed as they appear in the file; a key that is not there (a missing one) comes last."""
    out = []
    for part in path:
        if isinstance(instance, dict):
            keys = list(instance)
            out.append(keys.index(part) if part in instance else len(keys))
            instance = instance.get(part)
        elif isinstance(instance, list) and isinstance(part, int) and part < len(instance):
            out.append(part)
            instance = instance[part]
        else:
            out.append(1 << 30)
            instance = None
    return out


def _problems(err: ValidationError) -> list[tuple[str, str]]:
    """(field path, message) for each problem one validation error stands for (an object with three unknown keys
    is three problems). A value that fits none of a ``oneOf``/``anyOf`` (``model: a preset name or {...}``) is
    judged by the alternative of its own JSON type, so the line names the field inside it that is wrong."""
    if err.validator in ("oneOf", "anyOf") and err.context:
        own = [e for e in err.context if e.validator != "type" or len(e.relative_path) > 0]
        if own:
            return [p for e in own for p in _problems(e)]
    if "propertyNames" in err.schema_path:  # the instance is the offending key itself
        base = _field_path(err.absolute_path)
        key = str(err.instance)
        rule = f"must match {err.validator_value!r}" if err.validator == "pattern" else err.message
        return [(f"{base}.{key}" if base else key, f"invalid name {key!r}: {rule}")]
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        base = _field_path(err.absolute_path)
        allowed = sorted(err.schema.get("properties", {}))
        out = []
        for key in sorted(set(err.instance) - set(allowed), key=list(err.instance).index):
            near = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
            hint = (
                f"; did you mean {near[0]!r}?"
                if near
                else (f" (allowed: {', '.join(allowed)})" if allowed else "")
            )
            out.append((f"{base}.{key}" if base else str(key), f"unknown key {key!r}{hint}"))
        return out
    return [_message(err)]


def load_validator() -> None:
    """Import what :func:`validate` imports (jsonschema, referencing and attrs: ~0.05 s), for a process that has time
    now and validates later on a step the rest of a build waits for (the tokenize stage's finish checks the cache's
    ledger)."""
    import jsonschema  # noqa: F401
    import referencing  # noqa: F401


def validate(instance: object, schema_name: str, *, file: str) -> None:
    """Raise :class:`ConfigError` listing every problem of ``instance`` against a schema, in document order, one
    per line, each with its field."""
    import jsonschema

    schema = schemas.load(schema_name)
    validator_cls = jsonschema.validators.validator_for(schema)
    validator = validator_cls(schema, registry=_registry())
    errors = list(validator.iter_errors(instance))
    if not errors:
        return
    errors.sort(key=lambda e: (_position(instance, e.absolute_path), e.validator != "additionalProperties"))
    problems: list[tuple[str, str]] = []
    for err in errors:
        for problem in _problems(err):
            if problem not in problems:
                problems.append(problem)
    (path, message), *more = problems
    raise ConfigError(file, path, message, more)
