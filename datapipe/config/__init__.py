"""Configuration: YAML -> ``${VAR:-default}`` expansion -> schema validation -> frozen dataclasses."""

from datapipe.config.mixture import (
    ExtractConfig,
    MixtureConfig,
    SourceConfig,
    TokenizerConfig,
    check_inputs,
    find_mixture,
    load_mixture,
)

__all__ = [
    "ExtractConfig",
    "MixtureConfig",
    "SourceConfig",
    "TokenizerConfig",
    "check_inputs",
    "find_mixture",
    "load_mixture",
]
