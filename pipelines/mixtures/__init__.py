"""The mixtures bundled with datapipe, found by name (``--mixture dclm_phase3.yaml``) by the build launcher."""

from pathlib import Path

BUNDLED = Path(__file__).resolve().parent
