"""``python -m datapipe.cli ARGS`` is ``datapipe ARGS``."""

from datapipe.cli import main

main()
