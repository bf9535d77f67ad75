"""The view of a document that filters share, so that words and lines are computed once per text."""

from __future__ import annotations

from functools import cached_property

from datapipe.filters.words import splitter


class FilterDoc:
    """Text plus lazily computed, cached splits. Assigning ``text`` (a line modifier) drops the caches."""

    def __init__(self, text: str, url: str = "", language: str = "en") -> None:
        self._text = text
        self.url = url
        self.language = language

    @property
    def text(self) -> str:
        return self._text

    @text.setter
    def text(self, value: str) -> None:
        self._text = value
        for name in ("words",):
            self.__dict__.pop(name, None)

    @cached_property
    def words(self) -> list[str]:
        """Words exactly as datatrove's spaCy word tokenizer splits them (see :mod:`datapipe.filters.words`)."""
        return splitter("en").split(self._text)
