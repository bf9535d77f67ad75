"""``datapipe export-hf``: a run's checkpoint written as a Hugging Face Llama folder, with its tokenizer and where
it came from. Its own module, above the checkpoints, the run files and the folder format (``hf``) that it joins, so
that none of them imports another in a circle.
"""

from __future__ import annotations

import json
import os
from typing import Any

from datapipe.errors import DatapipeError
from datapipe.io import fs
from datapipe.train.hf import (
    CONFIG,
    DTYPES,
    MAX_SHARD_BYTES,
    leaf_tensors,
    llama_config,
    tokenizer_file,
    write_tokenizer,
    write_weights,
)


def export_run(
    run_dir: str,
    out_dir: str,
    step: int | None = None,
    dtype: str = "float32",
    max_shard_bytes: int = MAX_SHARD_BYTES,
) -> dict[str, Any]:
    """Write a run's checkpoint (the latest, or ``step``) as a Hugging Face Llama folder; return what was written.
    The parameters are read one at a time (never the optimizer state), each gathered whole onto the host from
    whatever mesh wrote it, and written a shard at a time: the host holds the largest parameter and one shard."""
    from datapipe.store.manifest import load_manifest
    from datapipe.train.checkpoint import checkpoint_step, iter_run_params
    from datapipe.train.init import model_from_dict, read_run

    if dtype not in DTYPES:
        raise DatapipeError(f"--dtype {dtype!r}: one of {', '.join(DTYPES)}")
    run = read_run(run_dir)
    cfg = model_from_dict(run["model"])
    manifest_path = str(run["manifest"])
    manifest = load_manifest(manifest_path)
    identity = manifest.tokenizer
    tokenizer = tokenizer_file(manifest)
    step = checkpoint_step(run_dir, step)  # a wrong step is said before the export folder is made
    fs.check_writable(out_dir, "export folder")
    files = write_weights(leaf_tensors(iter_run_params(run_dir, step, cfg)), out_dir, dtype, max_shard_bytes)
    seq_len = int(run["seq_len"])
    config = llama_config(cfg, seq_len, dtype, identity.bos_id, identity.eos_id)
    fs.write_text_atomic(os.path.join(out_dir, CONFIG), json.dumps(config, indent=2) + "\n")
    generation = {k: config[k] for k in ("bos_token_id", "eos_token_id") if config[k] is not None}
    fs.write_text_atomic(
        os.path.join(out_dir, "generation_config.json"), json.dumps(generation, indent=2) + "\n"
    )
    write_tokenizer(tokenizer, identity, seq_len, out_dir)
    provenance = {
        "run_dir": os.path.abspath(run_dir),
        "step": step,
        "manifest": manifest_path,
        "manifest_sha256": run.get("manifest_sha256"),
        "tokenizer_sha256": identity.sha256,
        "dtype": dtype,
        "files": files,
    }
    fs.write_text_atomic(
        os.path.join(out_dir, "datapipe_export.json"), json.dumps(provenance, indent=2) + "\n"
    )
    return provenance
