"""``datapipe browse OUT``: a local web app over a finished build (funnels, documents by outcome and reason, a
document's decisions across stages, duplicate clusters, cache rows decoded, training runs)."""

from datapipe.report import BROWSE_PORT as PORT  # the default port, which the static report's links point at

__all__ = ["PORT"]
