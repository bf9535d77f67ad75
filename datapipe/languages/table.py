"""FineWeb-2's per-language decisions, as data: thresholds, stop words, rehydration weights, and lid.176's labels
mapped to ISO 639-3 language-scripts.

The table is package data (``fineweb2.json.gz``, 0.5 MB, packed by :mod:`datapipe.languages.pack` from FineWeb-2's
Apache-2.0 files; ``LICENSE-fineweb2`` beside it) and is read once per process; lid.176's labels are a file of
their own (``lid176.json``, 3 KB), which language ID reads without the rest. A language-script is an ISO 639-3
code and an ISO 15924 script joined by ``_`` (``deu_Latn``, ``cmn_Hani``, ``jpn_Jpan``), as GlotLID labels them.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from datapipe.errors import DatapipeError

LANG_SCRIPT = re.compile(r"^[a-z]{3}_[A-Z][a-z]{3}$")
PATH = os.path.join(os.path.dirname(__file__), "fineweb2.json.gz")
LID176_PATH = os.path.join(os.path.dirname(__file__), "lid176.json")
KEYS = (
    "dup_line_frac",
    "dup_n_grams",
    "language_score",
    "line_punct_thr",
    "max_avg_word_length",
    "max_non_alpha_words_ratio",
    "min_avg_word_length",
    "new_line_ratio",
    "stopwords",
    "top_n_grams",
)


class LanguageError(DatapipeError):
    """A language-script that has no config, a config missing a key, or a word tokenizer that is not installed."""


@dataclass(frozen=True)
class LanguageConfig:
    """One language-script's FineWeb-2 thresholds (the names of its ``configs/<lang>.yml``)."""

    language: str
    language_score: float
    dup_line_frac: float
    top_n_grams: tuple[tuple[int, float], ...]
    dup_n_grams: tuple[tuple[int, float], ...]
    line_punct_thr: float
    new_line_ratio: float
    min_avg_word_length: float
    max_avg_word_length: float
    max_non_alpha_words_ratio: float
    stopwords: tuple[str, ...]

    @classmethod
    def from_mapping(
        cls, language: str, raw: dict[str, Any], where: str = "FineWeb-2's table"
    ) -> LanguageConfig:
        missing = [k for k in KEYS if k not in raw]
        if missing:
            raise LanguageError(f"{where}: language {language}: config lacks {', '.join(missing)}")
        try:
            return cls(
                language=language,
                language_score=float(raw["language_score"]),
                dup_line_frac=float(raw["dup_line_frac"]),
                top_n_grams=tuple((int(n), float(f)) for n, f in raw["top_n_grams"]),
                dup_n_grams=tuple((int(n), float(f)) for n, f in raw["dup_n_grams"]),
                line_punct_thr=float(raw["line_punct_thr"]),
                new_line_ratio=float(raw["new_line_ratio"]),
                min_avg_word_length=float(raw["min_avg_word_length"]),
                max_avg_word_length=float(raw["max_avg_word_length"]),
                max_non_alpha_words_ratio=float(raw["max_non_alpha_words_ratio"]),
                stopwords=tuple(str(w) for w in raw["stopwords"]),
            )
        except (TypeError, ValueError) as e:
            raise LanguageError(f"{where}: language {language}: malformed config ({e})") from None


@cache
def _table() -> dict[str, Any]:
    with gzip.open(PATH, "rt", encoding="utf-8") as f:
        return json.load(f)


def known_languages() -> tuple[str, ...]:
    """Every language-script FineWeb-2 has a config for (1,929)."""
    return tuple(sorted(_table()["configs"]))


def raw_config(language: str) -> dict[str, object]:
    """FineWeb-2's ``configs/<language>.yml`` as it was published (a copy); a LanguageError when there is none."""
    raw = _table()["configs"].get(language)
    if raw is None:
        hint = (
            " (a language-script is ISO 639-3 + script, e.g. deu_Latn)"
            if not LANG_SCRIPT.match(language)
            else ""
        )
        raise LanguageError(f"language {language}: FineWeb-2 has no config for it{hint}")
    return json.loads(json.dumps(raw))


@cache
def language_config(language: str) -> LanguageConfig:
    """FineWeb-2's config for ``language`` (``deu_Latn``); a LanguageError naming it when there is none."""
    return LanguageConfig.from_mapping(language, raw_config(language))


def lid176_language(label: str) -> str:
    """The language-script of a lid.176 label (``de`` -> ``deu_Latn``, ``zh`` -> ``cmn_Hani``); a label that is
    already a language-script (GlotLID's ``__label__deu_Latn``) is returned as it is."""
    if LANG_SCRIPT.match(label):
        return label
    return _lid176().get(label, label)


@cache
def _lid176() -> dict[str, str]:
    with open(LID176_PATH, encoding="utf-8") as f:
        return json.load(f)


def rehydration_tables() -> list[str]:
    """The names of the rehydration tables FineWeb-2 published (``up_to_03_reps`` ...)."""
    return sorted(_table()["rehydration"])


def rehydration_table(weights: str) -> dict[str, dict[int, int]]:
    """Repeat counts by cluster size for every language: a FineWeb-2 table (``up_to_05_reps``) or a JSON file of
    the same shape (``{"deu_Latn": {"1": 1, "2": 3, ...}}``)."""
    tables = _table()["rehydration"]
    if weights in tables:
        raw = tables[weights]
    elif weights.startswith("up_to_"):
        raise LanguageError(f"rehydration weights {weights!r}: unknown (tables: {', '.join(sorted(tables))})")
    else:
        from datapipe.io import fs

        try:
            raw = json.loads(fs.read_text(weights))
        except (OSError, ValueError) as e:
            raise LanguageError(f"{weights}: cannot read rehydration weights ({e})") from None
    try:
        return {lang: {int(k): int(v) for k, v in w.items()} for lang, w in raw.items()}
    except (AttributeError, TypeError, ValueError):
        raise LanguageError(f"{weights}: expected {{language: {{cluster size: repeats}}}}") from None


def repeats(weights: dict[int, int], cluster_size: int) -> int:
    """FineWeb-2's ``Rehydrater``: the weight of the largest listed size at or below ``cluster_size`` (1 below
    every listed size)."""
    listed = [size for size in weights if size <= cluster_size]
    return weights[max(listed)] if listed else 1


def rehydration_weights(table: str, language: str) -> dict[int, int]:
    """FineWeb-2's repeat counts by cluster size for one language (``table`` = ``up_to_05_reps`` ...)."""
    tables = _table()["rehydration"]
    if table not in tables:
        raise LanguageError(f"rehydration weights {table!r}: unknown (tables: {', '.join(sorted(tables))})")
    weights = tables[table].get(language)
    if weights is None:
        raise LanguageError(f"rehydration weights {table}: no weights for language {language}")
    return {int(k): int(v) for k, v in weights.items()}
