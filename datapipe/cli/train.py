"""``datapipe train``, ``datapipe export-hf`` and ``datapipe eval``: the trainer's commands (their arguments and
process set-up live with the trainer, in :mod:`datapipe.train.cli`)."""

from __future__ import annotations

from datapipe.train.cli import (
    add_evaluate_parser,
    add_export_parser,
    add_train_parser,
    cmd_evaluate,
    cmd_export_hf,
    cmd_train,
)

NAME = "train"


def add_parser(sub) -> None:
    for add, run in (
        (add_train_parser, cmd_train),
        (add_export_parser, cmd_export_hf),
        (add_evaluate_parser, cmd_evaluate),
    ):
        add(sub).set_defaults(handler=run)
