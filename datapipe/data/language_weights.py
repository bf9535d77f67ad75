"""How a source's weight is shared among its languages (``by_language.weights``), as a pure function of the
languages' token counts.

- ``tokens``: in proportion to tokens (what sampling the source as one stream would give);
- ``temperature``: in proportion to ``tokens ** alpha`` (XLM-R, mT5: alpha 0.3 lifts small languages);
- ``unimax`` (Chung et al. 2023, "UniMax"): the source's token budget spread as evenly as it can be over its
  languages, none given more than ``max_epochs`` passes over its own tokens; languages are served smallest first,
  each taking an equal part of what is left or its cap, so what the small ones cannot use goes to the large ones;
- explicit weights by language (a language not named gets none and is left out).

The shares sum to 1; the manifest multiplies them by the source's weight and records them.
"""

from __future__ import annotations

from collections.abc import Mapping


def language_shares(
    tokens: Mapping[str, int],
    how: str,
    *,
    alpha: float = 0.3,
    max_epochs: float = 4.0,
    budget: float | None = None,
    explicit: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Each language's share of its source; languages with no tokens get none (nothing could be sampled)."""
    have = {k: n for k, n in sorted(tokens.items()) if n > 0}
    if how == "tokens":
        raw = {k: float(n) for k, n in have.items()}
    elif how == "temperature":
        raw = {k: float(n) ** alpha for k, n in have.items()}
    elif how == "unimax":
        if budget is None or budget <= 0:
            raise ValueError("unimax needs a token budget (the mixture's train_tokens)")
        raw, left = {}, float(budget)
        order = sorted(have, key=lambda k: (have[k], k))
        for i, k in enumerate(order):
            raw[k] = min(left / (len(order) - i), max_epochs * have[k])
            left -= raw[k]
    elif how == "explicit":
        raw = {k: float(w) for k, w in (explicit or {}).items() if k in have}
    else:
        raise ValueError(f"unknown language weighting {how!r}")
    total = sum(raw.values())
    return {k: v / total for k, v in raw.items()} if total > 0 else {}
