"""The import borders of docs/architecture.md, over the real import graph.

The module-level borders are import-linter contracts in ``pyproject.toml`` (``[tool.importlinter]``), checked here
by running ``lint-imports`` itself; what its contracts cannot say is checked from the source's syntax trees, lazy
imports inside functions included: no module imports another module's private name, and ``datapipe`` never imports
datatrove's executors or pipeline steps (it uses datatrove's text constants as a library, nothing of its engine).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGES = ("datapipe", "pipelines")


def _modules(package: str):
    for path in sorted((REPO / package).rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _imports(tree: ast.AST):
    """``(module, name or None, line)`` for every import in a module, at any depth."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                yield node.module, alias.name, node.lineno


def private_imports(path: Path, tree: ast.AST) -> list[str]:
    """``from datapipe.x import _name`` (or pipelines) anywhere in a module: another module's private name."""
    return [
        f"{path.relative_to(REPO)}:{line}: imports {name} from {module}"
        for module, name, line in _imports(tree)
        if module.split(".")[0] in PACKAGES and name and name.startswith("_") and not name.startswith("__")
    ]


def test_import_contracts_hold():
    lint = Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run([str(lint), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    import tomllib

    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert len(contracts) >= 6  # the browser's own among them
    assert "0 broken" in proc.stdout and f"{len(contracts)} kept" in proc.stdout


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_another_modules_private_name(package):
    found = [hit for path, tree in _modules(package) for hit in private_imports(path, tree)]
    assert found == []


def test_private_name_check_finds_one(tmp_path):
    """The check above would see a private import, lazy or not."""
    src = "def f():\n    from datapipe.filters.gopher import _hidden\n    return _hidden\n"
    path = REPO / "datapipe" / "example.py"
    assert private_imports(path, ast.parse(src)) == [
        "datapipe/example.py:2: imports _hidden from datapipe.filters.gopher"
    ]


def test_datapipe_uses_no_datatrove_engine_part():
    engine = ("datatrove.pipeline", "datatrove.executor", "datatrove.data")
    found = [
        f"{path.relative_to(REPO)}:{line}: {module}"
        for path, tree in _modules("datapipe")
        for module, _, line in _imports(tree)
        if module.startswith(engine)
    ]
    assert found == []


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_cycle_and_a_small_package_root():
    """No module of datapipe imports itself through others (lazy imports inside functions and type-checking imports
    counted), and the package root holds at most three modules: the rest is placed in a floor of the layered
    contract."""
    import grimp

    graph = grimp.build_graph("datapipe", include_external_packages=False)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert _cycles(edges) == []
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c"]
    ]  # the check finds one
    root = sorted(p.name for p in (REPO / "datapipe").glob("*.py"))
    assert len(root) <= 3, root


def test_the_public_face_names_each_entry_point_and_loads_nothing_until_asked():
    """``datapipe`` exports the entry points users, tests and benchmarks need; each is the defining module's own
    object, and ``import datapipe`` alone loads none of them (the CLI and every worker import it)."""
    import importlib

    import datapipe

    # the entry points, then what benchmarks and end-to-end checks drive, grouped by concern
    assert datapipe.__all__[0] == "__version__" and len(datapipe.__all__) < 120
    for name in datapipe.__all__[1:]:
        module, _, attribute = datapipe._EXPORTS[name].partition(":")
        home = importlib.import_module(module)
        want = home if datapipe._EXPORTS[name].endswith(":") else getattr(home, attribute or name)
        assert getattr(datapipe, name) is want, name
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        datapipe.nothing  # noqa: B018
    fresh = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, datapipe; print(sorted(m for m in sys.modules if m.startswith(('datapipe.', 'numpy'))))",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert fresh.returncode == 0 and fresh.stdout.strip() == "[]", fresh.stdout + fresh.stderr


def test_benchmarks_import_only_the_face():
    """Benchmarks are the examples people copy: of datapipe they import the public face (``from datapipe import
    ...``) and ``datapipe.cli``, never a module inside the package; and every name the face lists resolves. (Those
    that measure an engine's own machinery, Beam's worker floor or its dedup transforms, import that engine's
    modules: the engines are not behind the face.)"""
    import ast

    import datapipe

    allowed = {"datapipe", "datapipe.cli"}
    deep = []
    for path in sorted((REPO / "benchmarks").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("datapipe"):
                if node.module not in allowed:
                    deep.append(f"{path.name}:{node.lineno} from {node.module}")
                for alias in node.names if node.module == "datapipe" else ():
                    assert alias.name in datapipe.__all__, f"{path.name}: datapipe has no {alias.name}"
            elif isinstance(node, ast.Import):
                deep += [
                    f"{path.name}:{node.lineno} import {a.name}"
                    for a in node.names
                    if a.name.startswith("datapipe.")
                ]
    assert deep == [], deep
    for name in datapipe.__all__:
        getattr(datapipe, name)


def any_per_thousand_lines(root: Path) -> float:
    """``typing.Any`` written as a name (annotations, casts), per thousand lines of a package's Python."""
    uses = lines = 0
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        lines += len(path.read_text(encoding="utf-8").splitlines())
        uses += sum(1 for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == "Any")
        uses += sum(
            1 for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == "Any"
        )  # typing.Any
    return 1000 * uses / max(lines, 1)


def test_any_is_rare_in_datapipe():
    """Records are typed (stage.json, the ledger, the manifest) and documents pass as their own alias: ``Any`` stays
    below 10 per thousand lines of datapipe/ (issue 67; 16.6 before)."""
    density = any_per_thousand_lines(REPO / "datapipe")
    assert density < 10, f"typing.Any {density:.1f} per thousand lines of datapipe/"


def test_the_any_count_counts(tmp_path):
    (tmp_path / "m.py").write_text("from typing import Any\nimport typing\nx: Any = 1\ny: typing.Any = 2\n")
    assert any_per_thousand_lines(tmp_path) == 1000 * 2 / 4
