"""What the block model reads of each block: a row of numbers per block (:func:`block_features`), made from the walk's
record (blocks, named containers, the groups of tags and names around each block) and the rules' verdicts, for the
whole page at once.

Why a module of its own: the training script (``classifiers/extractor.py``) and the extractor must compute exactly
the same numbers, so both call this one function; :data:`FEATURES` names every column, and a model records the
names it was trained on (:mod:`datapipe.extract.model` refuses another layout). Vectorized over the page's blocks
(numpy, and :func:`datapipe.extract.scoring.text_stats` for the characters): a Python loop per block and column cost
more than the walk.

The columns, by family (what each says of the block):

- its kind (paragraph, heading level, list item, table row, preformatted), and the rules' verdict on it
  (:func:`datapipe.extract.rules.decide`: kept, or why it goes: by name, outside the content root, links, ...);
- its size and links: characters (log), words (log), the share of its text in links;
- where it is: its place among the blocks and in the page's text; inside a content root (its tier), inside how many
  parts named as boilerplate;
- the groups of tags and names of the elements around it (:mod:`datapipe.extract.signals`), one column each;
- its text: digits and capitals among its letters, whether it ends a sentence, currency signs, sentences, how often
  the page repeats it;
- its neighbours, two on each side: kept by the rules, size, links, kind, whether of its own kind;
- the page: its text (log), its blocks (log), the share the rules keep, the share in links;
- its regions, the blocks that share its innermost 1..4 structural elements: how many, their share of the page, of
  links, kept by the rules, list items, and its own share of them;
- the span the rules keep (from their first kept block to their last): inside it or not and how far, how far the
  nearest paragraph of prose is.
"""

from __future__ import annotations

import numpy as np

from datapipe.extract.blocks import Block, Container
from datapipe.extract.signals import GROUPS

KINDS = ("p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "tr", "pre")
# the rules' verdicts (the part of a reason before ``:``), "" for kept; anything else counts as "other"
WHYS = (
    "",
    "name",
    "teaser",
    "paywall",
    "outside-root",
    "links",
    "notice",
    "repeated",
    "appeal",
    "caption",
    "card",
    "short",
    "heading",
    "tail",
    "box",
    "other",
)
TEXT_STATS = ("digit_share", "upper_share", "ends_sentence", "currency", "sentences", "repeats")
NEIGHBOURS = (-2, -1, 1, 2)
NEIGHBOUR_COLUMNS = ("kept", "chars", "links", "kind", "same_kind")
REGION_LEVELS = (1, 2, 3, 4)
REGION_COLUMNS = ("blocks", "page_share", "links", "kept", "items", "own_share")
PROSE = 200  # a paragraph this long is prose (the span features' nearest prose)

FEATURES: tuple[str, ...] = (
    *(f"kind:{k}" for k in KINDS),
    *(f"why:{w or 'kept'}" for w in WHYS),
    "chars",
    "words",
    "link_share",
    "place",
    "starts_at",
    "ends_at",
    "root_tier",
    "boiler_depth",
    *(f"group:{g}" for g in GROUPS),
    *(f"text:{s}" for s in TEXT_STATS),
    *(f"next{d:+d}:{c}" for d in NEIGHBOURS for c in NEIGHBOUR_COLUMNS),
    "page:chars",
    "page:blocks",
    "page:kept_share",
    "page:link_share",
    *(f"region{k}:{c}" for k in REGION_LEVELS for c in REGION_COLUMNS),
    "span:inside",
    "span:after_first",
    "span:before_last",
    "span:prose_distance",
    "span:prose_blocks",
    "span:kept_blocks",
)
_KIND = {k: i for i, k in enumerate(KINDS)}
_WHY = {w: i for i, w in enumerate(WHYS)}


def block_features(
    blocks: list[Block], containers: list[Container], why: list[str], extra: int = 0
) -> np.ndarray:
    """One row of :data:`FEATURES` per block (float32), then ``extra`` columns of zeros (the extractor writes its
    page's type probabilities there: the block model's input made in place, where a second matrix with them
    copied the first). The containers and verdicts are reduced here; the matrix is filled in C
    (:func:`datapipe.extract.scoring.fill_features`): with numpy, about a hundred small array operations a page
    cost 1.5-2 ms, a fifth of a page's extraction."""
    from datapipe.extract.scoring import fill_features

    n = len(blocks)
    if n == 0:
        return np.zeros((0, len(FEATURES) + extra), dtype=np.float32)
    return fill_features(
        blocks,
        why,
        containers,
        _KIND,
        _WHY,
        len(KINDS),
        len(WHYS),
        len(GROUPS),
        _KIND["li"],
        _KIND["p"],
        float(PROSE),
        len(FEATURES) + extra,
    )
