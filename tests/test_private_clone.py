"""The suite passes wherever a user clones it, a folder only its owner may enter included (a home folder such as
root's, or one made by ``mktemp -d``): there, a test whose child drops to ``nobody`` cannot read the clone's virtual
environment, so the child must import nothing after the drop (issue 39 item 14).

The clone is the working tree (tracked and untracked files git does not ignore) copied into a ``mktemp -d`` folder;
its ``.venv`` is a symlink to the environment running these tests. That is faithful: Python takes the environment
from the path it was started by (``sys.prefix`` is the clone's ``.venv``, not the symlink's target), so every
``site-packages`` import goes through the private folder, which ``nobody`` may not enter. A copy of the environment
(GiBs) or a fresh one (minutes) would add nothing to that.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import REPO

# every test whose child drops to nobody (they need root); the test below checks the list is complete
PRIVILEGE_DROPPING = ["tests/test_hostile_records.py::test_an_unreadable_match_is_named"]


def test_the_list_of_privilege_dropping_tests_is_complete():
    dropping = {
        f"tests/{p.name}"
        for p in (REPO / "tests").glob("test_*.py")
        if p.name != Path(__file__).name
        and re.search(r"\bset(e|res)?[ug]id\(", p.read_text(encoding="utf-8"))
    }
    assert dropping == {t.split("::")[0] for t in PRIVILEGE_DROPPING}


@pytest.mark.reliability
@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="dropping to nobody needs root")
@pytest.mark.skipif(
    sys.prefix == sys.base_prefix, reason="not in a virtual environment: nothing lies in the clone"
)
@pytest.mark.skipif(shutil.which("git") is None, reason="git lists the working tree's files")
def test_privilege_dropping_tests_pass_in_a_clone_only_its_owner_may_enter():
    private = Path(tempfile.mkdtemp(prefix="datapipe-private-"))
    try:
        private.chmod(0o700)
        clone = private / "repo"
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout
        for name in filter(None, listed.decode().split("\0")):
            src = REPO / name
            if src.is_file():  # a file deleted in the working tree is still listed as tracked
                (clone / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, clone / name)
        (clone / ".venv").symlink_to(sys.prefix, target_is_directory=True)
        python = clone / ".venv" / "bin" / Path(sys.executable).name
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("PYTEST_")}
        probe = subprocess.run(
            [
                str(python),
                "-c",
                "import sys, datapipe, orjson; print(sys.prefix, datapipe.__file__, orjson.__file__)",
            ],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert probe.returncode == 0, probe.stderr[-2000:]
        # both the environment and the code come from inside the private folder
        assert all(p.startswith(str(private)) for p in probe.stdout.split()), probe.stdout
        proc = subprocess.run(
            [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *PRIVILEGE_DROPPING],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert f"{len(PRIVILEGE_DROPPING)} passed" in proc.stdout, proc.stdout[-3000:]
    finally:
        shutil.rmtree(private, ignore_errors=True)
