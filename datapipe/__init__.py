"""datapipe: reproducible, resumable language-model data pipelines.

The library holds the stage logic (plain Python, no Beam), the token store and the loader/trainer; the Beam glue
lives in the top-level ``pipelines`` package.
"""

__version__ = "0.1.0"
