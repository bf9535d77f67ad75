"""The datatrove engine: datapipe stages as datatrove pipeline steps on its local and Slurm executors."""
