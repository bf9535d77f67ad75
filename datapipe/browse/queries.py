"""What the browser asks of a build's index, as DuckDB queries over the per-stage Parquet files.

Every query names only the index files it needs (a source's, a stage's), so DuckDB never opens the rest; and a
list asks for one page with ``LIMIT``, in the files' own order (kept documents, then removed ones grouped by
reason; each in shard and input order) and without ``ORDER BY``, so that a page of a common view is read from the
first row groups and the scan stops there. Counts
are of the small columns only; a text search shows whether there are more rows, not how many (counting them
would read every text).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from datapipe.browse.index import StageIndex

PAGE = 50
SNIPPET = 240
LIST_COLUMNS = (
    "source, step, stage, shard, index, id, ref, url, outcome, reason, evidence, measure, value, threshold, related, "
    "language, language_score, quality, chars"
)


@dataclass(frozen=True)
class Filters:
    """A view of documents: every field narrows it; None (or '') means any."""

    source: str | None = None
    step: int | None = None
    outcome: str | None = None  # kept | removed
    reason: str | None = None
    language: str | None = None
    quality_min: float | None = None
    quality_max: float | None = None
    value_min: float | None = None
    value_max: float | None = None
    chars_min: int | None = None
    chars_max: int | None = None
    text: str | None = None  # case-insensitive substring of the text

    @classmethod
    def from_query(cls, params: Any) -> Filters:
        """From a URL's query parameters (strings); an empty or malformed number means no bound."""
        out: dict[str, Any] = {}
        for f in fields(cls):
            raw = (params.get(f.name) or "").strip()
            if not raw:
                continue
            if f.type in ("int | None",):
                try:
                    out[f.name] = int(raw)
                except ValueError:
                    continue
            elif f.type in ("float | None",):
                try:
                    out[f.name] = float(raw)
                except ValueError:
                    continue
            else:
                out[f.name] = raw
        return cls(**out)

    def as_query(self) -> dict[str, str]:
        return {
            f.name: str(getattr(self, f.name))
            for f in fields(self)
            if getattr(self, f.name) not in (None, "")
        }


def _literal(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def _files(stages: Sequence[StageIndex], source: str | None, step: int | None) -> list[str]:
    return [
        s.path for s in stages if (source is None or s.source == source) and (step is None or s.step == step)
    ]


def _from(files: list[str]) -> str:
    return f"read_parquet([{', '.join(_literal(p) for p in files)}])"


def _where(f: Filters) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    args: list[Any] = []
    for column, value in (("outcome", f.outcome), ("reason", f.reason), ("language", f.language)):
        if value:
            clauses.append(f"{column} = ?")
            args.append(value)
    for column, lo, hi in (
        ("quality", f.quality_min, f.quality_max),
        ("value", f.value_min, f.value_max),
        ("chars", f.chars_min, f.chars_max),
    ):
        if lo is not None:
            clauses.append(f"{column} >= ?")
            args.append(lo)
        if hi is not None:
            clauses.append(f"{column} <= ?")
            args.append(hi)
    if f.text:
        clauses.append("contains(lower(text), ?)")
        args.append(f.text.lower())
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), args


def _rows(cursor: Any) -> list[dict[str, Any]]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


class Queries:
    """The browser's questions, over one DuckDB connection (a cursor per call: handlers run on many threads)."""

    def __init__(self, stages: Sequence[StageIndex]) -> None:
        import duckdb

        self.stages = list(stages)
        self.con = duckdb.connect()

    def _cursor(self) -> Any:
        return self.con.cursor()

    def documents(self, f: Filters, page: int = 0, size: int = PAGE) -> tuple[list[dict[str, Any]], bool]:
        """One page of the view, and whether there is another."""
        files = _files(self.stages, f.source, f.step)
        if not files:
            return [], False
        where, args = _where(f)
        sql = (
            f"SELECT {LIST_COLUMNS}, left(text, {SNIPPET}) AS snippet FROM {_from(files)}{where} "
            f"LIMIT {int(size) + 1} OFFSET {int(page) * int(size)}"
        )
        rows = _rows(self._cursor().execute(sql, args))
        return rows[:size], len(rows) > size

    def count(self, f: Filters) -> int | None:
        """How many documents the view holds; None for a text search (that would read every text)."""
        if f.text:
            return None
        files = _files(self.stages, f.source, f.step)
        if not files:
            return 0
        where, args = _where(f)
        return int(self._cursor().execute(f"SELECT count(*) FROM {_from(files)}{where}", args).fetchone()[0])

    def languages(self) -> list[str]:
        files = _files(self.stages, None, None)
        if not files:
            return []
        sql = f"SELECT DISTINCT language FROM {_from(files)} WHERE language IS NOT NULL ORDER BY 1"
        return [r[0] for r in self._cursor().execute(sql).fetchall()]

    def document(self, source: str, ref: str) -> list[dict[str, Any]]:
        """The document at every stage it entered, first stage first (with its full text)."""
        files = _files(self.stages, source, None)
        if not files:
            return []
        sql = f"SELECT {LIST_COLUMNS}, text FROM {_from(files)} WHERE ref = ? ORDER BY step"
        return _rows(self._cursor().execute(sql, [ref]))

    def by_id(self, source: str, step: int, doc_id: str) -> dict[str, Any] | None:
        files = _files(self.stages, source, step)
        if not files:
            return None
        sql = f"SELECT {LIST_COLUMNS}, text FROM {_from(files)} WHERE id = ? ORDER BY outcome LIMIT 1"
        rows = _rows(self._cursor().execute(sql, [doc_id]))
        return rows[0] if rows else None

    def removed_for(self, source: str, step: int, kept_id: str) -> list[dict[str, Any]]:
        """The copies a stage removed in favour of ``kept_id`` (its duplicate cluster, less the kept copy)."""
        files = _files(self.stages, source, step)
        if not files:
            return []
        sql = f"SELECT {LIST_COLUMNS} FROM {_from(files)} WHERE related = ? AND outcome = 'removed'"
        return _rows(self._cursor().execute(sql, [kept_id]))


def changed_lines(before: str, after: str, limit: int = 200) -> list[tuple[str, str]]:
    """The lines that differ between two texts, as ('-' | '+', line): what a later stage (or a duplicate) changed."""
    out: list[tuple[str, str]] = []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0):
        if line.startswith(("---", "+++", "@@")):
            continue
        out.append((line[0], line[1:]))
        if len(out) >= limit:
            break
    return out
