"""Real HTML pages from named Debian documentation packages, installed when missing: the same corpus on any machine.

What happens to be under /usr/share/doc differs from machine to machine (241 HTML pages on one fresh machine, some
5,500 on another that had documentation packages installed), and a benchmark on a few hundred pages measures fixed
costs. So the benchmarks that need real web pages read only the HTML files these packages install (``dpkg -L``),
in this package order and then by path, and install the packages by name first (``apt-get``, as root or through
password-less ``sudo``), as the Slurm test installs Slurm. On Debian 12 they give about 5,250 pages (65 MB): the
Debian Administrator's Handbook in 26 languages, the Python 3.11, PostgreSQL 15 and Git manuals and the Debian
Reference. A benchmark designed for that many refuses to run on fewer (``require``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGES = ("debian-handbook", "python3.11-doc", "postgresql-doc-15", "git-doc", "debian-reference-en")
MAX_PAGE = 1 << 20  # Common Crawl truncates records at 1 MiB; larger pages are passed over
MIN_PAGES = 5000  # what the benchmarks were designed for (5,258 listed on Debian 12)
HTML_SUFFIXES = (".html", ".htm", ".xhtml")


def installed(package: str) -> bool:
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, check=False
    )
    return proc.returncode == 0 and proc.stdout.strip().endswith(" installed")


def ensure_packages(packages: tuple[str, ...] = PACKAGES) -> None:
    """Install the packages that are missing; exit with one line saying why when that is impossible."""
    if shutil.which("dpkg-query") is None:
        raise SystemExit("benchmark corpus: this machine has no dpkg: the pages come from Debian packages")
    missing = [p for p in packages if not installed(p)]
    if not missing:
        return
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    print(f"benchmark corpus: installing {' '.join(missing)} (apt-get)", file=sys.stderr, flush=True)
    for cmd in (
        [*sudo, "apt-get", "update", "-qq"],
        [*sudo, "apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing],
    ):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
            raise SystemExit(f"benchmark corpus: `{' '.join(cmd)}` failed: {tail[0]}")
    still = [p for p in packages if not installed(p)]
    if still:
        raise SystemExit(f"benchmark corpus: {' '.join(still)} still not installed after apt-get")


def package_pages(packages: tuple[str, ...] = PACKAGES) -> list[Path]:
    """The regular HTML files the packages installed (no symbolic links, none over ``MAX_PAGE``), in package
    order, each package's by path."""
    out: list[Path] = []
    seen: set[Path] = set()
    for package in packages:
        listed = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, check=True).stdout
        for name in sorted(line for line in listed.splitlines() if line.endswith(".html")):
            path = Path(name)
            if path in seen or path.is_symlink() or not path.is_file():
                continue
            if 0 < path.stat().st_size <= MAX_PAGE:
                seen.add(path)
                out.append(path)
    return out


def require(pages: list[Path], minimum: int = MIN_PAGES) -> list[Path]:
    if len(pages) < minimum:
        raise SystemExit(
            f"benchmark corpus: {len(pages)} pages from {', '.join(PACKAGES)}; this benchmark was designed for "
            f"at least {minimum} (a smaller corpus measures fixed costs, not throughput)"
        )
    return pages


def pages() -> list[Path]:
    """Install what is missing, list the pages, refuse too few."""
    ensure_packages()
    return require(package_pages())


# ---------------------------------------------------------------------------------------------------- downloaded


def cache_root(arg: str | None = None) -> Path:
    """Where downloaded packages and built corpora are kept between runs: ``arg``, ``$DATAPIPE_BENCH_CACHE`` or
    ``~/.cache/datapipe-bench``."""
    return Path(
        arg or os.environ.get("DATAPIPE_BENCH_CACHE") or Path.home() / ".cache" / "datapipe-bench"
    ).resolve()


def fetch(package: str, debs: Path) -> Path:
    """The package's .deb, downloaded by name into ``debs`` once (``apt-get download`` needs no root)."""
    debs.mkdir(parents=True, exist_ok=True)
    found = sorted(debs.glob(f"{package}_*.deb"))
    if found:
        return found[-1]
    if shutil.which("apt-get") is None:
        raise SystemExit(f"benchmark corpus: this machine has no apt-get to download {package}")
    proc = subprocess.run(["apt-get", "download", "-qq", package], cwd=debs, capture_output=True, text=True)
    found = sorted(debs.glob(f"{package}_*.deb"))
    if proc.returncode != 0 or not found:
        raise SystemExit(
            f"benchmark corpus: `apt-get download {package}` failed: {proc.stderr.strip()[-300:]}"
        )
    return found[-1]


def downloaded_pages(package: str, root: Path) -> list[Path]:
    """The HTML pages of a package that need not be installed: its .deb downloaded by name into ``root/debs`` and
    only its HTML files unpacked into ``root/html/PACKAGE`` (once; a finished unpack leaves a marker). Regular
    files only, none over ``MAX_PAGE``, by path."""
    folder = root / "html" / package
    done = folder / ".unpacked"
    if not done.exists():
        deb = fetch(package, root / "debs")
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
        patterns = [f"*{suffix}" for suffix in HTML_SUFFIXES]
        untar = subprocess.run(
            ["tar", "-x", "-C", str(folder), "--wildcards", *patterns], stdin=tar.stdout, capture_output=True
        )
        tar.wait()
        # tar exits 2 when a pattern matched nothing (a package without .htm files): only a broken stream is fatal
        if tar.returncode != 0 or untar.returncode not in (0, 2):
            raise SystemExit(f"benchmark corpus: unpacking {deb.name} failed: {untar.stderr.decode()[-300:]}")
        done.write_text(deb.name + "\n")
    return sorted(
        p
        for p in folder.rglob("*")
        if p.suffix in HTML_SUFFIXES
        and not p.is_symlink()
        and p.is_file()
        and 0 < p.stat().st_size <= MAX_PAGE
    )
