"""Types of the rules' compiled verdicts (``verdicts.pyx``; built by ``python -m datapipe.extract.build``)."""

from datapipe.extract.blocks import Block, Container

def decide(blocks: list[Block], containers: list[Container]) -> list[str]: ...
