"""Training runs' loss curves as SVG polyline points (the runs themselves: :func:`datapipe.report.runs.find_runs`):
a curve is a few hundred numbers, so the page draws it without a plotting library."""

from __future__ import annotations

import os

from datapipe.train.metrics import read_evals, read_metrics

WIDTH, HEIGHT, LEFT, TOP = 590.0, 180.0, 40.0, 10.0


def _points(xy: list[tuple[float, float]], x0: float, x1: float, y0: float, y1: float) -> str:
    sx = WIDTH / (x1 - x0) if x1 > x0 else 0.0
    sy = HEIGHT / (y1 - y0) if y1 > y0 else 0.0
    return " ".join(f"{LEFT + (x - x0) * sx:.1f},{TOP + HEIGHT - (y - y0) * sy:.1f}" for x, y in xy)


def loss_curve(path: str) -> dict[str, object]:
    """A run's name, steps, last record, latest held-out evaluation (``datapipe eval``), and its loss (and mean
    validation loss) as points in the page's SVG box."""
    records = [r for r in read_metrics(os.path.join(path, "metrics.jsonl")) if "loss" in r]
    loss = [(float(r["step"]), float(r["loss"])) for r in records]
    val = [
        (float(r["step"]), sum(r["val_loss"].values()) / len(r["val_loss"]))
        for r in records
        if isinstance(r.get("val_loss"), dict) and r["val_loss"]
    ]
    every = loss + val
    x0, x1 = (min(x for x, _ in every), max(x for x, _ in every)) if every else (0.0, 1.0)
    y0, y1 = (min(y for _, y in every), max(y for _, y in every)) if every else (0.0, 1.0)
    return {
        "name": os.path.basename(path.rstrip("/")),
        "path": path,
        "steps": len(records),
        "last": records[-1] if records else None,
        "eval": next(reversed(read_evals(path)), None),
        "points": _points(loss, x0, x1, y0, y1),
        "val_points": _points(val, x0, x1, y0, y1) if val else "",
        "x0": int(x0),
        "x1": int(x1),
        "y0": y0,
        "y1": y1,
    }
