"""``datapipe inspect PATH``: a token cache, a mixture output or a stage folder: rows, tokens, tokenizer, the first
rows decoded; a stage's documents kept or removed by a rule; a document's duplicate cluster."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from datapipe.cli.command import subcommand
from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.runtime.stage import STAGE_JSON
from datapipe.store.cache import LEDGER, TokenCache
from datapipe.store.manifest import MANIFEST, load_manifest, open_component
from datapipe.tokenize.decode import decoder_for

NAME = "inspect"


def _shorten(text: str, n: int) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= n else text[:n] + f"... (+{len(text) - n} chars)"


def _print_cache(
    cache: TokenCache, rows: int, chars: int, decoder: Callable[[list[int]], str] | None
) -> None:
    tok = cache.tokenizer
    print(f"cache:     {cache.path}")
    print(f"rows:      {cache.num_rows:,}")
    print(f"tokens:    {cache.num_tokens:,}")
    print(
        f"tokenizer: {tok.name} (vocab {tok.vocab_size:,}, sha256 {tok.sha256[:12]}, bos={tok.add_bos}, eos={tok.add_eos})"
    )
    print(f"shards:    {len(cache.ledger.shard_rows)}")
    if decoder is None:
        print("(tokenizer not loadable here; rows shown as ids)")
    for i in range(min(rows, cache.num_rows)):
        ids = cache.row(i).tolist()
        shown = decoder(ids) if decoder else " ".join(map(str, ids[:64]))
        print(f"  row {i} ({len(ids)} tokens): {_shorten(shown, chars)}")


def run(args: argparse.Namespace) -> int:
    path = args.path.rstrip("/")
    if args.cluster is not None:
        return _print_cluster(path, args.cluster, args.chars)
    if fs.exists(fs.join(path, STAGE_JSON)) and not fs.exists(fs.join(path, LEDGER)):
        from datapipe.report.inspect_stage import inspect_stage

        return inspect_stage(path, args.rows, args.chars, args.removed_by, args.json)
    if args.json:
        from datapipe.report.inspect_stage import inspect_json

        print(json.dumps(inspect_json(path, args.rows), indent=2))
        return 0
    if fs.exists(fs.join(path, LEDGER)):
        cache = TokenCache.open(path)
        _print_cache(cache, args.rows, args.chars, decoder_for(cache))
        return 0
    if path.endswith(".json") or fs.exists(fs.join(path, MANIFEST)):
        m = load_manifest(path)
        print(f"mixture {m.name} (seed {m.seed}, tokenizer {m.tokenizer.name})")
        print(f"{'component':<18} {'weight':>9} {'share':>7} {'rows':>8} {'tokens':>12}")
        for c in m.components:
            print(f"{c.name:<18} {c.weight:>9.4g} {m.share(c):>7.2%} {c.rows:>8,} {c.tokens:>12,}")
        total = sum(c.tokens for c in m.components)
        print(f"{'total':<18} {'':>9} {'':>7} {sum(c.rows for c in m.components):>8,} {total:>12,}")
        for c in m.components:
            print()
            cache = open_component(m, c.name)
            _print_cache(cache, args.rows, args.chars, decoder_for(cache, output=m.folder))
        return 0
    raise DatapipeError(f"{path}: neither a token cache ({LEDGER}) nor a mixture output ({MANIFEST})")


def _print_cluster(path: str, doc_id: str, chars: int) -> int:
    from datapipe.report.clusters import cluster_of, kept_text

    kept, removed = cluster_of(path, doc_id)
    print(f"cluster of {kept}: {len(removed) + 1} copies, {len(removed)} removed")
    text = kept_text(path, kept)
    print(f"  kept     {kept}: {_shorten(text, chars) if text is not None else '(not among the kept parts)'}")
    for r in removed:
        print(f"  removed  {r['id']} {r['url']} [{r['reason']}, jaccard {r['jaccard']:.4g}] ({r['ref']})")
    return 0


INSPECT_HELP = (
    "show a mixture output, a token cache, or a stage folder's documents (kept, or removed by a rule)"
)
INSPECT_OPERAND = ("path", "a mixture output folder / mixture.json, a cache folder, or a stage folder")
INSPECT_EXAMPLES = (
    "examples:\n  datapipe inspect out/dclm_phase3\n  datapipe inspect out/dclm_phase3/wiki/tokenize-fd312c96 --rows 3\n"
    "  datapipe inspect out/dclm_phase3/dolmino_dclm/filter-525fad46 --removed-by filter/gopher_short_doc\n"
    "  datapipe inspect out/dclm_phase3 --json"
)


def add_parser(sub) -> None:
    p = subcommand(
        sub,
        "inspect",
        INSPECT_HELP,
        INSPECT_EXAMPLES,
        operand=INSPECT_OPERAND,
    )
    p.add_argument("--rows", type=int, default=3, help="rows or documents to show (default 3)")
    p.add_argument(
        "--chars", type=int, default=240, help="characters of each decoded row to show (default 240)"
    )
    p.add_argument("--removed-by", metavar="RULE", help="stage folder: documents removed by this reason")
    p.add_argument(
        "--cluster", metavar="ID", help="dedup stage folder: the duplicate cluster of this document (its id)"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)
