"""datapipe: reproducible, resumable language-model data pipelines.

The library holds every decision about a document (the stages, the global phases' decisions), the orchestration
(``datapipe.orchestrate``), the token store and the loader/trainer, and imports no engine; the engines (Beam, datatrove),
which only move data, live in the top-level ``pipelines`` package.

This module is the public face: the few entry points users, tests and benchmarks need, by name, so that code
outside the package does not depend on where each lives inside it.

    import datapipe
    datapipe.build_mixture("dclm_phase3.yaml", "out/dclm", "--dry-run")  # build a mixture (returns the status)
    cache = datapipe.TokenCache.open("out/dclm/wiki/tokenize-fd312c96")   # open a cache
    loader = datapipe.MixtureLoader(...)                                  # deterministic batches
    text = datapipe.HtmlExtractor()((html_bytes, "utf-8"))               # each document decision

The names load on first use (PEP 562): ``import datapipe`` stays as cheap as it was (workers and the CLI import it
for ``__version__``), and the package's import floors (``pyproject.toml``, docs/architecture.md) stay what the
modules themselves import, not what this list re-exports.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    # build a mixture, and read what it wrote
    "build_mixture": "datapipe.orchestrate.launch",
    "load_mixture": "datapipe.config.mixture",
    "MixtureConfig": "datapipe.config.mixture",
    "TokenizerConfig": "datapipe.config.stages",
    "read_manifest": "datapipe.store.manifest",
    "open_component": "datapipe.store.manifest",
    "TokenCache": "datapipe.store.cache",
    "read_records": "datapipe.io.jsonl",
    "read_removed": "datapipe.runtime.decisions",
    # train on it
    "MixtureLoader": "datapipe.data.loader",
    "Trainer": "datapipe.train.trainer",
    "load_train_config": "datapipe.train.config",
    "parse_overrides": "datapipe.train.config",
    # read inputs
    "read_shard": "datapipe.io.readers",
    "check_shard": "datapipe.io.readers",
    "FORMATS": "datapipe.io.readers",
    "Shard": "datapipe.io.shards",
    "make_shards": "datapipe.io.shards",
    "ReadTally": "datapipe.io.tally",
    # each document decision
    "HtmlExtractor": "datapipe.extract.html",
    "LanguageIdentifier": "datapipe.langid.identifier",
    "word_splitter": "datapipe.languages.words",
    "build_chain": "datapipe.filters.presets",
    "FilterDoc": "datapipe.filters.document",
    "MinHasher": "datapipe.dedup.minhash",
    "normalize": "datapipe.kernels.normalize",
    "load_scorer": "datapipe.quality.scorers",
    "load_tokenizer": "datapipe.tokenize.tokenizer",
    # errors a user sees as one line
    "DatapipeError": "datapipe.errors",
    "ConfigError": "datapipe.errors",
    "InputError": "datapipe.errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'datapipe' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
