"""Configuration: YAML -> ``${VAR:-default}`` expansion -> schema validation -> frozen dataclasses.

A leaf of the package: it imports ``io`` and ``errors`` only, never a stage or an engine. Import its modules by
name (``config.mixture``, ``config.stages``, ``config.schema``): this file imports nothing, so a reader that
validates a ledger against its schema does not load the mixture loader.
"""
