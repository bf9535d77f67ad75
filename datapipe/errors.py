"""Errors a user can act on. Each names the file, and where it applies the record and field, in one line."""

from __future__ import annotations


class DatapipeError(Exception):
    """Base class: the CLI prints ``error: <message>`` and exits 2, without a traceback."""


def error_lines(e: DatapipeError) -> str:
    """What the CLIs print for an error: ``error: `` before each of its lines (a config error lists every
    problem it found, one per line)."""
    return "\n".join(f"error: {line}" for line in str(e).splitlines())


class ConfigError(DatapipeError):
    """A configuration file is wrong: names the file, the field path (``sources.web.weight``) and what was expected."""

    def __init__(
        self, file: str, field: str, message: str, more: list[tuple[str, str]] | None = None
    ) -> None:
        self.file, self.field, self.message = file, field, message
        self.problems = [(field, message), *(more or [])]  # every problem found, first one first
        lines = [f"{file}: {f}: {m}" if f else f"{file}: {m}" for f, m in self.problems]
        super().__init__("\n".join(lines))


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


class Interrupted(Exception):
    """Ctrl-C during a build: what was committed stays, a rerun goes on from there. (Not a :class:`DatapipeError`:
    the launcher exits 130 for it, the shell's status for SIGINT.)"""

    def __init__(self, committed: int, total: int) -> None:
        super().__init__(f"interrupted: {committed} of {total} shards committed; rerun to resume")
