"""Deduplication: exact (documents and paragraphs) and fuzzy (MinHash LSH with verified edges).

The logic is plain Python/numpy here; ``pipelines/beam/dedup.py`` wires it into Beam with ``GroupByKey``s so that no
worker holds all documents, all edges or any document text.
"""
