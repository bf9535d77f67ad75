"""``datapipe eval``: a run's model at a step, measured on every held-out row of each mixture component.

The rows are the ones training never saw: ``validation.holdout`` sequences of each component, chosen by the
manifest's seed (:class:`~datapipe.data.loader.MixtureLoader`'s ``heldout`` split, the same rows the trainer's
periodic validation draws from). Each is read once, in a fixed order, so two evaluations of one checkpoint give
the same numbers. Per component: target tokens, mean loss (nats), perplexity, and bits per byte (the loss summed
over the targets, in bits, over the UTF-8 bytes those target tokens decode to: comparable across tokenizers, as
Paloma and Marin report it). A record per evaluation is appended to ``RUN_DIR/eval.jsonl`` (read by
``datapipe report`` and ``datapipe browse``).
"""

from __future__ import annotations

import json
import math
import os
import time
from typing import Any

import numpy as np

from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.train.metrics import EVAL_FILE


def target_runs(segment_ids: np.ndarray) -> list[tuple[int, int, int]]:
    """(row, start, end) of each run of consecutive target positions: token ``j`` is a target when it follows a
    token of its own document (``segment_ids[j] == segment_ids[j - 1] >= 0``), as the loss counts it."""
    valid = (segment_ids[:, 1:] == segment_ids[:, :-1]) & (segment_ids[:, 1:] >= 0)
    out = []
    for row in range(len(valid)):
        edges = np.diff(np.concatenate([[0], valid[row].astype(np.int8), [0]]))
        for a, b in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1), strict=True):
            out.append((row, int(a) + 1, int(b) + 1))  # valid[j] is the target at token j + 1
    return out


def target_bytes(input_ids: np.ndarray, segment_ids: np.ndarray, decode_batch: Any) -> int:
    """UTF-8 bytes of the target tokens, decoded a run of consecutive targets at a time."""
    runs = target_runs(segment_ids)
    texts = decode_batch([input_ids[r, a:b].tolist() for r, a, b in runs])
    return sum(len(t.encode("utf-8")) for t in texts)


def _decoder(manifest: dict[str, Any], manifest_path: str) -> Any:
    """The mixture tokenizer's ``decode_batch`` (the copy beside the manifest, or the file it names), or None."""
    from tokenizers import Tokenizer

    from datapipe.train.hf import tokenizer_file

    try:
        path = tokenizer_file(manifest["tokenizer"], fs.parent(manifest_path))
    except DatapipeError:
        return None
    tok = Tokenizer.from_str(fs.read_text(path))
    return lambda seqs: tok.decode_batch(seqs, skip_special_tokens=True)


def evaluate_run(
    run_dir: str, step: int | None = None, components: list[str] | None = None, batch: int = 8
) -> dict[str, Any]:
    """Evaluate a run's checkpoint (the latest by default) on its held-out rows; append and return the record."""
    import jax

    from datapipe.data.loader import MixtureLoader
    from datapipe.data.mixing import Phase
    from datapipe.store.manifest import read_manifest
    from datapipe.train.checkpoint import restore_run_params
    from datapipe.train.init import model_from_dict, read_run
    from datapipe.train.model import loss_sums

    run = read_run(run_dir)
    model = model_from_dict(run["model"])
    manifest_path = str(run["manifest"])
    if not fs.exists(manifest_path):
        raise DatapipeError(f"{run_dir}: its manifest {manifest_path} is gone")
    manifest = read_manifest(manifest_path)
    config = run.get("config", {})
    holdout = int(config.get("validation", {}).get("holdout", 0))
    if holdout <= 0:
        raise DatapipeError(
            f"{run_dir}: the run held out no rows (validation.holdout = 0), so every row of its mixture was "
            "trained on; train with validation.holdout=N to evaluate"
        )
    names = [c["name"] for c in manifest["components"]]
    unknown = sorted(set(components or ()) - set(names))
    if unknown:
        raise DatapipeError(f"{run_dir}: no component {', '.join(unknown)} (components: {', '.join(names)})")
    step, params = restore_run_params(run_dir, step, model, jax.devices()[0])
    decode = _decoder(manifest, manifest_path)
    losses = jax.jit(lambda p, ids, seg: loss_sums(p, {"input_ids": ids, "segment_ids": seg}, model)[1])
    seq_len, seed = int(run["seq_len"]), int(config.get("seed", 0))
    record: dict[str, Any] = {"step": step, "time": time.time(), "holdout": holdout, "components": {}}
    for name in components or names:
        loader = MixtureLoader(
            manifest_path, seq_len, batch, seed, phases=[Phase(0, {name: 1.0}, batch)], prefetch=0,
            holdout=holdout, split="heldout",
        )  # fmt: skip
        sequences = loader.heldout_sequences(name)
        ce = count = 0.0
        nbytes = 0
        for lo in range(0, len(sequences), batch):
            ids, seg = loader.read_sequences(name, sequences[lo : lo + batch])
            if decode is not None:
                nbytes += target_bytes(ids, seg, decode)
            if len(ids) < batch:  # one compiled shape: pad with rows that hold no target
                pad = batch - len(ids)
                ids = np.concatenate([ids, np.zeros((pad, seq_len), ids.dtype)])
                seg = np.concatenate([seg, np.full((pad, seq_len), -1, seg.dtype)])
            c, n = losses(params, ids, seg)
            ce, count = ce + float(c), count + float(n)
        entry: dict[str, Any] = {"sequences": int(len(sequences)), "tokens": int(count)}
        if count:
            loss = ce / count
            entry.update(loss=loss, perplexity=math.exp(min(loss, 700.0)))
            if nbytes:
                entry.update(bytes=nbytes, bits_per_byte=ce / math.log(2) / nbytes)
        record["components"][name] = entry
    with open(os.path.join(run_dir, EVAL_FILE), "a", encoding="utf-8") as f:
        f.write(json.dumps(record, sort_keys=True) + "\n")
    return record


def format_record(record: dict[str, Any]) -> str:
    """The evaluation as a table, a component a line."""
    lines = [f"step {record['step']}: held-out rows ({record['holdout']} sequences a component at most)"]
    lines.append(
        f"{'component':<24} {'sequences':>9} {'tokens':>10} {'loss':>8} {'ppl':>10} {'bits/byte':>9}"
    )
    for name, e in record["components"].items():
        loss = f"{e['loss']:.4f}" if "loss" in e else "-"
        ppl = f"{e['perplexity']:.2f}" if "perplexity" in e else "-"
        bpb = f"{e['bits_per_byte']:.4f}" if "bits_per_byte" in e else "-"
        lines.append(f"{name:<24} {e['sequences']:>9} {e['tokens']:>10,} {loss:>8} {ppl:>10} {bpb:>9}")
    return "\n".join(lines)
