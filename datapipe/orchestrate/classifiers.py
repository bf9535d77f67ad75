"""Turn a mixture's classifier references into checked model files, before any work starts.

``recipe:NAME`` means ``classifiers/NAME.yaml``: a recipe with ``model_url`` points at a ready model (and may bring a
published threshold); any other recipe is trained now, once, under ``<output>/classifiers/`` (a later run finds the
model by the recipe's hash). Every model is checked as its kind (:func:`datapipe.quality.scorers.check_scorer`)
before the pipeline starts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

from datapipe.config.mixture import MixtureConfig, SourceConfig
from datapipe.config.recipe import load_recipe
from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.quality.scorers import check_scorer
from datapipe.quality.train import model_url, recipe_hash, train


def check_pinned(url: str, expected: str, field: str) -> None:
    """Refuse a model file whose sha256 is not the one the mixture pins (a silently swapped model would change
    every score without a trace)."""
    if not fs.exists(url):
        raise DatapipeError(f"{url}: model file not found ({field} pins it)")
    if fs.isdir(url):
        raise DatapipeError(
            f"{url}: a folder, but {field} pins one file's sha256 (a folder's files are in the stage hash already)"
        )
    h = hashlib.sha256()
    with fs.open_binary(url) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    if h.hexdigest() != expected:
        raise DatapipeError(f"{url}: sha256 {h.hexdigest()} does not match {field} = {expected}")


def model_identity(url: str) -> str:
    """What names an unpinned model in the stage hash: a file's size (as always); for a folder (an embedding or
    transformers scorer), every file's name and size, so that new weights in the same folder are a new stage."""
    if not fs.exists(url):
        return "size:0"
    if not fs.isdir(url):
        return f"size:{fs.size(url)}"
    listing = json.dumps(sorted(fs.tree_sizes(url).items()))
    return "files:" + hashlib.sha256(listing.encode()).hexdigest()[:16]


def resolve_models(
    mixture: MixtureConfig, sources: tuple[SourceConfig, ...], log=print, train_missing: bool = True
) -> tuple[SourceConfig, ...]:
    """The sources with every classifier reference resolved to a checked model file. ``train_missing=False`` (a
    dry run) trains nothing: a recipe's model not yet trained is named where the build will write it."""
    out = []
    for src in sources:
        q = src.quality
        if q is None:
            out.append(src)
            continue
        refs = []
        for ref in q.classifiers:
            if ref.model.startswith("recipe:"):
                recipe = load_recipe(ref.model[len("recipe:") :])
                planned = model_url(recipe, fs.join(mixture.output, "classifiers"))
                if recipe.model_url is not None:
                    model, identity = recipe.model_url, f"url:{recipe.model_url}"
                elif not train_missing and not fs.exists(planned):
                    log(f"  classifier {recipe.name:<12} would be trained first, to {planned}")
                    refs.append(
                        dataclasses.replace(
                            ref,
                            model=planned,
                            positive_label=recipe.positive_label,
                            lowercase=recipe.lowercase,
                            identity=f"recipe:{recipe_hash(recipe)}",
                        )
                    )
                    continue
                else:
                    trained = train(recipe, fs.join(mixture.output, "classifiers"))
                    verb = "reusing" if trained.reused else "trained"
                    f1 = trained.report["validation"]["f1"]
                    log(f"  classifier {recipe.name:<12} {verb} {trained.model_url} (held-out F1 {f1})")
                    model, identity = trained.model_url, f"recipe:{recipe_hash(recipe)}"
                ref = dataclasses.replace(
                    ref,
                    model=model,
                    positive_label=recipe.positive_label,
                    lowercase=recipe.lowercase,
                    identity=identity,
                )
            elif ref.sha256:
                check_pinned(
                    ref.model, ref.sha256, f"sources.{src.name}.quality.classifiers.{ref.name}.sha256"
                )
                ref = dataclasses.replace(ref, identity=f"sha256:{ref.sha256}")
            else:
                ref = dataclasses.replace(ref, identity=model_identity(ref.model))
            check_scorer(ref.model, ref.positive_label)
            refs.append(ref)
        out.append(dataclasses.replace(src, quality=dataclasses.replace(q, classifiers=tuple(refs))))
    return tuple(out)
