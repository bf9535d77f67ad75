"""datapipe: reproducible, resumable language-model data pipelines.

The library holds every decision about a document (the stages, the global phases' decisions), the orchestration
(``datapipe.orchestrate``), the token store and the loader/trainer, and imports no engine; the engines (Beam, datatrove),
which only move data, live in the top-level ``pipelines`` package.

This module is the public face: the entry points users need, then what benchmarks and end-to-end checks drive
directly (stages, their configs, the store's pieces, the extractor's parts), grouped by concern, by name, so that
code outside the package does not depend on where each lives inside it (``tests/test_architecture.py`` holds
``benchmarks/`` to it). A name that differs from its definition's says which it is (``train_classifier``).

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

__version__ = "0.1.0"

# public name -> the module that defines it ("module:attribute" where the public name differs; "module:" for a
# module itself)
_EXPORTS: dict[str, str] = {
    # build a mixture, and read what it wrote
    "build_mixture": "datapipe.orchestrate.launch",
    "load_mixture": "datapipe.config.mixture",
    "MixtureConfig": "datapipe.config.mixture",
    "TokenizerConfig": "datapipe.config.stages",
    "read_manifest": "datapipe.store.manifest",
    "load_manifest": "datapipe.store.manifest",
    "Manifest": "datapipe.store.manifest",
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
    "ReadRequest": "datapipe.io.readers",
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
    # --- what benchmarks and end-to-end checks drive directly (benchmarks/ imports nothing deeper: a test says so)
    # stages, their configs and statistics
    "ExtractStage": "datapipe.extract.stage",
    "DedupStage": "datapipe.dedup.stage",
    "QualityStage": "datapipe.quality.stage",
    "DeconStage": "datapipe.decon.stage",
    "StageStats": "datapipe.runtime.stats",
    # what a new stage is made of (docs/extending.md)
    "DocumentStage": "datapipe.runtime.stage",
    "TwoPhaseStage": "datapipe.runtime.stage",
    "Removal": "datapipe.runtime.evidence",
    "LangidConfig": "datapipe.config.stages",
    "DedupConfig": "datapipe.config.stages",
    "MinHashConfig": "datapipe.config.stages",
    "DeconConfig": "datapipe.config.stages",
    "EvalSet": "datapipe.config.stages",
    "ClassifierRef": "datapipe.config.stages",
    "QualityConfig": "datapipe.config.stages",
    # files, models, the store
    "fs": "datapipe.io:fs",
    "write_records_atomic": "datapipe.io.jsonl",
    "bundled_model_path": "datapipe.io.models",
    "load_fasttext": "datapipe.io.models",
    "JaggedReader": "datapipe.store.jagged",
    "concat_jagged": "datapipe.store.jagged",
    "write_jagged": "datapipe.store.jagged",
    "write_rows_npy": "datapipe.store.jagged",
    "open_array": "datapipe.store.tensorstore_spec",
    "CACHE_FIELD": "datapipe.store.cache:FIELD",
    "LEDGER": "datapipe.store.cache",
    "make_ledger": "datapipe.store.cache",
    "Ledger": "datapipe.store.cache",
    "write_ledger": "datapipe.store.cache",
    "Component": "datapipe.store.manifest",
    "write_manifest": "datapipe.store.manifest",
    # extraction
    "extract_content": "datapipe.extract.content:",
    "main_content_text": "datapipe.extract.content",
    "forget_names": "datapipe.extract.content",
    "analyze": "datapipe.extract.analysis",
    "ExtractorModels": "datapipe.extract.model:Models",
    "decode_html": "datapipe.extract.html",
    "html_to_text": "datapipe.extract.html",
    "trafilatura_text": "datapipe.extract.html",
    # languages and filters
    "raw_config": "datapipe.languages.table",
    "language_config": "datapipe.languages.table",
    "lid176_language": "datapipe.languages.table",
    "spacy_words": "datapipe.languages.spacy_words:",
    "FilterChain": "datapipe.filters.presets",
    "fineweb2_rules": "datapipe.filters.fineweb2",
    # exact-substring dedup: its units (the package's own face), the brute-force reference and the span cutter
    "substrings": "datapipe.substrings:",
    "substrings_reference": "datapipe.substrings.reference:",
    "substring_spans": "datapipe.substrings.apply:spans_of",
    "kept_ranges": "datapipe.substrings.apply",
    # dedup and its global phase
    "Shingler": "datapipe.dedup.minhash",
    "WordMinHash": "datapipe.dedup.wordsig",
    "all_pairs_jaccard": "datapipe.dedup.evaluate",
    "pair_metrics": "datapipe.dedup.evaluate",
    "read_removals": "datapipe.dedup.store",
    "DEDUP_TASKS": "datapipe.dedup.spill",
    "DEDUP_KEY": "datapipe.dedup.spill:KEY",
    "DEDUP_BAND": "datapipe.dedup.spill:BAND",
    "DEDUP_PHASE": "datapipe.orchestrate.registry:DEDUP",
    # quality classifiers
    "load_recipe": "datapipe.config.recipe",
    "preprocess": "datapipe.quality.model",
    "train_classifier": "datapipe.quality.train:train",
    "training_examples": "datapipe.quality.train:examples",
    "roc_auc": "datapipe.quality.train",
    "bucket_boundaries": "datapipe.quality.ensemble:boundaries",
    "bucket_of": "datapipe.quality.ensemble",
    "combine_buckets": "datapipe.quality.ensemble:combine",
    "distill": "datapipe.quality.distill",
    "TransformersScorer": "datapipe.quality.transformer",
    "TRANSFORMER_BATCH_TOKENS": "datapipe.quality.transformer:BATCH_TOKENS",
    # a crawl by name
    "parse_listing": "datapipe.crawl.listing",
    "Sample": "datapipe.crawl.sample",
    "sample_files": "datapipe.crawl.sample:sample",
    # reading a build, and the browser
    "mixture_chains": "datapipe.report.collect",
    "spawn_browser": "datapipe.browse.launch:spawn",
    "stop_browser": "datapipe.browse.launch:stop",
    # the trainer's attention, for its kernels' checks
    "attention_kernel": "datapipe.train.model",
    "attention_mask": "datapipe.train.model",
    "reference_attention": "datapipe.train.model:_attention",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> object:
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module 'datapipe' has no attribute {name!r}")
    module, _, attribute = where.partition(":")
    loaded = importlib.import_module(module)
    value = loaded if ":" in where and not attribute else getattr(loaded, attribute or name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
