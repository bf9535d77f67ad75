"""Provenance, the open-lab record: ``experiment.json`` beside the manifest, and ``datapipe lineage``.

``experiment.json`` lists, per component, every stage that made its cache: name, folder, version hash, config,
input hashes (or input files), the sha256 of its ``stage.json`` (the stage's output record) and its counts; plus the
datapipe version, the git commit of the code that ran, the Beam runner and the data root. A training run records
the manifest's sha256 in its ``run.json``, so a trained step traces back to the WARC files and rules that made its
data: ``datapipe lineage RUN_DIR`` prints that chain.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess

from datapipe import __version__
from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.report.collect import manifest_url_of, mixture_chains
from datapipe.runtime.stage import STAGE_JSON

EXPERIMENT = "experiment.json"


def git_commit() -> str | None:
    """The commit of the datapipe checkout that runs (None for an installed wheel); ``+dirty`` when modified."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        commit = subprocess.run(
            ["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if dirty else "")


def experiment_record(
    output: str, runner: str, data_root: str, mixture_file: str, commit: str | None
) -> dict[str, object]:
    """``experiment.json``'s record; ``commit``: :func:`git_commit`'s, as the build began (its caller asks it
    then: the code the build ran is the code it started with)."""
    manifest, chains = mixture_chains(output)
    components = {}
    for name, chain in chains.items():
        stages = []
        for r in chain:
            counts = {k: v for k, v in r.counts.items() if k not in ("hists", "samples")}
            stages.append(
                {
                    "stage": r.stage,
                    "dir": f"{r.source}/{r.dirname}",
                    "hash": r.doc["hash"],
                    "config": r.doc["config"],
                    "inputs": r.doc["inputs"],
                    "stage_json_sha256": hashlib.sha256(
                        fs.read_bytes(fs.join(r.url, STAGE_JSON))
                    ).hexdigest(),
                    "counts": counts,
                }
            )
        components[name] = {"source": chain[0].source, "stages": stages}
    return {
        "datapipe_version": __version__,
        "git_commit": commit,
        "runner": runner,
        "mixture": manifest.name,
        "mixture_file": mixture_file,
        "data_root": data_root,
        "manifest_sha256": hashlib.sha256(fs.read_bytes(manifest_url_of(output))).hexdigest(),
        "components": components,
    }


def write_experiment(output: str, runner: str, data_root: str, mixture_file: str, commit: str | None) -> str:
    url = fs.join(output, EXPERIMENT)
    doc = experiment_record(output, runner, data_root, mixture_file, commit)
    fs.write_text_atomic(url, json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return url


def _summary(config: dict[str, object]) -> str:
    text = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= 100 else text[:97] + "..."


def lineage(path: str) -> list[str]:
    """The chain from a training run (or an output folder) to its manifest, every stage, and the input files."""
    lines: list[str] = []
    run_json = fs.join(path, "run.json")
    if fs.exists(run_json):
        run = json.loads(fs.read_text(run_json))
        lines.append(f"run {path}")
        cfg = run["config"]
        lines.append(
            f"  model {run['model']['name']}, {cfg['steps']} steps, seed {cfg['seed']}, mesh {run['mesh']}"
        )
        manifest = run["manifest"]
        actual = hashlib.sha256(fs.read_bytes(manifest)).hexdigest() if fs.exists(manifest) else None
        state = "matches" if actual == run["manifest_sha256"] else f"CHANGED since the run (now {actual})"
        lines.append(f"  trained on {manifest} (sha256 {run['manifest_sha256'][:16]}..., {state})")
        output = os.path.dirname(manifest)
    else:
        output = path[: -len("/mixture.json")] if path.endswith("mixture.json") else path
    exp_url = fs.join(output, EXPERIMENT)
    if not fs.exists(output):
        raise DatapipeError(f"{output}: no such build folder (give a build's output folder or a run folder)")
    if not fs.exists(exp_url):
        raise DatapipeError(
            f"{output}: no {EXPERIMENT} (built by a datapipe older than the provenance record?)"
        )
    exp = json.loads(fs.read_text(exp_url))
    lines.append(
        f"manifest {manifest_url_of(output)}: mixture {exp['mixture']} from {exp['mixture_file']}, datapipe "
        f"{exp['datapipe_version']} (git {exp['git_commit'] or 'unknown'}), runner {exp['runner']}"
    )
    for name, comp in exp["components"].items():
        lines.append(f"  component {name}")
        for st in reversed(comp["stages"]):
            c = st["counts"]
            lines.append(
                f"    {st['dir']}  in {c['docs_in']:,} kept {c['docs_kept']:,}  config {_summary(st['config'])}"
            )
        first = comp["stages"][0]
        for inp in first["inputs"]:
            lines.append(f"      <- {fs.join(exp['data_root'], inp['shard'])} ({inp['size']:,} bytes)")
    return lines
