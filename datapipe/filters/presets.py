"""Filter presets and their YAML overrides.

=============  ==============================================================================================
``refinedweb``  DCLM-Baseline's RefinedWeb reproduction: Gopher quality (50..100000 words, mean word length
                3..10, '#'/ellipsis per word <= 0.1, bullet lines <= 0.9, ellipsis lines <= 0.3, >= 2 stop
                words), Gopher repetition, then RefinedWeb's line modifiers and the 5% removed-words check
``gopher``      Gopher quality (with the 80% alphabetic-words rule) and Gopher repetition
``c4``          the C4 paper's line and document rules
``fineweb``     FineWeb's line-level rules
``none``        no heuristic filter (a URL blocklist may still apply)
=============  ==============================================================================================

``overrides`` sets any rule's threshold by its field name (``min_doc_words: 30``); a name no rule of the preset
has is a configuration error naming the field.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from datapipe.errors import ConfigError
from datapipe.filters.c4 import C4Quality
from datapipe.filters.document import FilterDoc
from datapipe.filters.fineweb import FineWebQuality
from datapipe.filters.gopher import GopherQuality, GopherRepetition
from datapipe.filters.refinedweb import LineModifiers
from datapipe.filters.url import UrlBlocklist, load_domains, read_entries

PRESETS: dict[str, tuple[Any, ...]] = {
    "refinedweb": (GopherQuality(max_non_alpha_words_ratio=None), GopherRepetition(), LineModifiers()),
    "gopher": (GopherQuality(), GopherRepetition()),
    "c4": (C4Quality(),),
    "fineweb": (FineWebQuality(),),
    "none": (),
}


def _coerce(rule: Any, name: str, value: Any, where: tuple[str, str]) -> Any:
    default = getattr(rule, name)
    if name in ("top_n_grams", "dup_n_grams"):
        try:
            return tuple((int(n), float(f)) for n, f in value)
        except (TypeError, ValueError):
            raise ConfigError(*where, "expected a list of [n, fraction] pairs") from None
    if name == "stop_words":
        if not isinstance(value, list) or not all(isinstance(w, str) for w in value):
            raise ConfigError(*where, "expected a list of words")
        return tuple(value)
    if value is None:
        return None
    if isinstance(default, bool) or (default is None and isinstance(value, bool)):
        if not isinstance(value, bool):
            raise ConfigError(*where, f"expected true or false, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(*where, f"expected a number, got {value!r}")
    return value


@dataclass(frozen=True)
class FilterChain:
    """Rules applied in order; the first that objects removes the document."""

    rules: tuple[Any, ...]

    def apply(self, doc: FilterDoc) -> str | None:
        for rule in self.rules:
            reason = rule(doc)
            if reason is not None:
                return reason
        return None


def build_chain(
    preset: str,
    overrides: dict[str, Any] | None = None,
    *,
    url_blocklist: str | None = None,
    bad_words: str | None = None,
    file: str = "mixture",
    field: str = "filters",
) -> FilterChain:
    if preset not in PRESETS:
        raise ConfigError(
            file, f"{field}.preset", f"unknown preset {preset!r} (presets: {', '.join(PRESETS)})"
        )
    rules = list(PRESETS[preset])
    for name, value in (overrides or {}).items():
        where = (file, f"{field}.overrides.{name}")
        owners = [i for i, r in enumerate(rules) if name in {f.name for f in dataclasses.fields(r)}]
        if not owners:
            known = sorted({f.name for r in rules for f in dataclasses.fields(r)} - {"bad_words"})
            raise ConfigError(
                *where, f"no rule of preset {preset!r} has this setting (settings: {', '.join(known)})"
            )
        for i in owners:
            rules[i] = dataclasses.replace(rules[i], **{name: _coerce(rules[i], name, value, where)})
    if bad_words:
        words = read_entries(bad_words, "bad-words list")
        rules = [dataclasses.replace(r, bad_words=words) if isinstance(r, C4Quality) else r for r in rules]
    if url_blocklist:
        rules.insert(0, UrlBlocklist(load_domains(url_blocklist)))
    return FilterChain(tuple(rules))
