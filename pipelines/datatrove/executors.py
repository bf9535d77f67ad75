"""The datatrove executors a build can run on (``--executor``): named once, for the launcher's flags
(:mod:`pipelines.datatrove.entry`) and the engine that builds them (:mod:`pipelines.datatrove.engine`)."""

EXECUTORS = ("local", "slurm", "ray")
