"""The view of a document that filters share, so that words and lines are computed once per text."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from datapipe.languages.spacy_words import splitter

if TYPE_CHECKING:
    import numpy as np

    from datapipe.filters.wordindex import WordIndex
    from datapipe.languages.chunk_ids import WordTable
    from datapipe.languages.words import Splitter


class FilterDoc:
    """Text plus lazily computed, cached splits. Assigning ``text`` (a line modifier) drops the caches.

    ``words`` come from ``words_by`` (the document's language's splitter, :func:`datapipe.languages.word_splitter`)
    or, by default, from spaCy's English rules, which the English presets (Gopher, RefinedWeb, C4, FineWeb) are
    defined on.
    """

    def __init__(self, text: str, url: str = "", words_by: Splitter | None = None) -> None:
        self._text = text
        self.url = url
        self._words_by = words_by

    @property
    def text(self) -> str:
        return self._text

    @text.setter
    def text(self, value: str) -> None:
        self._text = value
        for name in ("words_hold_spaces", "index", "stats", "_line_counts", "codes"):
            self.__dict__.pop(name, None)

    def rewrite(self, text: str, ids: tuple[np.ndarray, WordTable] | None = None) -> None:
        """Set ``text`` (a rule that rewrites the document); ``ids``, when given, are its words as spaCy's English
        rules split them (:meth:`~datapipe.languages.spacy_words.WordSplitter.split_ids`), kept as the new text's
        words where this document is split by those rules, so a later rule does not split the text again."""
        self.text = text
        if ids is not None and self._words_by in (None, splitter("en")):
            from datapipe.filters.wordindex import WordIndex

            self.__dict__["index"] = WordIndex.from_ids(*ids)

    @property
    def words(self) -> list[str]:
        """Words exactly as datatrove's word tokenizer for the language splits them (see :mod:`datapipe.languages.spacy_words`
        and :mod:`datapipe.languages.words`)."""
        return self.index.words

    @cached_property
    def words_hold_spaces(self) -> bool:
        """Whether a word holds a space (pyvi's Vietnamese "kiểm tra" does), which changes how joined n-grams
        compare. A splitter that says its words never do (``spaceless``: spaCy's rule-based ones, whose words are
        pieces of whitespace-separated chunks) is taken at its word; others are asked of the words' code points,
        which the index holds (making the words as strings to join them took 0.4 CPU s of Russian's filters over
        the multilingual benchmark's 500 pages: its special cases across a space make it not ``spaceless``)."""
        if getattr(self._words_by or splitter("en"), "spaceless", False):
            return False
        return bool((self.index.codes == 32).any())

    @cached_property
    def stats(self) -> np.ndarray:
        """The text's line and paragraph counts (:func:`datapipe.filters.textstats.line_stats`, indexed by that
        module's constants), from one compiled walk over its characters, for the rules that count lines."""
        from datapipe.filters.textstats import line_stats

        return line_stats(self.codes)

    def line_counts(self) -> np.ndarray:
        """:attr:`stats` where it was made, else the same counts without the paragraphs' (-1 there; kept for the
        next rule that asks): for rules that read no paragraph count. FineWeb-2's Gopher repetition has its
        paragraph rules off, and the paragraphs' walk and hashes were ~a third of the counts' time (12 languages
        of the multilingual benchmark: ~0.17 CPU s in all)."""
        got = self.__dict__.get("stats")
        if got is None:
            got = self.__dict__.get("_line_counts")
        if got is None:
            from datapipe.filters.textstats import line_stats

            got = self.__dict__["_line_counts"] = line_stats(self.codes, paragraphs=False)
        return got

    @cached_property
    def codes(self) -> np.ndarray:
        """The text's code points (UTF-32), what the compiled walks over lines read."""
        import numpy as np

        return np.frombuffer(self._text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)

    @cached_property
    def index(self) -> WordIndex:
        """The words as arrays, for the rules that count over every word (:mod:`datapipe.filters.wordindex`):
        from their ids when the splitter gives them (``split_ids``), else from the words."""
        from datapipe.filters.wordindex import WordIndex

        by = self._words_by or splitter("en")
        split_ids = getattr(by, "split_ids", None)
        got = split_ids(self._text) if split_ids is not None else None
        return WordIndex(by.split(self._text)) if got is None else WordIndex.from_ids(*got)
