"""Errors a user can act on. Each names the file, and where it applies the record and field, in one line."""

from __future__ import annotations


class DatapipeError(Exception):
    """Base class: the CLI prints ``error: <message>`` and exits 2, without a traceback."""


class ConfigError(DatapipeError):
    """A configuration file is wrong: names the file, the field path (``sources.web.weight``) and what was expected."""

    def __init__(self, file: str, field: str, message: str) -> None:
        self.file, self.field, self.message = file, field, message
        where = f"{file}: {field}" if field else file
        super().__init__(f"{where}: {message}")


class InputError(DatapipeError):
    """An input file cannot be read as configured (file-level problem the user must fix)."""

    def __init__(
        self, file: str, message: str, *, record: str | None = None, field: str | None = None
    ) -> None:
        self.file, self.record, self.field, self.message = file, record, field, message
        parts = [file]
        if record is not None:
            parts.append(f"record {record}")
        if field is not None:
            parts.append(f"field {field!r}")
        super().__init__(f"{': '.join(parts)}: {message}")
