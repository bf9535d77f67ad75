"""Deterministic streaming of a weighted mixture: permutations, block counts (the loader itself is in progress)."""
