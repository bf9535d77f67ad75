"""Imported by the local engine's fork server before it forks any worker (``multiprocessing``'s preload): the
stack every worker needs, loaded once and shared by the workers' pages (:mod:`datapipe.orchestrate.warm`).

Importing this module is the work: the fork server imports its preload modules by name and nothing else. The
collector is off while it imports (the imports make many objects and almost no garbage) and what they made is
frozen, so that the workers' collections never walk it and its pages stay shared after the fork.

English's word splitter (spaCy's tokenizer and its affix tables, :func:`datapipe.languages.spacy_words.splitter`)
is built here too, once, and its compiled chunk scan loaded, rather than in each worker's first filter task (or its
warm-up): the filters' word counts (every preset's Gopher rules) and English's per-language rules use it, and it
took each worker ~0.2-0.3 s of CPU (the scan's load 0.08 s of it) after the extract stage, on the build's critical
path. On e2e's 8-page build, eight alternating runs each: median CPU 3.09 s against 3.31 s with the splitter
alone (2026-12-07; the machine was shared, the walls too noisy to compare). A build that splits no English words
pays it in the fork server only, beside the launcher's planning.
"""

from __future__ import annotations

import gc

gc.disable()
try:
    from datapipe.orchestrate.registry import WORKER_MODULES
    from datapipe.orchestrate.warm import warm_stack

    # jsonschema (the tokenize stage's finish validates the cache's ledger: each worker imported it in its warm-up)
    warm_stack((*WORKER_MODULES, "pipelines.local.worker", "jsonschema", "referencing"))
    from datapipe.languages.spacy_words import splitter
    from datapipe.runtime.stage import WARM_TEXT

    splitter("en").split_ids(WARM_TEXT)  # built, and its compiled chunk scan loaded
except Exception:  # noqa: BLE001 - the fork server ignores only ImportError; a worker loads what it needs itself
    pass
finally:
    gc.freeze()
    gc.enable()
