"""Why a rule removed a document, with what it measured: ``gopher_short_doc: words=37 < 50``.

A rule returns a :class:`Removal`, which *is* its reason string (so counters, reports and the comparisons with
datatrove's reason names see exactly the string they saw before) and also carries the measured value and the
threshold it failed. The stage that applied the rule writes both beside its parts (``part-NNNNN.removed.parquet``,
:mod:`datapipe.runtime.decisions`), so that "why did this page go?" is answered by a value, not by rerunning the rule.
"""

from __future__ import annotations


class Removal(str):
    """A removal reason (``gopher_short_doc``) with its evidence: ``measure`` (``words``), its ``value`` (37), the
    comparison that failed (``op``: ``<``, ``>``, ``=``, ``has``) and the ``threshold`` (50)."""

    measure: str | None
    value: float | str | None
    op: str | None
    threshold: float | str | None
    note: str | None
    related: str | None  # the document the decision refers to: a duplicate's kept copy (its id)

    def __new__(
        cls,
        reason: str,
        measure: str | None = None,
        value: float | str | None = None,
        op: str | None = None,
        threshold: float | str | None = None,
        note: str | None = None,
        related: str | None = None,
    ) -> Removal:
        self = super().__new__(cls, reason)
        self.measure, self.value, self.op, self.threshold, self.note = measure, value, op, threshold, note
        self.related = related
        return self

    @property
    def evidence(self) -> str:
        """``words=37 < 50``, ``language=ca not in en (score 0.15)``; ``""`` for a rule that measured nothing."""
        if self.measure is None:
            return self.note or ""
        shown = f"{self.measure}={_num(self.value)}"
        if self.op is not None:
            shown += f" {self.op} {_num(self.threshold)}"
        return f"{shown} ({self.note})" if self.note else shown

    def explained(self) -> str:
        """``gopher_short_doc: words=37 < 50``: the reason, then its evidence when there is any."""
        return f"{self}: {self.evidence}" if self.evidence else str(self)

    def prefixed(self, prefix: str) -> Removal:
        """The same evidence under a stage's namespace (``filter/gopher_short_doc``)."""
        return Removal(
            f"{prefix}/{self}", self.measure, self.value, self.op, self.threshold, self.note, self.related
        )

    def __reduce__(self) -> tuple[object, ...]:  # picklable to engine workers with its evidence
        return (
            Removal,
            (str(self), self.measure, self.value, self.op, self.threshold, self.note, self.related),
        )


def _num(value: float | str | None) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def prefixed(prefix: str, reason: str) -> str:
    """``prefix/reason``, keeping the evidence of a :class:`Removal`."""
    return reason.prefixed(prefix) if isinstance(reason, Removal) else f"{prefix}/{reason}"


def evidence_of(reason: str) -> dict[str, object]:
    """The evidence columns of a reason: ``evidence`` (the text), ``measure``, ``value`` and ``threshold`` when
    they are numbers (so that a browser can filter on ranges), ``related`` (a kept copy's id); empty for a plain
    string."""
    out: dict[str, object] = {
        "evidence": "",
        "measure": None,
        "value": None,
        "threshold": None,
        "related": None,
    }
    if isinstance(reason, Removal):
        out["evidence"], out["measure"], out["related"] = reason.evidence, reason.measure, reason.related
        for key, v in (("value", reason.value), ("threshold", reason.threshold)):
            if isinstance(v, int | float) and not isinstance(v, bool):
                out[key] = float(v)
    return out
