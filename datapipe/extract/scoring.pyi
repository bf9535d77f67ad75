"""Types of the learned extractor's compiled arithmetic (``scoring.pyx``; built by ``python -m datapipe.extract.build``)."""

from typing import Any

import numpy as np

STATS: tuple[str, ...]

def text_stats(texts: list[str]) -> np.ndarray: ...

NODE: np.dtype
FEW_ROWS: int

def pack_nodes(
    feature: np.ndarray, threshold: np.ndarray, left: np.ndarray, right: np.ndarray, default_left: np.ndarray
) -> np.ndarray: ...
def forest_scores(
    x: np.ndarray, nodes: np.ndarray, roots: np.ndarray, leaf_value: np.ndarray, classes: int
) -> np.ndarray: ...
def fill_features(
    blocks: list[Any],
    why: list[str],
    containers: list[Any],
    kinds: dict[str, int],
    whys: dict[str, int],
    n_kinds: int,
    n_whys: int,
    n_groups: int,
    li_kind: int,
    p_kind: int,
    prose_chars: float,
    n_features: int,
) -> np.ndarray: ...
def choose(p: np.ndarray, weight: np.ndarray, floor: float) -> np.ndarray: ...
def kept_why(keep: np.ndarray, why: list[str]) -> list[str]: ...
def page_block_sums(
    x: np.ndarray,
    chars: np.ndarray,
    kind_columns: np.ndarray,
    link_column: int,
    currency_column: int,
    group_columns: np.ndarray,
    prose_chars: float,
) -> tuple[list[float], np.ndarray, np.ndarray, float, np.ndarray]: ...
def pairwise_sum(a: np.ndarray) -> float: ...
def page_block_part(
    x: np.ndarray,
    chars: np.ndarray,
    kind_columns: np.ndarray,
    li: int,
    tr: int,
    pre: int,
    link_column: int,
    currency_column: int,
    group_columns: np.ndarray,
    prose_chars: float,
    slack: float = 1.0,
) -> np.ndarray | None: ...
