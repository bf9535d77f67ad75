"""FineWeb-2's per-language filtering (Penedo et al. 2025), decision for decision as its datatrove pipeline runs it.

Per language-script, in FineWeb-2's order (``fineweb-2-pipeline.py``, step 5):

1. Gopher repetition with the language's ``dup_line_frac``, ``top_n_grams`` and ``dup_n_grams``; the paragraph
   rules and the duplicate-line character rule are off (Trafilatura leaves few paragraphs, and FineWeb quality
   checks duplicate-line characters at its own threshold);
2. FineWeb quality with the language's ``line_punct_thr`` and ``new_line_ratio``, ``char_duplicates_ratio=0.1``
   (0.01 in FineWeb English) and the short-line rule off;
3. Gopher quality with the language's word-length bounds, ``max_non_alpha_words_ratio`` and stop words, and
   ``min_stop_words=2``; the other Gopher thresholds stay at their defaults (50..100,000 words, ...).

Every rule counts the language's own words (:func:`datapipe.languages.word_splitter`). The finishing touches FineWeb-2
runs after filtering (step 6) are optional here: FTFY with datatrove's settings (fix encodings, keep the text's
own forms: no width folding, no quote uncurling, no normalization), and lines made of table pipes only replaced
by a paragraph break (Trafilatura's table artifacts).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from datapipe.filters.fineweb import FineWebQuality
from datapipe.filters.gopher import GopherQuality, GopherRepetition
from datapipe.languages import LanguageConfig

SHORT_LINE_OFF = 999  # FineWeb-2 disables the short-line rule with a share no document can exceed
CHAR_DUPLICATES_RATIO = 0.1
MIN_STOP_WORDS = 2


def fineweb2_rules(cfg: LanguageConfig) -> tuple[object, ...]:
    """The three rules of one language, configured as FineWeb-2 configures datatrove's steps."""
    return (
        GopherRepetition(
            dup_line_frac=cfg.dup_line_frac,
            dup_para_frac=None,
            dup_line_char_frac=None,
            dup_para_char_frac=None,
            top_n_grams=cfg.top_n_grams,
            dup_n_grams=cfg.dup_n_grams,
        ),
        FineWebQuality(
            line_punct_thr=cfg.line_punct_thr,
            short_line_thr=SHORT_LINE_OFF,
            char_duplicates_ratio=CHAR_DUPLICATES_RATIO,
            new_line_ratio=cfg.new_line_ratio,
        ),
        GopherQuality(
            min_avg_word_length=cfg.min_avg_word_length,
            max_avg_word_length=cfg.max_avg_word_length,
            max_non_alpha_words_ratio=cfg.max_non_alpha_words_ratio,
            stop_words=cfg.stopwords,
            min_stop_words=MIN_STOP_WORDS,
        ),
    )


def with_overrides(rules: tuple[Any, ...], overrides: dict[str, Any]) -> tuple[Any, ...]:
    """Each rule that has a setting of that name takes the value (already checked and coerced by the config)."""
    out = []
    for rule in rules:
        names = {f.name for f in dataclasses.fields(rule)}
        mine = {k: v for k, v in overrides.items() if k in names}
        out.append(dataclasses.replace(rule, **mine) if mine else rule)
    return tuple(out)


@dataclass(frozen=True)
class Finishing:
    """FineWeb-2's finishing touches, applied to kept documents after the rules."""

    ftfy: bool = False
    table_pipes: bool = False

    @cached_property
    def _ftfy_config(self) -> Any:
        from ftfy import TextFixerConfig

        # datatrove's FTFYFormatter defaults: fix what is broken, normalize nothing that is merely a form
        return TextFixerConfig(
            unescape_html="auto",
            remove_terminal_escapes=True,
            fix_encoding=True,
            restore_byte_a0=True,
            replace_lossy_sequences=True,
            decode_inconsistent_utf8=True,
            fix_c1_controls=True,
            fix_latin_ligatures=False,
            fix_character_width=False,
            uncurl_quotes=False,
            fix_line_breaks=False,
            fix_surrogates=True,
            remove_control_chars=True,
            normalization=None,
        )

    def __call__(self, text: str) -> str:
        if self.ftfy:
            import ftfy

            text = ftfy.fix_text(text, config=self._ftfy_config)
        if self.table_pipes:
            text = replace_symbol_lines(text, frozenset("|"), "\n")
        return text


def replace_symbol_lines(text: str, symbols: frozenset[str], replace: str) -> str:
    """datatrove's ``SymbolLinesFormatter``: a run of lines made only of ``symbols`` (and spaces) becomes one
    ``replace`` line (none when ``replace`` is empty)."""
    out: list[str] = []
    in_run = False
    for line in text.splitlines():
        symbolic = line.strip() != "" and all(c in symbols or c == " " for c in line)
        if symbolic and not in_run:
            if replace:
                out.append(replace)
            in_run = True
        elif not symbolic:
            out.append(line)
            in_run = False
    return "\n".join(out)
