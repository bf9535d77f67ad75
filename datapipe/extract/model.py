"""The learned parts of the extractor: a gradient-boosted tree ensemble over each block's features that says how
likely the block is main content (:class:`BlockModel`), the choice of the blocks that make the page's text
(:func:`choose`), and the models shipped as package data (:func:`shipped`).

Why learned: written rules decide well on articles, but on forums, shops, listings and service pages one rule
cannot serve all (a product grid's links are its content, a menu's are not; a forum's comments are its posts).
Trained by ``classifiers/extractor.py`` on WCXB's development split (CC-BY-4.0) and measured only on the folds it
did not see (``benchmarks/wcxb.py``; figures in ``docs/web-pipeline.md``). The trees are LightGBM's (trained
there, not here): a model is stored as flat arrays and walked by :func:`datapipe.extract.scoring.forest_scores`,
with the same scores as LightGBM's own prediction and without LightGBM installed.

Why the blocks are chosen per page and not by a fixed cut-off: the benchmark's F1 is per page, and a page whose
blocks all look doubtful (a product grid, a JavaScript shell) still has a best text. :func:`choose` keeps the
blocks in order of probability for as long as the expected F1 grows (the plug-in rule for F1: keep the top ``k``
maximizing ``2 * sum(p w) / (sum(w) + total(p w))`` over the ``k`` kept, ``w`` a block's words), never one below
:attr:`BlockModel.floor`.

Deterministic: a model is a fixed set of arrays; nothing depends on the pages seen before.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

MODELS = "models"  # the package data folder beside this module
BLOCKS = "blocks"
PAGE_TYPES = "page_types"


@dataclass(frozen=True)
class Forest:
    """A tree ensemble as flat arrays (see :func:`datapipe.extract.scoring.forest_scores`)."""

    roots: np.ndarray  # int32, a tree's first node
    feature: np.ndarray  # int32, per inner node
    threshold: np.ndarray  # float64
    left: np.ndarray  # int32, a child < 0 is the leaf ~child
    right: np.ndarray  # int32
    default_left: np.ndarray  # uint8: where a missing value (NaN) goes
    leaf_value: np.ndarray  # float64
    classes: int = 1

    def raw(self, x: np.ndarray) -> np.ndarray:
        """Each row's raw score per class (rows x classes)."""
        from datapipe.extract.scoring import forest_scores

        x = np.ascontiguousarray(x, dtype=np.float32)
        return forest_scores(x, self.nodes, self.roots, self.leaf_value, self.classes)

    @functools.cached_property
    def nodes(self) -> np.ndarray:
        """The inner nodes as the compiled walk reads them (:func:`datapipe.extract.scoring.pack_nodes`: one record a
        node), made once per loaded model."""
        from datapipe.extract.scoring import pack_nodes

        return pack_nodes(self.feature, self.threshold, self.left, self.right, self.default_left)

    @classmethod
    def from_lightgbm(cls, dump: dict[str, Any]) -> Forest:
        """From ``Booster.dump_model()``: every tree's nodes numbered depth-first, leaves apart."""
        roots: list[int] = []
        feature: list[int] = []
        threshold: list[float] = []
        left: list[int] = []
        right: list[int] = []
        default_left: list[int] = []
        leaves: list[float] = []

        def add(node: dict[str, Any]) -> int:
            if "leaf_value" in node:
                leaves.append(float(node["leaf_value"]))
                return ~(len(leaves) - 1)
            if node.get("decision_type", "<=") != "<=":
                raise ValueError(
                    f"a tree splits by {node['decision_type']!r}: only numeric '<=' splits are supported"
                )
            at = len(feature)
            feature.append(int(node["split_feature"]))
            threshold.append(float(node["threshold"]))
            default_left.append(1 if node.get("default_left", True) else 0)
            left.append(0)
            right.append(0)
            left[at] = add(node["left_child"])
            right[at] = add(node["right_child"])
            return at

        for tree in dump["tree_info"]:
            roots.append(add(tree["tree_structure"]))
        return cls(
            np.array(roots, dtype=np.int32),
            np.array(feature, dtype=np.int32),
            np.array(threshold, dtype=np.float64),
            np.array(left, dtype=np.int32),
            np.array(right, dtype=np.int32),
            np.array(default_left, dtype=np.uint8),
            np.array(leaves, dtype=np.float64),
            int(dump.get("num_class", 1)),
        )

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "roots": self.roots,
            "feature": self.feature,
            "threshold": self.threshold,
            "left": self.left,
            "right": self.right,
            "default_left": self.default_left,
            "leaf_value": self.leaf_value,
            "classes": np.array([self.classes], dtype=np.int32),
        }

    @classmethod
    def from_arrays(cls, a: Any) -> Forest:
        return cls(
            a["roots"].astype(np.int32),
            a["feature"].astype(np.int32),
            a["threshold"].astype(np.float64),
            a["left"].astype(np.int32),
            a["right"].astype(np.int32),
            a["default_left"].astype(np.uint8),
            a["leaf_value"].astype(np.float64),
            int(a["classes"][0]),
        )


