"""datatrove's FineWeb-2 filter steps for one language, configured as ``fineweb-2-pipeline.py`` configures them from
the language's YAML: the peer that ``benchmarks/multilingual.py`` and ``tests/test_languages.py`` compare with."""

from __future__ import annotations

from typing import Any

from datapipe import raw_config


def datatrove_filters(language: str) -> list[Any]:
    from datatrove.pipeline.filters import FineWebQualityFilter, GopherQualityFilter, GopherRepetitionFilter

    c = raw_config(language)  # the YAML as FineWeb-2 published it
    return [
        GopherRepetitionFilter(
            language=language,
            dup_para_frac=0,
            dup_line_char_frac=0,
            dup_para_char_frac=0,
            dup_line_frac=c["dup_line_frac"],
            top_n_grams=c["top_n_grams"],
            dup_n_grams=c["dup_n_grams"],
        ),
        FineWebQualityFilter(
            language=language,
            short_line_thr=999,
            char_duplicates_ratio=0.1,
            line_punct_thr=c["line_punct_thr"],
            new_line_ratio=c["new_line_ratio"],
        ),
        GopherQualityFilter(
            language=language,
            max_avg_word_length=c["max_avg_word_length"],
            min_avg_word_length=c["min_avg_word_length"],
            stop_words=c["stopwords"],
            max_non_alpha_words_ratio=c["max_non_alpha_words_ratio"],
            min_stop_words=2,
        ),
    ]


def datatrove_decision(filters: list[Any], text: str, doc_id: str = "x") -> str:
    """``keep``, or the reason of the first step that removes the document (datatrove's reason names)."""
    from datatrove.data import Document

    doc = Document(text=text, id=doc_id)
    for f in filters:
        out = f.filter(doc)
        if out is not True:
            return out[1] if isinstance(out, tuple) else "removed"
    return "keep"
