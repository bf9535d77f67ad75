"""What a build did, read back from its output folder: each component's chain of stages (from the cache back to
the input files), and the mixture's planned versus available tokens.

A stage's ``stage.json`` names its inputs: the hash of the stage before it, or, for the first stage, the input
files (name under the data root, size). Following those from each component's cache gives the exact chain that
made it, even when older versions of a stage sit beside it in the same folder.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.runtime.stage import STAGE_JSON
from datapipe.store.manifest import MANIFEST, Manifest, load_manifest

REPEAT_WARNING = 4.0  # epochs over a component beyond which a warning is printed


@dataclass(frozen=True)
class StageView:
    """A finished stage of a build as the report and the browser read it: where it is (``url``, its folder's
    ``dirname``) and its ``stage.json`` as read (``doc``; :class:`datapipe.runtime.record.StageRecord` is the typed
    record a stage writes)."""

    source: str
    stage: str
    dirname: str
    url: str
    doc: dict[str, Any]

    @property
    def counts(self) -> dict[str, Any]:
        return self.doc["counts"]


def manifest_url_of(path: str) -> str:
    return path if path.endswith(".json") else fs.join(path, MANIFEST)


def _stage_dirs(source_dir: str) -> dict[str, str]:
    """hash[:8] -> folder, for every committed stage folder of a source."""
    out: dict[str, str] = {}
    if not fs.exists(source_dir):
        return out
    root = fs.local_path(source_dir) if fs.is_local(source_dir) else None
    names = (
        os.listdir(root)
        if root
        else [p.rstrip("/").split("/")[-1] for p in fs.glob(fs.join(source_dir, "*"))]
    )
    for name in sorted(names):
        if "-" in name and fs.exists(fs.join(source_dir, name, "_SUCCESS")):
            out[name.rsplit("-", 1)[1]] = name
    return out


def source_chain(output: str, source: str, cache_dir: str) -> list[StageView]:
    """The stages that made ``cache_dir`` (``source/tokenize-xxxx``), first stage first."""
    source_dir = fs.join(output, source)
    by_hash = _stage_dirs(source_dir)
    chain: list[StageView] = []
    name = cache_dir.rstrip("/").split("/")[-1]
    while True:
        url = fs.join(source_dir, name)
        doc = json.loads(fs.read_text(fs.join(url, STAGE_JSON)))
        chain.append(StageView(source, doc["stage"], name, url, doc))
        inputs = doc.get("inputs", [])
        if not inputs or isinstance(inputs[0], dict):  # raw input files: the chain starts here
            break
        prev = by_hash.get(str(inputs[0])[:8])
        if prev is None:
            raise DatapipeError(f"{url}: its input stage {str(inputs[0])[:8]} is not in {source_dir}")
        name = prev
    return chain[::-1]


def mixture_chains(output: str) -> tuple[Manifest, dict[str, list[StageView]]]:
    """(manifest, {source: its stage chain}) of a finished build (a source's components are its languages when it
    is split by language, or the source itself)."""
    url = manifest_url_of(output)
    if not fs.exists(url):
        raise DatapipeError(f"{output}: no {MANIFEST} (a build with --only writes none; build every source)")
    manifest = load_manifest(url)
    base = os.path.dirname(url)
    chains = {}
    for comp in manifest.components:
        # <source>/<tokenize stage>, or <source>/<tokenize stage>/<language> for a source split by language
        parts = comp.cache.rstrip("/").split("/")
        i = next(
            (k for k in range(len(parts) - 1, 0, -1) if parts[k].startswith("tokenize-")), len(parts) - 1
        )
        source = parts[i - 1]  # a source's languages share its chain: it is listed once
        if source not in chains:
            chains[source] = source_chain(base, source, "/".join(parts[: i + 1]))
    return manifest, chains


def format_source_table(counts_by_source: dict[str, list[dict[str, Any]]]) -> str:
    """Per source (its stages' counts, in order): documents in and out, removed, skipped, tokens; and the total."""
    lines = [f"{'source':<18} {'docs in':>8} {'docs out':>9} {'removed':>8} {'skipped':>8} {'tokens':>12}"]
    tot = [0, 0, 0, 0, 0]
    for name, counts in counts_by_source.items():
        first, last = counts[0], counts[-1]
        removed = sum(sum(c["removed"].values()) for c in counts)
        row = [first["docs_in"], last["docs_kept"], removed, sum(first["skipped"].values()), last["tokens"]]
        tot = [a + b for a, b in zip(tot, row, strict=True)]
        lines.append(f"{name:<18} {row[0]:>8} {row[1]:>9} {row[2]:>8} {row[3]:>8} {row[4]:>12,}")
    lines.append(f"{'total':<18} {tot[0]:>8} {tot[1]:>9} {tot[2]:>8} {tot[3]:>8} {tot[4]:>12,}")
    return "\n".join(lines)


def crawl_line(source: str, crawl: dict[str, Any]) -> str:
    """One line of what reading a Common Crawl source took (its extract stage's ``crawl`` in ``stage.json``)."""
    missing = crawl.get("missing_files", [])
    named = f" ({', '.join(m['file'].rsplit('/', 1)[-1] for m in missing[:3])}{' ...' if len(missing) > 3 else ''})"
    return (
        f"crawl {source}: {crawl['crawl']} {crawl['kind']}: {crawl['fetched']} of {crawl['planned']} file(s) fetched, "
        f"{crawl['requests']} request(s), {crawl['retried']} retried, {crawl['throttled']} throttled, "
        f"{crawl['resumed']} resumed, {crawl['missing']} missing{named if missing else ''} "
        f"({crawl['allow_missing']} allowed); {crawl['records']:,} records, {crawl['bytes'] / 1e6:,.1f} MB"
    )


def crawl_lines(chains: dict[str, list[Any]]) -> list[str]:
    """:func:`crawl_line` for each source read from a Common Crawl dump, in the mixture's order."""
    return [
        crawl_line(name, r.doc["crawl"]) for name, chain in chains.items() for r in chain if "crawl" in r.doc
    ]


def token_plan(manifest: Manifest, train_tokens: int | None) -> list[dict[str, Any]]:
    """Per component: tokens available, its share of the mixture, and (given a training length) the tokens its
    weight asks for and the epochs that implies."""
    rows = []
    for comp in manifest.components:
        share = manifest.share(comp)
        row: dict[str, Any] = {
            "name": comp.name,
            "weight": comp.weight,
            "share": share,
            "tokens": comp.tokens,
        }
        if train_tokens:
            wanted = share * train_tokens
            row["planned_tokens"] = int(round(wanted))
            row["epochs"] = wanted / comp.tokens if comp.tokens else float("inf")
            row["warning"] = row["epochs"] > REPEAT_WARNING
        rows.append(row)
    return rows


def format_token_plan(rows: list[dict[str, object]], train_tokens: int | None) -> str:
    head = f"{'component':<18} {'share':>7} {'tokens':>14}"
    if train_tokens:
        head += f" {'planned':>14} {'epochs':>8}"
    lines = [head]
    for r in rows:
        line = f"{r['name']:<18} {r['share']:>7.2%} {r['tokens']:>14,}"
        if train_tokens:
            line += f" {r['planned_tokens']:>14,} {r['epochs']:>8.2f}"
            if r["warning"]:
                line += f"  warning: repeats {r['epochs']:.1f}x (> {REPEAT_WARNING:g})"
        lines.append(line)
    if train_tokens:
        lines.insert(0, f"mixture at {train_tokens:,} training tokens:")
    return "\n".join(lines)
