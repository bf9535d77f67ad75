"""Rebuild ``fineweb2.json.gz`` and ``lid176.json`` (the package data this folder ships) from FineWeb-2's published
files.

Run by a maintainer, never at build time: ``python -m datapipe.languages.pack ../shared/data/fineweb2``. The output
is deterministic (sorted keys, a fixed gzip mtime), so the same inputs give the same bytes.

What it packs, per language-script: FineWeb-2's filter thresholds and stop words (``configs/*.yml``), its document
count (``fineweb2-language-distribution.csv``, used only to map a lid.176 label to the language-script FineWeb-2
holds the most of) and the rehydration weights (``misc/rehydration/weights/up_to_NN_reps.json``). lid.176's 176
labels are mapped once here, from datatrove's tokenizer table (ISO 639-1 and 639-3 codes with their scripts), with
a few corrections where lid.176 uses Wikipedia's codes rather than ISO's (``LID176_FIXES``). That mapping is its
own small file: language ID reads it for every prediction, and parsing the whole table for it took 0.05 s in each
worker's first extract shard.
"""

from __future__ import annotations

import csv
import glob
import gzip
import json
import os
import sys

import yaml

# lid.176 labels that name a language another way than ISO 639 does (Wikipedia codes), or whose most common
# FineWeb-2 subset is not the language lid.176 was trained on
LID176_FIXES = {
    "en": "eng_Latn",  # FineWeb-2 holds no English: it has no config, which the filters report
    "no": "nob_Latn",  # Norwegian: FineWeb-2 splits it into Bokmål and Nynorsk (lid.176 has `nn` too)
    "sh": "hbs_Latn",  # Serbo-Croatian (Wikipedia's code)
    "tl": "fil_Latn",  # Tagalog: FineWeb-2 calls it Filipino
    "bh": "bho_Deva",  # Bihari (a group): Bhojpuri, its largest member
    "als": "gsw_Latn",  # Wikipedia's "als" is Alemannic; ISO's als is Tosk Albanian
    "ku": "kmr_Latn",  # lid.176's Kurdish is Kurmanji, written in Latin script
}


def lid176_labels() -> list[str]:
    from datapipe.io.models import bundled_model_path, load_fasttext

    return [label.removeprefix("__label__") for label in load_fasttext(bundled_model_path()).get_labels()]


def _write_json(data: dict, out: str, gzipped: bool) -> None:
    raw = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")
    with open(out, "wb") as fo:
        if not gzipped:
            fo.write(raw)
            return
        with gzip.GzipFile(fileobj=fo, mode="wb", compresslevel=9, mtime=0, filename="") as gz:
            gz.write(raw)


def pack(src: str, out: str, lid176_out: str) -> dict:
    from datatrove.utils._import_utils import ASSETS_PATH

    configs = {}
    for path in sorted(glob.glob(os.path.join(src, "configs", "*.yml"))):
        with open(path, encoding="utf-8") as f:
            configs[os.path.basename(path)[: -len(".yml")]] = yaml.safe_load(f)
    documents = {}
    with open(os.path.join(src, "fineweb2-language-distribution.csv"), encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["split"] == "train":
                documents[row["subset"]] = int(row["documents"])
    rehydration = {}
    for path in sorted(glob.glob(os.path.join(src, "misc", "rehydration", "weights", "up_to_*_reps.json"))):
        with open(path, encoding="utf-8") as f:
            rehydration[os.path.basename(path)[: -len(".json")]] = json.load(f)
    with open(os.path.join(ASSETS_PATH, "tokenizer_assignment.csv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    lid176 = {}
    for label in lid176_labels():
        if label in LID176_FIXES:
            lid176[label] = LID176_FIXES[label]
            continue
        candidates = sorted(
            {f"{r['code_3']}_{r['script']}" for r in rows if label in (r["code_1"], r["code_3"])}
        )
        held = [c for c in candidates if c in configs]
        if not held:
            raise SystemExit(f"lid.176 label {label!r}: no FineWeb-2 language-script; add it to LID176_FIXES")
        lid176[label] = max(held, key=lambda c: (documents.get(c, 0), c))
    data = {
        "source": "huggingface/fineweb-2 (Apache-2.0): configs/, fineweb2-language-distribution.csv, "
        "misc/rehydration/weights/",
        "configs": configs,
        "documents": documents,
        "rehydration": rehydration,
    }
    _write_json(data, out, gzipped=True)
    _write_json(lid176, lid176_out, gzipped=False)
    return {**data, "lid176": lid176}


if __name__ == "__main__":
    here = os.path.dirname(__file__)
    target = os.path.join(here, "fineweb2.json.gz")
    d = pack(
        sys.argv[1] if len(sys.argv) > 1 else "../shared/data/fineweb2",
        target,
        os.path.join(here, "lid176.json"),
    )
    print(f"{target}: {len(d['configs'])} language-scripts, {len(d['lid176'])} lid.176 labels")
