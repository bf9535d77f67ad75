"""The demo build's bytes: ``docs/demo-sha256.txt`` lists the sha256 of every file the demo mixture's build writes.

The list is what keeps a refactoring honest (docs/architecture.md, "Moving code without changing output"), and
it went stale unnoticed when nothing compared a build with it: ``make test`` now does
(``tests/test_demo_bytes.py``). Left out: the wall-clock ``*.timing.json`` files, the build's logs (``_logs/``) and
``experiment.json`` (it records the code's git commit). ``mixture.json`` records the mixture file's absolute path
(``source_mixture_file``); it is hashed with that path made relative to the checkout, so the list holds in a clone
anywhere.

    python -m tests.demo_bytes OUT            # compare the build in OUT with the list; exit 1 on a difference
    python -m tests.demo_bytes OUT --write    # make the list from OUT (say why in the commit)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIST = REPO / "docs" / "demo-sha256.txt"


def _skipped(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return name.endswith(".timing.json") or name == "experiment.json" or rel.startswith("./_logs/")


def _bytes(path: Path, rel: str) -> bytes:
    data = path.read_bytes()
    if rel != "./mixture.json":
        return data
    doc = json.loads(data)
    where = Path(doc.get("source_mixture_file", ""))
    if where.is_absolute() and where.is_relative_to(REPO):
        doc["source_mixture_file"] = str(where.relative_to(REPO))
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()


def digests(out: Path) -> dict[str, str]:
    """``./relative/path -> sha256`` of every file of the build in ``out`` that the list holds."""
    found = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        rel = "./" + path.relative_to(out).as_posix()
        if not _skipped(rel):
            found[rel] = hashlib.sha256(_bytes(path, rel)).hexdigest()
    return found


def read_list(path: Path = LIST) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        digest, rel = line.split(maxsplit=1)
        out[rel] = digest
    return out


def differences(out: Path, path: Path = LIST) -> list[str]:
    """One line per file that differs, is missing from the build or is not on the list."""
    want, got = read_list(path), digests(out)
    lines = [f"differs: {rel}" for rel in sorted(want.keys() & got.keys()) if want[rel] != got[rel]]
    lines += [f"not built: {rel}" for rel in sorted(want.keys() - got.keys())]
    lines += [f"not on the list: {rel}" for rel in sorted(got.keys() - want.keys())]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "out", type=Path, help="a build of the demo mixture (build_mixture --mixture dclm_phase3.yaml)"
    )
    ap.add_argument(
        "--write", action="store_true", help=f"write the list ({LIST.relative_to(REPO)}) from OUT"
    )
    args = ap.parse_args()
    if args.write:
        LIST.write_text("".join(f"{d}  {rel}\n" for rel, d in digests(args.out).items()))
        print(f"wrote {LIST.relative_to(REPO)}")
        return
    found = differences(args.out)
    print("\n".join(found) if found else "byte-identical")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
