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


def byte_lengths(tokenizer_json: str) -> np.ndarray | None:
    """UTF-8 bytes of every token id, for a byte-level BPE (GPT-2's, Llama 3's): each character of such a token's
    string stands for one byte, so a target's bytes are exact whatever cuts a character or a word. Special tokens
    count 0 (they decode to nothing). None for other tokenizers."""
    doc = json.loads(tokenizer_json)
    if (doc.get("decoder") or {}).get("type") != "ByteLevel" or not isinstance(
        doc.get("model", {}).get("vocab"), dict
    ):
        return None
    vocab: dict[str, int] = doc["model"]["vocab"]
    size = max([*vocab.values(), *(t["id"] for t in doc.get("added_tokens", []))]) + 1
    table = np.zeros(size, dtype=np.int64)
    for token, i in vocab.items():
        table[i] = len(token)
    for added in doc.get("added_tokens", []):
        table[added["id"]] = 0 if added.get("special") else len(added["content"].encode("utf-8"))
    return table


def target_bytes(input_ids: np.ndarray, segment_ids: np.ndarray, count: Any) -> int:
    """UTF-8 bytes of the target tokens: from a byte-length table (``count`` an array), else by decoding each run
    of consecutive targets after the token before it and taking away that token's own bytes (``count`` a
    ``decode_batch``), so that a tokenizer that drops a leading space (SentencePiece's) does not lose it."""
    runs = target_runs(segment_ids)
    if isinstance(count, np.ndarray):
        ids = np.clip(input_ids, 0, len(count) - 1)
        return int(sum(count[ids[r, a:b]].sum() for r, a, b in runs))
    with_context = count([input_ids[r, a - 1 : b].tolist() for r, a, b in runs])
    context = count([input_ids[r, a - 1 : a].tolist() for r, a, b in runs])
    return sum(
        len(w.encode("utf-8")) - len(c.encode("utf-8")) for w, c in zip(with_context, context, strict=True)
    )


def _byte_counter(manifest: dict[str, Any], manifest_path: str) -> Any:
    """What :func:`target_bytes` counts with, from the mixture's tokenizer (the copy beside the manifest, or the
    file it names); None when it cannot be found."""
    from tokenizers import Tokenizer

    from datapipe.train.hf import tokenizer_file

    try:
        path = tokenizer_file(manifest["tokenizer"], fs.parent(manifest_path))
    except DatapipeError:
        return None
    text = fs.read_text(path)
    table = byte_lengths(text)
    if table is not None:
        return table
    tok = Tokenizer.from_str(text)
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
    if batch < 1:
        raise DatapipeError(f"--batch {batch}: must be >= 1")
    seq_len, seed = int(run["seq_len"]), int(config.get("seed", 0))
    packing = str(config.get("loader", {}).get("packing", "concat"))
    # the training layout (same sequence length and packing) and its split: what the run held out
    phases = [
        Phase(int(p["step"]), p["weights"], int(p["global_batch"])) for p in run.get("phases", [])
    ] or None
    layout = MixtureLoader(
        manifest_path, seq_len, batch, seed, prefetch=0, packing=packing, holdout=holdout, phases=phases
    )
    recorded = run.get("heldout", {})
    for name in names:
        held = len(layout.heldout_sequences(name))
        if name in recorded and recorded[name] != held:
            raise DatapipeError(
                f"{run_dir}: component {name!r} held out {recorded[name]} sequences in training, {held} now: "
                "the manifest or the run's settings changed since"
            )
    step, params = restore_run_params(run_dir, step, model, jax.local_devices()[0])
    counter = _byte_counter(manifest, manifest_path)
    losses = jax.jit(lambda p, ids, seg: loss_sums(p, {"input_ids": ids, "segment_ids": seg}, model)[1])
    record: dict[str, Any] = {"step": step, "time": time.time(), "holdout": holdout, "components": {}}
    for name in components or names:
        sequences = layout.heldout_sequences(name)
        ce = count = 0.0
        nbytes = 0
        for lo in range(0, len(sequences), batch):
            ids, seg = layout.read_sequences(name, sequences[lo : lo + batch])
            if counter is not None:
                nbytes += target_bytes(ids, seg, counter)
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
