"""The report's figures, drawn with matplotlib (Agg) and returned as base64 PNG for embedding in one HTML file."""

from __future__ import annotations

import base64
import io
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402

from datapipe.report.collect import StageView  # noqa: E402
from datapipe.runtime.stats import bin_edges  # noqa: E402


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def funnel(source: str, chain: list[StageView]) -> str:
    """Documents into the first stage, then kept after each stage, with the removals by reason stacked."""
    fig, ax = plt.subplots(figsize=(7, 3.2))
    labels = ["input"] + [r.stage for r in chain]
    kept = [chain[0].counts["docs_in"]] + [r.counts["docs_kept"] for r in chain]
    ax.bar(labels, kept, color="#4c72b0", label="documents")
    for i, r in enumerate(chain, start=1):
        bottom = r.counts["docs_kept"]
        for _reason, n in sorted(r.counts["removed"].items()):
            ax.bar(labels[i], n, bottom=bottom, color="#dd8452", alpha=0.6, edgecolor="white")
            bottom += n
    ax.set_title(f"{source}: documents through the stages (orange: removed)")
    ax.set_ylabel("documents")
    return _png(fig)


def histogram(title: str, hist: dict[str, Any], xlabel: str, cutoff: float | None = None) -> str:
    kind, bins = hist["kind"], {int(k): v for k, v in hist["bins"].items()}
    fig, ax = plt.subplots(figsize=(7, 3))
    edges = [bin_edges(kind, b) for b in sorted(bins)]
    ax.bar(
        [lo for lo, _ in edges],
        [bins[b] for b in sorted(bins)],
        width=[hi - lo for lo, hi in edges],
        align="edge",
        color="#55a868",
    )
    if kind == "log":
        ax.set_xscale("symlog")
    if cutoff is not None:
        ax.axvline(cutoff, color="#c44e52", linestyle="--", label=f"cut-off {cutoff:.4g}")
        ax.legend()
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("documents")
    return _png(fig)


def counts_bar(title: str, counts: dict[str, int], xlabel: str) -> str:
    fig, ax = plt.subplots(figsize=(7, 3))
    keys = list(counts)
    ax.bar(keys, [counts[k] for k in keys], color="#8172b3")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("components")
    return _png(fig)


def planned_vs_available(rows: list[dict[str, Any]], train_tokens: int | None) -> str:
    fig, ax = plt.subplots(figsize=(8, 3.5))
    names = [r["name"] for r in rows]
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [r["tokens"] for r in rows], width=0.4, label="available", color="#4c72b0")
    if train_tokens:
        ax.bar(
            [i + 0.2 for i in x],
            [r["planned_tokens"] for r in rows],
            width=0.4,
            label="planned",
            color="#dd8452",
        )
    ax.set_xticks(list(x), names, rotation=30, ha="right")
    ax.set_yscale("log")
    # the axis starts well below the smallest bar: a log axis fitted to the data began at it, and hid that bar
    values = [r["tokens"] for r in rows] + ([r["planned_tokens"] for r in rows] if train_tokens else [])
    positive = [v for v in values if v > 0]
    if positive:
        ax.set_ylim(bottom=min(positive) / 4)
    for container in ax.containers:
        if isinstance(container, BarContainer):
            ax.bar_label(container, fmt="{:,.3g}", fontsize=7)
    ax.set_ylabel("tokens")
    title = "tokens per component" + (
        f": available vs. planned at {train_tokens:,} training tokens" if train_tokens else ""
    )
    ax.set_title(title)
    ax.legend()
    return _png(fig)
