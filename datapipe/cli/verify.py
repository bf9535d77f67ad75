"""``datapipe verify PATH``: check a token cache, or every cache of a mixture (offsets, counts, token ids)."""

from __future__ import annotations

import argparse

from datapipe.cli.command import subcommand
from datapipe.io import fs
from datapipe.store.cache import LEDGER
from datapipe.store.manifest import load_manifest

NAME = "verify"


def run(args: argparse.Namespace) -> int:
    from datapipe.store.verify import verify_cache

    path = args.path.rstrip("/")
    if fs.exists(fs.join(path, LEDGER)):
        caches = [path]
    else:
        m = load_manifest(path)
        caches = [c.cache if fs.has_protocol(c.cache) else fs.join(m.folder, c.cache) for c in m.components]
    failed = 0
    for cache in caches:
        problems = verify_cache(cache)
        if problems:
            failed += 1
            for p in problems:
                print(f"BAD {p}")
        else:
            print(f"ok  {cache}")
    return 1 if failed else 0


VERIFY_HELP = "check a token cache (or every cache of a mixture): offsets, counts, ids"
VERIFY_OPERAND = ("path", "a cache folder or a mixture output folder / mixture.json")
VERIFY_EXAMPLES = (
    "examples:\n  datapipe verify out/dclm_phase3\n  datapipe verify out/dclm_phase3/wiki/tokenize-fd312c96"
)


def add_parser(sub) -> None:
    subcommand(sub, "verify", VERIFY_HELP, VERIFY_EXAMPLES, operand=VERIFY_OPERAND, handler=run)
