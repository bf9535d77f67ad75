"""``datapipe eval``: a run's model at a step, measured on every held-out row of each mixture component.

The rows are the ones training never saw: ``validation.holdout`` sequences of each component, chosen by the
manifest's seed (:class:`~datapipe.data.loader.MixtureLoader`'s ``heldout`` split, the same rows the trainer's
periodic validation draws from). Each is read once, in a fixed order, so two evaluations of one checkpoint give
the same numbers. Per component: target tokens, mean loss (nats), perplexity, and bits per byte (the loss summed
over the targets, in bits, over the UTF-8 bytes those target tokens decode to: comparable across tokenizers, as
Paloma and Marin report it). A record per evaluation is appended to ``RUN_DIR/eval.jsonl`` (read by
``datapipe report`` and ``datapipe browse``), with the key of what it measured (:func:`evaluation_key`: the
checkpoint's step and fingerprint, the manifest's sha256, the run's layout and the options); an evaluation whose
key a record already holds is not run again (a second ``make demo``), unless forced.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from typing import Any

import numpy as np

from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.store.manifest import Manifest
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


def _byte_counter(manifest: Manifest) -> Any:
    """What :func:`target_bytes` counts with, from the mixture's tokenizer (the copy beside the manifest, or the
    file it names); None when it cannot be found."""
    from tokenizers import Tokenizer

    from datapipe.train.hf import tokenizer_file

    try:
        path = tokenizer_file(manifest)
    except DatapipeError:
        return None
    text = fs.read_text(path)
    table = byte_lengths(text)
    if table is not None:
        return table
    tok = Tokenizer.from_str(text)
    return lambda seqs: tok.decode_batch(seqs, skip_special_tokens=True)


# what eval measures and how: bump it when a change gives other numbers for the same checkpoint and rows, so that
# records written before are not taken for this evaluation's
EVAL_METHOD = 1


def checkpoint_fingerprint(run_dir: str, step: int) -> str | None:
    """sha256 of a checkpoint's own metadata: every file of its step folder, path and content, but the arrays'
    data (orbax's ``d`` folders, never read) and ``commit_success.txt`` (which names the folder's path). Orbax's
    ``_CHECKPOINT_METADATA`` holds the save's commit time, so a checkpoint saved anew at the same step (a run
    started again) has another fingerprint. None when the step's folder is not where orbax puts it."""
    root = os.path.join(run_dir, "checkpoints", str(step))
    if not os.path.isdir(root):
        return None
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "d")
        for name in sorted(files):
            if name == "commit_success.txt":
                continue
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                content = hashlib.sha256(f.read()).hexdigest()
            digest.update(f"{os.path.relpath(path, root)}\0{content}\n".encode())
    return digest.hexdigest()


def evaluation_key(
    run: dict[str, Any],
    manifest_bytes: bytes,
    step: int,
    checkpoint: str | None,
    components: list[str],
    batch: int,
) -> dict[str, Any]:
    """What an evaluation's numbers are a function of: the checkpoint (step and fingerprint), the manifest (its
    sha256), the run's layout of the rows (model, sequence length, seed, packing, holdout, phases) and the
    options (components, batch)."""
    config = run.get("config", {})
    layout = {
        "model": run["model"],
        "seq_len": run["seq_len"],
        "seed": config.get("seed", 0),
        "packing": config.get("loader", {}).get("packing", "concat"),
        "holdout": config.get("validation", {}).get("holdout", 0),
        "phases": run.get("phases", []),
    }
    return {
        "method": EVAL_METHOD,
        "step": step,
        "checkpoint": checkpoint,
        "manifest": hashlib.sha256(manifest_bytes).hexdigest(),
        "layout": hashlib.sha256(json.dumps(layout, sort_keys=True).encode()).hexdigest(),
        "components": components,
        "batch": batch,
    }


def cached_evaluation(run_dir: str, key: dict[str, Any]) -> tuple[dict[str, Any], int] | None:
    """The latest record of ``RUN_DIR/eval.jsonl`` with this key and its line number (from 1); None when there
    is none (or the checkpoint has no fingerprint)."""
    path = os.path.join(run_dir, EVAL_FILE)
    if key["checkpoint"] is None or not os.path.exists(path):
        return None
    found = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                record = json.loads(line)
                if record.get("key") == key:
                    found = record, number
    return found


def evaluate_run(
    run_dir: str,
    step: int | None = None,
    components: list[str] | None = None,
    batch: int = 8,
    force: bool = False,
) -> dict[str, Any]:
    """Evaluate a run's checkpoint (the latest by default) on its held-out rows; append and return the record
    (or return the record ``eval.jsonl`` already holds for the same key, unless ``force``)."""
    return evaluate_or_reuse(run_dir, step, components, batch, force)[0]


def evaluate_or_reuse(
    run_dir: str,
    step: int | None = None,
    components: list[str] | None = None,
    batch: int = 8,
    force: bool = False,
) -> tuple[dict[str, Any], str | None]:
    """(record, where it was found: ``RUN_DIR/eval.jsonl line N``) when ``eval.jsonl`` holds an evaluation with
    the same key (and not ``force``); else (the record of a new evaluation, appended, None)."""
    from datapipe.data.loader import MixtureLoader
    from datapipe.data.mixing import Phase
    from datapipe.store.manifest import load_manifest
    from datapipe.train.checkpoint import checkpoint_step
    from datapipe.train.init import model_from_dict, read_run

    run = read_run(run_dir)
    model = model_from_dict(run["model"])
    manifest_path = str(run["manifest"])
    if not fs.exists(manifest_path):
        raise DatapipeError(f"{run_dir}: its manifest {manifest_path} is gone")
    manifest = load_manifest(manifest_path)
    config = run.get("config", {})
    holdout = int(config.get("validation", {}).get("holdout", 0))
    if holdout <= 0:
        raise DatapipeError(
            f"{run_dir}: the run held out no rows (validation.holdout = 0), so every row of its mixture was "
            "trained on; train with validation.holdout=N to evaluate"
        )
    names = [c.name for c in manifest.components]
    unknown = sorted(set(components or ()) - set(names))
    if unknown:
        raise DatapipeError(f"{run_dir}: no component {', '.join(unknown)} (components: {', '.join(names)})")
    if batch < 1:
        raise DatapipeError(f"--batch {batch}: must be >= 1")
    step = checkpoint_step(run_dir, step)
    key = evaluation_key(
        run,
        fs.read_bytes(manifest_path),
        step,
        checkpoint_fingerprint(run_dir, step),
        list(components or names),
        batch,
    )
    cached = None if force else cached_evaluation(run_dir, key)
    if cached is not None:
        return cached[0], f"{os.path.join(run_dir, EVAL_FILE)} line {cached[1]}"
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
    import jax

    from datapipe.train.checkpoint import restore_run_params
    from datapipe.train.model import loss_sums

    step, params = restore_run_params(run_dir, step, model, jax.local_devices()[0])
    counter = _byte_counter(manifest)
    losses = jax.jit(lambda p, ids, seg: loss_sums(p, {"input_ids": ids, "segment_ids": seg}, model)[1])
    record: dict[str, Any] = {
        "step": step,
        "time": time.time(),
        "holdout": holdout,
        "components": {},
        "key": key,
    }
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
    return record, None


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
