"""Languages as keys: FineWeb-2's per-language configs, lid.176 labels as language-scripts, and word splitting
that matches datatrove's tokenizer for each language. See ``docs/multilingual.md``."""

from datapipe.languages.table import (
    LanguageConfig,
    LanguageError,
    known_languages,
    language_config,
    lid176_language,
    raw_config,
    rehydration_table,
    rehydration_weights,
    repeats,
)
from datapipe.languages.words import Splitter, assignment, word_splitter

__all__ = [
    "LanguageConfig",
    "LanguageError",
    "Splitter",
    "assignment",
    "known_languages",
    "language_config",
    "lid176_language",
    "raw_config",
    "rehydration_table",
    "rehydration_weights",
    "repeats",
    "word_splitter",
]
