"""Filter presets and their YAML overrides.

====================  ==========================================================================================
``refinedweb``        DCLM-Baseline's RefinedWeb reproduction: Gopher quality (50..100000 words, mean word length
                      3..10, '#'/ellipsis per word <= 0.1, bullet lines <= 0.9, ellipsis lines <= 0.3, >= 2
                      stop words), Gopher repetition, then RefinedWeb's line modifiers and the 5% removed-words
                      check
``gopher``            Gopher quality (with the 80% alphabetic-words rule) and Gopher repetition
``c4``                the C4 paper's line and document rules
``fineweb``           FineWeb's line-level rules
``fineweb_english``   FineWeb's English chain as its datatrove pipeline runs it: Gopher repetition, Gopher
                      quality (with the 80% alphabetic-words rule), C4 quality without the terminal-punctuation
                      line rule (its other line rules still rewrite the text), FineWeb's line-level rules
``none``              no heuristic filter (a URL blocklist may still apply)
``fineweb2``          FineWeb-2's per-language rules (``fineweb2.py``): each document's language's thresholds,
                      stop words and word tokenizer; built per language (``language=``)
====================  ==========================================================================================

``overrides`` sets any rule's threshold by its field name (``min_doc_words: 30``); a name no rule of the preset
has is a configuration error naming the field.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from datapipe.errors import ConfigError
from datapipe.filters.c4 import C4Quality
from datapipe.filters.document import FilterDoc
from datapipe.filters.fineweb import FineWebQuality
from datapipe.filters.fineweb2 import fineweb2_rules
from datapipe.filters.gopher import GopherQuality, GopherRepetition
from datapipe.filters.refinedweb import LineModifiers
from datapipe.filters.url import UrlBlocklist, load_domains, read_entries
from datapipe.languages import LanguageError, language_config

REFERENCE_LANGUAGE = "deu_Latn"  # a language preset's settings are checked on this one's rules at plan time

PRESETS: dict[str, tuple[object, ...]] = {
    "refinedweb": (GopherQuality(max_non_alpha_words_ratio=None), GopherRepetition(), LineModifiers()),
    "gopher": (GopherQuality(), GopherRepetition()),
    "c4": (C4Quality(),),
    "fineweb": (FineWebQuality(),),
    "fineweb_english": (
        GopherRepetition(),
        GopherQuality(),
        C4Quality(filter_no_terminal_punct=False),
        FineWebQuality(),
    ),
    "none": (),
}
# presets whose rules depend on the document's language: language-script -> rules
LANGUAGE_PRESETS: dict[str, Callable[[str], tuple[Any, ...]]] = {
    "fineweb2": lambda language: fineweb2_rules(language_config(language)),
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
    overrides: dict[str, object] | None = None,
    *,
    url_blocklist: str | None = None,
    bad_words: str | None = None,
    file: str = "mixture",
    field: str = "filters",
    language: str | None = None,
) -> FilterChain:
    """The preset's rules with ``overrides``; a language preset's for ``language`` (its settings are checked on a
    reference language when none is given)."""
    if preset in LANGUAGE_PRESETS:
        try:
            rules = list(LANGUAGE_PRESETS[preset](language or REFERENCE_LANGUAGE))
        except LanguageError as e:
            raise ConfigError(file, f"{field}.preset", f"{preset}: {e}") from None
    elif preset in PRESETS:
        rules = list(PRESETS[preset])
    else:
        presets = ", ".join([*PRESETS, *LANGUAGE_PRESETS])
        raise ConfigError(file, f"{field}.preset", f"unknown preset {preset!r} (presets: {presets})")
    for name, value in (overrides or {}).items():
        where = (file, f"{field}.overrides.{name}")
        owners = [i for i, r in enumerate(rules) if name in {f.name for f in dataclasses.fields(r)}]
        if not owners:  # one short line: the setting meant, not every setting of the preset
            known = sorted({f.name for r in rules for f in dataclasses.fields(r)} - {"bad_words"})
            close = difflib.get_close_matches(name, known, n=1)
            more = f", ... ({len(known)} in all)" if len(known) > 6 else ""
            hint = f"did you mean {close[0]}?" if close else f"its settings: {', '.join(known[:6])}{more}"
            raise ConfigError(*where, f"no rule of preset {preset!r} has this setting ({hint})")
        for i in owners:
            rules[i] = dataclasses.replace(rules[i], **{name: _coerce(rules[i], name, value, where)})
    if bad_words:
        words = read_entries(bad_words, "bad-words list")
        rules = [dataclasses.replace(r, bad_words=words) if isinstance(r, C4Quality) else r for r in rules]
    if url_blocklist:
        rules.insert(0, UrlBlocklist(load_domains(url_blocklist)))
    return FilterChain(tuple(rules))


def check_language_preset(
    preset: str, languages: tuple[str, ...] | None, fallback: str | None, *, file: str, source: str
) -> None:
    """Before any work: a language preset needs language ID (``languages`` None: the source has none), and every
    language the source keeps (and the fallback) needs a config and a word tokenizer that runs here. A source that
    keeps all languages is checked per document instead (``language/no_config``)."""
    from datapipe.languages import assignment, lid176_language

    if preset not in LANGUAGE_PRESETS:
        return
    field = f"sources.{source}.filters"
    if languages is None:
        raise ConfigError(
            file, f"{field}.preset", f"{preset} judges each document by its language: the source needs langid"
        )
    named = [(f"sources.{source}.langid.languages[{i}]", lid176_language(x)) for i, x in enumerate(languages)]
    if fallback is not None:
        named.append((f"{field}.fallback", fallback))
    for where, language in named:
        try:
            if where.endswith("fallback") or fallback is None:
                language_config(language)
            assignment(language)
        except LanguageError as e:
            raise ConfigError(file, where, str(e)) from None
