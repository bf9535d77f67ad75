"""``datapipe browse OUT``: a local web app over a finished build (funnels, documents by outcome and reason, a
document's decisions across stages, duplicate clusters, cache rows decoded, training runs)."""

PORT = 8765  # the default port: the static report's links point at http://127.0.0.1:PORT/
