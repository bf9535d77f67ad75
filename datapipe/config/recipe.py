"""Load a quality-classifier recipe (``classifiers/NAME.yaml``) into frozen dataclasses, validated by its schema.

The one loader of recipes: ``datapipe classifier train`` and the build (``recipe:NAME`` in a mixture) both use it;
training them is ``datapipe.quality.train``'s job.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from datapipe.config.env import expand_tree
from datapipe.config.mixture import DEFAULT_TEXT_FIELD
from datapipe.config.schema import validate
from datapipe.config.stages import ExtractConfig
from datapipe.config.yamlio import load_yaml
from datapipe.errors import ConfigError
from datapipe.io import fs

BUNDLED = Path(__file__).resolve().parents[2] / "classifiers"  # the recipes that ship with datapipe
DCLM_HYPERPARAMETERS = {"wordNgrams": 2, "lr": 0.1, "dim": 100, "epoch": 5, "minCount": 1}


@dataclass(frozen=True)
class RecipeSource:
    format: str
    paths: tuple[str, ...]
    text_field: str = "text"
    sample: int | None = None
    extract: ExtractConfig = field(default_factory=ExtractConfig)


@dataclass(frozen=True)
class Recipe:
    name: str
    file: str
    positive_label: str
    negative_label: str
    data_root: str
    positive: tuple[RecipeSource, ...] = ()
    negative: tuple[RecipeSource, ...] = ()
    model_url: str | None = None
    threshold: float | None = None
    seed: int = 0
    unit: str = "document"
    min_chars: int = 200
    lowercase: bool = False
    hyperparameters: tuple[tuple[str, object], ...] = ()
    validation: float = 0.1
    quantize: bool = False
    # what to train: () is fastText; (("kind", "embedding"), ("embeddings", SOURCE), ("l2", X)) a linear head on
    # static embeddings (datapipe.quality.embedding)
    scorer: tuple[tuple[str, Any], ...] = ()

    @property
    def kind(self) -> str:
        return str(dict(self.scorer).get("kind", "fasttext"))

    def config(self) -> dict[str, object]:
        """What the model depends on (hashed with the input files' names and sizes). Paths are taken relative to the
        data root, so the same recipe over the same data hashes the same wherever it is checked out."""
        d = asdict(self)
        root = fs.local_path(d.pop("data_root")).rstrip("/") + "/"
        d.pop("file")
        if not self.scorer:  # a field added later: fastText recipes keep their hashes
            d.pop("scorer")
        else:
            d["scorer"] = dict(self.scorer)
        for side in ("positive", "negative"):
            for src, given in zip(d[side], getattr(self, side), strict=True):
                src["paths"] = [p[len(root) :] if p.startswith(root) else p for p in src["paths"]]
                src["extract"] = given.extract.to_dict()  # as the extract stage hashes it
        return d


def _scorer(doc: dict[str, Any] | None, here: str) -> tuple[tuple[str, Any], ...]:
    """The recipe's ``scorer:`` with its defaults filled in; () for fastText (the default)."""
    if not doc or doc.get("kind", "fasttext") == "fasttext":
        return ()
    embeddings = doc.get("embeddings", "builtin:wordllama")
    if not embeddings.startswith("builtin:") and not fs.has_protocol(embeddings):
        embeddings = fs.resolve(embeddings, here)
    return (("embeddings", embeddings), ("kind", "embedding"), ("l2", float(doc.get("l2", 1e-3))))


def find_recipe(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if p.is_file():
        return p
    for c in (BUNDLED / name_or_path, BUNDLED / f"{name_or_path}.yaml"):
        if c.is_file():
            return c
    known = ", ".join(sorted(q.stem for q in BUNDLED.glob("*.yaml")))
    raise ConfigError(
        name_or_path, "", f"no such recipe file, and no bundled recipe of that name (bundled: {known})"
    )


def load_recipe(name_or_path: str) -> Recipe:
    path = find_recipe(name_or_path)
    file = str(path)
    doc = expand_tree(load_yaml(path.read_text(encoding="utf-8")), file=file)
    validate(doc, "classifier", file=file)
    here = str(path.resolve().parent)
    root = fs.resolve(doc.get("data_root", "."), here)

    def sources(key: str) -> tuple[RecipeSource, ...]:
        out = []
        for i, s in enumerate(doc.get(key, [])):
            default_field = DEFAULT_TEXT_FIELD[s["format"]]
            out.append(
                RecipeSource(
                    format=s["format"],
                    paths=tuple(fs.resolve(p, root) for p in s["paths"]),
                    text_field=s.get("text_field", default_field),
                    sample=s.get("sample"),
                    extract=ExtractConfig.from_dict(s.get("extract", {}), file, f"{key}[{i}].extract"),
                )
            )
        return tuple(out)

    recipe = Recipe(
        name=doc["name"],
        file=file,
        positive_label=doc["labels"]["positive"],
        negative_label=doc["labels"]["negative"],
        data_root=root,
        positive=sources("positive"),
        negative=sources("negative"),
        model_url=fs.resolve(doc["model_url"], here) if doc.get("model_url") else None,
        threshold=doc.get("threshold"),
        seed=doc.get("seed", 0),
        unit=doc.get("unit", "document"),
        min_chars=doc.get("min_chars", 200),
        lowercase=doc.get("preprocess", {}).get("lowercase", False),
        hyperparameters=tuple(sorted({**DCLM_HYPERPARAMETERS, **doc.get("fasttext", {})}.items())),
        validation=doc.get("validation", 0.1),
        quantize=doc.get("quantize", False),
        scorer=_scorer(doc.get("scorer"), here),
    )
    if recipe.model_url is None and not (recipe.positive and recipe.negative):
        raise ConfigError(file, "positive", "a recipe without model_url needs positive and negative sources")
    return recipe
