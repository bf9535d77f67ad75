"""Engine glue: Beam pipelines (and, later, datatrove steps) around datapipe's stage logic, and the bundled mixtures.

Nothing here decides what happens to a document; that is ``datapipe``'s job. This package only maps shards onto
workers and collects statistics.
"""
