"""Compiled (numba) helpers that more than one stage uses."""
