"""Deterministic streaming of a weighted mixture: keyed permutations, sequences, block mixing and the loader."""
