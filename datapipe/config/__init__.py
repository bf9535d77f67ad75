"""Configuration: YAML -> ``${VAR:-default}`` expansion -> schema validation -> frozen dataclasses."""

from datapipe.config.mixture import (
    ExtractConfig,
    FilterConfig,
    LangidConfig,
    MixtureConfig,
    SourceConfig,
    TokenizerConfig,
    check_inputs,
    find_mixture,
    load_mixture,
)

__all__ = [
    "ExtractConfig",
    "FilterConfig",
    "LangidConfig",
    "MixtureConfig",
    "SourceConfig",
    "TokenizerConfig",
    "check_inputs",
    "find_mixture",
    "load_mixture",
]
