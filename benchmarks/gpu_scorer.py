"""The ``transformers`` quality scorer on a GPU: the same scores as on the CPU, and its documents per second.

A BERT sequence classifier of FineWeb-Edu's classifier's size class (``--hidden 768 --layers 12``: ~110M parameters,
random weights and head, a word-piece vocabulary counted from the texts; ``tests/hf_classifier.py``) is written
to a folder and loaded by :class:`datapipe.quality.transformer.TransformersScorer` twice, on ``cuda`` and on the
CPU. The first ``--check`` texts are scored by both (max |difference|: the GPU path must give the CPU's scores);
every text is then scored on the GPU, timed after a warm-up, at the scorer's default batch budget and at 4x it.
Each budget: one untimed call on 256 texts, then one timed call on all texts, wall clock between two
``torch.cuda.synchronize()``; the CPU scorer is not timed (it only gives the reference scores).

The texts are a JSONL of ``{"text": ...}`` (a GPU host has no corpus: write one here with
``--write-texts FILE``, from ``benchmarks/corpus.py``'s real documents).

    .venv/bin/python benchmarks/gpu_scorer.py --write-texts .gpu/texts.jsonl     # here
    python3 benchmarks/gpu_scorer.py --texts .gpu/texts.jsonl                    # on the GPU host

Last line: ``bench: gpu_scorer docs_per_s=X docs_per_s_4x=Y max_abs_diff=D``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--texts", help="JSONL of {text}")
    ap.add_argument("--write-texts", help="write N real documents as that JSONL, then stop")
    ap.add_argument("--docs", type=int, default=4000)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--check", type=int, default=64, help="texts scored on both devices")
    args = ap.parse_args()
    if args.write_texts:
        from corpus import documents

        Path(args.write_texts).parent.mkdir(parents=True, exist_ok=True)
        with open(args.write_texts, "w") as f:
            for _, text in documents(args.docs, max_bytes=20_000):
                f.write(json.dumps({"text": text}) + "\n")
        print(f"wrote {args.docs} texts to {args.write_texts}")
        return
    import torch

    from datapipe import TRANSFORMER_BATCH_TOKENS as BATCH_TOKENS
    from datapipe import TransformersScorer
    from tests.hf_classifier import bert_classifier

    if not torch.cuda.is_available():
        sys.exit("gpu_scorer: no CUDA device here (run it on a GPU host)")
    with open(args.texts) as f:
        texts = [json.loads(line)["text"] for line in f]
    with tempfile.TemporaryDirectory() as folder:
        bert_classifier(Path(folder), texts, hidden=args.hidden, layers=args.layers)
        gpu = TransformersScorer(folder, "__label__hq", device="cuda")
        cpu = TransformersScorer(folder, "__label__hq", device="cpu")
        params = sum(p.numel() for p in gpu.model.parameters())
        sample = texts[: args.check]
        diff = float(abs(gpu.scores(sample) - cpu.scores(sample)).max())
        rates = []
        for budget in (BATCH_TOKENS, 4 * BATCH_TOKENS):
            gpu.batch_tokens = budget
            gpu.scores(texts[:256])  # warm-up: kernels, allocator
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            gpu.scores(texts)
            torch.cuda.synchronize()
            rates.append(len(texts) / (time.perf_counter() - t0))
        print(
            f"{torch.cuda.get_device_name()}: BERT {params / 1e6:.0f}M parameters, {len(texts):,} texts "
            f"(up to 512 tokens each); cuda vs cpu on {len(sample)} texts: max |diff| {diff:.2e}"
        )
        print(
            f"batch budget {BATCH_TOKENS:,} tokens: {rates[0]:,.0f} docs/s; {4 * BATCH_TOKENS:,}: {rates[1]:,.0f}"
        )
        print(
            f"bench: gpu_scorer docs_per_s={rates[0]:.0f} docs_per_s_4x={rates[1]:.0f} max_abs_diff={diff:.2e}"
        )


if __name__ == "__main__":
    main()
