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
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from datapipe.browse.index import StageIndex

PAGE = 50
OUTCOMES = ("kept", "removed")
SNIPPET = 240
LIST_COLUMNS = (
    "source, step, stage, shard, index, id, ref, url, outcome, reason, evidence, measure, value, threshold, related, "
    "language, language_score, page_type, quality, chars"
)


@dataclass(frozen=True)
class Filters:
    """A view of documents: every field narrows it; None (or '') means any."""

    source: str | None = None
    step: int | None = None
    outcome: str | None = None  # kept | removed
    reason: str | None = None
    language: str | None = None
    page_type: str | None = None
    quality_min: float | None = None
    quality_max: float | None = None
    value_min: float | None = None
    value_max: float | None = None
    chars_min: int | None = None
    chars_max: int | None = None
    text: str | None = None  # case-insensitive substring of the text

    @classmethod
    def parse(
        cls, params: Any, choices: Mapping[str, Sequence[str]] | None = None, also: Sequence[str] = ()
    ) -> tuple[Filters, list[str]]:
        """The filters of a URL's query parameters (strings; empty means any) and a line per parameter that could
        not be applied: a number that is none, a parameter that is no filter (``also``: other parameters of the
        page), or a value outside ``choices`` (field -> the values there are), each with the closest name meant."""
        names = [f.name for f in fields(cls)]
        out: dict[str, Any] = {}
        problems = []
        for key in params:
            if key not in names and key not in also:
                problems.append(f"unknown filter {key!r}{_did_you_mean(key, [*names, *also], ' (filters: ')}")
        for f in fields(cls):
            raw = (params.get(f.name) or "").strip()
            if not raw:
                continue
            if f.type in ("int | None",):
                try:
                    out[f.name] = int(raw)
                except ValueError:
                    problems.append(f"{f.name}: expected a whole number, got {raw!r}")
                    continue
                if out[f.name] < 0:
                    problems.append(f"{f.name}: expected 0 or more, got {raw!r}")
                    del out[f.name]
            elif f.type in ("float | None",):
                try:
                    value = float(raw)
                except ValueError:
                    value = math.nan
                if not math.isfinite(value):
                    problems.append(f"{f.name}: expected a number, got {raw!r}")
                    continue
                out[f.name] = value
            elif f.name == "outcome" and raw not in OUTCOMES:
                problems.append(f"outcome: {raw!r} is neither kept nor removed")
            elif choices is not None and f.name in choices and raw not in choices[f.name]:
                problems.append(f"no {f.name} {raw!r}{_did_you_mean(raw, choices[f.name], ' (there are: ')}")
            else:
                out[f.name] = raw
        return cls(**out), problems

    def as_query(self) -> dict[str, str]:
        return {
            f.name: str(getattr(self, f.name))
            for f in fields(self)
            if getattr(self, f.name) not in (None, "")
        }


def _did_you_mean(name: str, known: Sequence[str], listing: str) -> str:
    """`` (did you mean X?)`` for the closest of ``known``; else (up to 16 of) them, after ``listing``."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]}?)"
    shown = sorted(known)
    more = f", ... {len(shown) - 16} more" if len(shown) > 16 else ""
    return f"{listing}{', '.join(shown[:16])}{more})" if shown else ""


def positional(related: str) -> tuple[int, int] | None:
    """``(shard, position)`` of a kept copy that a removal names by its place in the stage's input (``shard S
    document D``: what a dedup stage wrote when it had not stored the ids), else None (it names an id)."""
    found = re.fullmatch(r"shard (-?\d+) document (\d+)", related)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _literal(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def _files(stages: Sequence[StageIndex], source: str | None, step: int | None) -> list[str]:
    return [
        s.path for s in stages if (source is None or s.source == source) and (step is None or s.step == step)
    ]


def _from(files: list[str]) -> str:
    return f"read_parquet([{', '.join(_literal(p) for p in files)}])"


def _where(f: Filters) -> tuple[str, list[object]]:
    clauses: list[str] = []
    args: list[object] = []
    for column, value in (
        ("outcome", f.outcome),
        ("reason", f.reason),
        ("language", f.language),
        ("page_type", f.page_type),
    ):
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

    def documents(self, f: Filters, page: int = 0, size: int = PAGE) -> tuple[list[dict[str, object]], bool]:
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
        return self._distinct("language")

    def page_types(self) -> list[str]:
        return self._distinct("page_type")

    def _distinct(self, column: str) -> list[str]:
        files = _files(self.stages, None, None)
        if not files:
            return []
        sql = f"SELECT DISTINCT {column} FROM {_from(files)} WHERE {column} IS NOT NULL ORDER BY 1"
        return [r[0] for r in self._cursor().execute(sql).fetchall()]

    def document(self, source: str, ref: str) -> list[dict[str, object]]:
        """The document at every stage it entered, first stage first (with its full text)."""
        files = _files(self.stages, source, None)
        if not files:
            return []
        sql = f"SELECT {LIST_COLUMNS}, text FROM {_from(files)} WHERE ref = ? ORDER BY step"
        return _rows(self._cursor().execute(sql, [ref]))

    def kept_copy(self, source: str, step: int, related: str, exclude_ref: str) -> list[dict[str, Any]]:
        """The documents a stage kept that a removal's ``related`` names as its kept copy (with their text), never
        the removed document itself (``exclude_ref``): by place (``shard S document D``), else by id (a copy may
        keep the id of its original: then each kept document of that id, first in input order), else by ref."""
        files = _files(self.stages, source, step)
        if not files:
            return []
        place = positional(related)
        args: list[object]
        if place is not None:
            where, args = "shard = ? AND index = ?", [place[0], place[1]]
        else:
            where, args = "(id = ? OR ref = ?)", [related, related]
        sql = (
            f"SELECT {LIST_COLUMNS}, text FROM {_from(files)} WHERE {where} AND outcome = 'kept' AND ref <> ? "
            "ORDER BY id <> ?, shard, index"
        )
        return _rows(self._cursor().execute(sql, [*args, exclude_ref, related]))

    def removed_for(self, source: str, step: int, names: Sequence[str]) -> list[dict[str, object]]:
        """The copies a stage removed in favour of one kept copy (its duplicate cluster, less the kept copy): those
        whose ``related`` is one of ``names`` (the kept copy's id, its ref, its place), in input order."""
        files = _files(self.stages, source, step)
        if not files or not names:
            return []
        marks = ", ".join("?" for _ in names)
        sql = (
            f"SELECT {LIST_COLUMNS} FROM {_from(files)} WHERE related IN ({marks}) AND outcome = 'removed' "
            "ORDER BY shard, index"
        )
        return _rows(self._cursor().execute(sql, list(names)))


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
