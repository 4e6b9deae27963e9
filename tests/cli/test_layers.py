"""What the wheel holds and how its modules depend on each other, checked on an installed copy.

The repository keeps ``parsers/`` and ``rules/`` at its top, but the wheel installs them as
``pdwatch.parsers`` and ``pdwatch.rules`` (setuptools' package-dir): tools that walk the
source tree would not find them under ``pdwatch/``. So the package is installed (offline,
no build isolation) into a temporary folder, and the checks run there.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")  # a copy: setuptools writes build/ next to the sources
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    for name in ("pdwatch", "parsers", "rules"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path_factory.mktemp("site")
    out = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                          "--no-compile", "--target", str(target), str(src)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return target


def _python(code: str, site: Path) -> subprocess.CompletedProcess:
    # cwd is the install folder: the repository's own folders must not be on the path
    return subprocess.run([sys.executable, "-c", code], cwd=site, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120)


def test_the_wheel_adds_one_import_name_and_every_module(installed: Path):
    names = {p.name for p in installed.iterdir()} - {"bin"}
    assert {n for n in names if not n.endswith(".dist-info")} == {"pdwatch"}
    for folder, home in (("pdwatch", "pdwatch"), ("parsers", "pdwatch/parsers"), ("rules", "pdwatch/rules")):
        shipped = {p.relative_to(REPO / folder) for p in (REPO / folder).rglob("*")
                   if p.suffix in (".py", ".yaml") and "__pycache__" not in p.parts}
        missing = [str(p) for p in shipped if not (installed / home / p).is_file()]
        assert not missing, f"{folder}/ files the wheel leaves out (add their package to pyproject.toml): {missing}"


def test_rules_and_parsers_are_no_top_level_names(installed: Path):
    for name in ("rules", "parsers"):
        out = _python(f"import {name}", installed)
        assert out.returncode != 0 and "ModuleNotFoundError" in out.stderr, out
    out = _python("import pdwatch.rules, pdwatch.parsers, pdwatch.cli; print(pdwatch.rules.__file__)", installed)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(installed / "pdwatch" / "rules" / "__init__.py")


def test_each_layer_imports_only_the_layers_below(installed: Path):
    """The contracts in pyproject.toml (``[tool.importlinter]``): sources -> events -> model ->
    ... -> commands, parsers and rules import nothing else of pdwatch, only the dashboard
    imports Textual."""
    lint = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(lint), "--config", str(REPO / "pyproject.toml"), "--no-cache"], cwd=installed,
                         env={"PYTHONPATH": str(installed), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "2 kept, 0 broken" in out.stdout


def test_no_import_cycle(installed: Path):
    """No module imports, directly or not, a module that imports it back (imports for type
    checking only are left out: they never run)."""
    code = f"""
import sys
sys.path.insert(0, {str(installed)!r})
import grimp
graph = grimp.build_graph("pdwatch", cache_dir=None, exclude_type_checking_imports=True)
index, low, stack, on, cycles = {{}}, {{}}, [], set(), []
def visit(v):  # Tarjan's strongly connected components
    index[v] = low[v] = len(index); stack.append(v); on.add(v)
    for w in graph.find_modules_directly_imported_by(v):
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        part = []
        while True:
            w = stack.pop(); on.discard(w); part.append(w)
            if w == v:
                break
        if len(part) > 1:
            cycles.append(sorted(part))
sys.setrecursionlimit(10000)
for module in sorted(graph.modules):
    if module not in index:
        visit(module)
print({{"pdwatch.rules.engine", "pdwatch.parsers.scanner"}} <= set(graph.modules), cycles)
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=installed, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    both, cycles = out.stdout.split(" ", 1)
    assert both == "True", out.stdout  # pdwatch.parsers and pdwatch.rules were analysed too
    assert cycles.strip() == "[]", f"import cycles: {cycles}"