@dataclass(frozen=True)
class Learned:
    """A forest with what it was trained on: its feature columns' names (and, for a classifier of pages, its class
    names), the cut-off below which a block is never kept, and a digest of its arrays (its version)."""

    forest: Forest
    features: tuple[str, ...]
    classes: tuple[str, ...] = ()
    floor: float = 0.0
    digest: str = ""
    trained_on: str = ""
    vocabulary: str = ""  # the digest of the word lists its features were computed with (pagetype.vocabulary)

    def check(self, features: tuple[str, ...], what: str, vocabulary: str = "") -> None:
        """Refuse a model trained on other features, or on features computed with other word lists (a group's
        words changed: the same column names, other values)."""
        if self.features != features:
            missing = [f for f in features if f not in self.features][:3]
            raise ValueError(
                f"the {what} model was trained on other features than this datapipe computes "
                f"(first differences: {missing}); retrain it: python -m classifiers.extractor"
            )
        if vocabulary and self.vocabulary != vocabulary:
            raise ValueError(
                f"the {what} model was trained with other word lists (vocabulary {self.vocabulary or 'unrecorded'}, "
                f"this datapipe's {vocabulary}); retrain it: python -m classifiers.extractor"
            )

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """Rows x classes (one column for a binary model: the positive class)."""
        raw = self.forest.raw(x)
        if self.forest.classes == 1:
            return 1.0 / (1.0 + np.exp(-raw))
        z = np.exp(raw - raw.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)

    def save(self, folder: Path, name: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        arrays: Any = self.forest.arrays()  # (numpy's stub reads ** as its allow_pickle)
        with open(folder / f"{name}.npz", "wb") as f:
            np.savez_compressed(f, **arrays)
        meta = {
            "features": list(self.features),
            "classes": list(self.classes),
            "floor": self.floor,
            "digest": forest_digest(self.forest),
            "trained_on": self.trained_on,
            "vocabulary": self.vocabulary,
        }
        (folder / f"{name}.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, folder: Any, name: str) -> Learned:
        """From ``folder`` (a path or a package-data traversable): ``name.npz`` and ``name.json``."""
        meta = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
        with (folder / f"{name}.npz").open("rb") as f:
            forest = Forest.from_arrays(np.load(f))
        digest = forest_digest(forest)
        if meta.get("digest") and meta["digest"] != digest:
            raise ValueError(
                f"{folder}/{name}.npz does not match the digest in {name}.json: the model is damaged"
            )
        return cls(
            forest,
            tuple(meta["features"]),
            tuple(meta["classes"]),
            float(meta["floor"]),
            digest,
            meta["trained_on"],
            meta.get("vocabulary", ""),
        )


def forest_digest(forest: Forest) -> str:
    h = hashlib.sha256()
    for key, value in forest.arrays().items():
        h.update(key.encode())
        h.update(np.ascontiguousarray(value).tobytes())
    return h.hexdigest()[:16]


def choose(p: np.ndarray, weight: np.ndarray, floor: float) -> np.ndarray:
    """Which blocks to keep: the top ``k`` by probability ``p`` that maximize the expected F1 with weights
    ``weight`` (a block's words), never one below ``floor``; the order of equal probabilities is the page's. The
    reference: the extractor runs :func:`datapipe.extract.scoring.choose`, the same arithmetic compiled."""
    keep = np.zeros(len(p), dtype=bool)
    if len(p) == 0:
        return keep
    order = np.argsort(-p, kind="stable")
    pw = p * weight
    expected = 2.0 * np.cumsum(pw[order]) / (np.cumsum(weight[order]) + pw.sum() + 1e-9)
    k = int(np.argmax(expected))
    keep[order[: k + 1]] = True
    keep &= p >= floor
    return keep


@dataclass(frozen=True)
class Models:
    """The extractor's learned parts: the block model and the page-type model."""

    blocks: Learned
    page_types: Learned


def load_models(folder: object) -> Models:
    """The two models in ``folder``, checked to read the features this datapipe computes, with its word lists."""
    from datapipe.extract.pagetype import BLOCK_MODEL_FEATURES, vocabulary
    from datapipe.extract.pagetype import FEATURES as PAGE_FEATURES

    models = Models(Learned.load(folder, BLOCKS), Learned.load(folder, PAGE_TYPES))
    words = vocabulary()
    models.blocks.check(BLOCK_MODEL_FEATURES, "block", words)
    models.page_types.check(PAGE_FEATURES, "page-type", words)
    return models


@functools.cache
def shipped() -> Models:
    """The models shipped with datapipe (package data), loaded once per process."""
    return load_models(resources.files("datapipe.extract") / MODELS)
