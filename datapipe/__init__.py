"""datapipe: reproducible, resumable language-model data pipelines.

The library holds every decision about a document (the stages, the global phases' decisions), the orchestration
(``datapipe.build``), the token store and the loader/trainer, and imports no engine; the engines (Beam, datatrove),
which only move data, live in the top-level ``pipelines`` package.
"""

__version__ = "0.1.0"
