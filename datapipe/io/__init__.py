"""Readers and writers for the formats datapipe consumes and produces, all through fsspec URLs."""
