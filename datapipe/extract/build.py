"""Build the compiled tree walk (:mod:`datapipe.extract.treewalk`) against the installed selectolax release.

``python -m datapipe.extract.build`` (``make venv`` runs it). The walk reads lexbor's node, element, attribute and
text structs by their C layout, so it is compiled against the headers of the very lexbor that the installed
selectolax wheel bundles: they come from that release's source distribution on PyPI (the wheel ships none),
fetched once into ``build/selectolax-VERSION/`` beside the package, and the release is written into the module
(``treewalk.BUILT_FOR``) so that a later selectolax upgrade is refused instead of misread. Nothing is linked: the
walk calls no lexbor function, it only follows pointers in a tree that selectolax built.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import tempfile
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "treewalk.pyx"
SCORING = HERE / "scoring.pyx"  # the learned extractor's block statistics and trees (no lexbor needed)
VERDICTS = HERE / "verdicts.pyx"  # the rules' verdicts (rules.decide), compiled (no lexbor needed)
# the walk's records (Block, Container), which the other three read and write in place (records.pxd)
RECORDS = HERE / "records.pyx"
MODULES = ("records", "treewalk", "scoring", "verdicts")
HEADERS = "lexbor/source/"  # where the sdist keeps lexbor's headers, under its top folder


def fetch_headers(release: str, into: Path) -> Path:
    """lexbor's headers from selectolax ``release``'s source distribution, unpacked under ``into`` (once)."""
    root = into / f"selectolax-{release}"
    if (root / "lexbor" / "dom" / "interfaces" / "node.h").is_file():
        return root
    with tempfile.TemporaryDirectory() as tmp:
        got = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q", "--no-deps"]
            + ["--no-binary", ":all:", f"selectolax=={release}", "-d", tmp],
            capture_output=True,
            text=True,
        )
        if got.returncode:
            raise SystemExit(
                f"datapipe.extract.build: pip could not fetch selectolax {release}'s sdist:\n{got.stderr}"
            )
        (sdist,) = Path(tmp).glob("selectolax-*.tar.gz")
        with tarfile.open(sdist) as tar:
            for member in tar.getmembers():
                _, _, rest = member.name.partition("/")
                if member.isfile() and rest.startswith(HEADERS) and rest.endswith(".h"):
                    member.name = rest[len(HEADERS) :]
                    tar.extract(member, root, filter="data")
    if not (root / "lexbor" / "dom" / "interfaces" / "node.h").is_file():
        raise SystemExit(f"datapipe.extract.build: no lexbor headers in selectolax {release}'s sdist")
    return root


def build(headers: Path, release: str) -> list[Path]:
    """Compile ``records.pyx``, ``treewalk.pyx`` (against lexbor's headers), ``scoring.pyx`` (against numpy's) and
    ``verdicts.pyx`` in place, next to this file; returns the extension modules' paths."""
    import numpy
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension

    walk = Extension(
        "datapipe.extract.treewalk",
        [str(SOURCE)],
        include_dirs=[str(headers)],
        define_macros=[("DATAPIPE_SELECTOLAX", f'"{release}"')],
        extra_compile_args=["-O2"],
    )
    scoring = Extension(
        "datapipe.extract.scoring",
        [str(SCORING)],
        include_dirs=[numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O2"],
    )
    verdicts = Extension("datapipe.extract.verdicts", [str(VERDICTS)], extra_compile_args=["-O2"])
    records = Extension("datapipe.extract.records", [str(RECORDS)], extra_compile_args=["-O2"])
    # the package's root on the include path: the modules cimport datapipe.extract.records from any working folder
    modules = cythonize(
        [records, walk, scoring, verdicts],
        quiet=True,
        language_level=3,
        include_path=[str(HERE.parent.parent)],
    )
    dist = Distribution({"ext_modules": modules})
    cmd = dist.get_command_obj("build_ext")
    cmd.inplace = True
    # never link an object file that another build (of another checkout) left in the shared temporary folder
    cmd.force = True
    cmd.build_temp = str(headers.parent / "tmp")
    cmd.build_lib = str(headers.parent / "lib")
    dist.package_dir = {"datapipe": str(HERE.parent)}
    dist.run_command("build_ext")
    return [next(HERE.glob(f"{name}.*.so")) for name in MODULES]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, default=HERE.parents[1] / "build", help="where headers are kept")
    args = ap.parse_args()
    release = version("selectolax")
    built = build(fetch_headers(release, args.cache), release)
    print(f"datapipe.extract.build: {', '.join(b.name for b in built)} built for selectolax {release}")


if __name__ == "__main__":
    main()
