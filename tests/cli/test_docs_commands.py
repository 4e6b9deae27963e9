"""Every ``pdwatch`` command in the README and docs/ stays true.

Each command line of a ``sh`` block is parsed by pdwatch's own argument parser (its options
exist, its values are accepted); those whose inputs are in the repository (the bundled
samples) are also run, and must exit as documented. Synopsis lines (``[--option]``) and
the README's recipes (tests/cli/test_readme_recipes.py runs those) are left out.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pdwatch.cli import _join_negative_offsets, build_parser
from tests.conftest import REPO

_FENCE = re.compile(r"^(`{3,})sh\n(.*?)^\1\n", re.S | re.M)
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def commands() -> list[tuple[str, str]]:
    out = []
    for page in PAGES:
        text = page.read_text()
        recipes = {m.start() for m in re.finditer(r"<!-- recipe: [\w-]+ -->\n", text)}
        for block in _FENCE.finditer(text):
            if any(0 <= block.start() - r < 40 for r in recipes):
                continue
            for text_line in block.group(2).splitlines():
                text_line = re.split(r"\s+#\s|\s+\|\|\s", text_line.strip())[0]
                for line in re.split(r"\s+&(?:\s+|$)", text_line):  # `a & b`: two commands
                    line = line.strip().rstrip(" &")
                    if line.startswith("pdwatch ") and " [" not in line and not line.endswith("\\"):
                        out.append((page.relative_to(REPO).as_posix(), line))
    return out


COMMANDS = commands()


def test_the_docs_have_commands():
    assert len(COMMANDS) >= 15, COMMANDS


@pytest.mark.parametrize("page,line", COMMANDS, ids=[f"{p}:{c[:60]}" for p, c in COMMANDS])
def test_every_documented_command_parses(page: str, line: str):
    argv = _join_negative_offsets(shlex.split(line)[1:])
    try:
        args = build_parser(argv[0]).parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"{page}: `{line}` is refused by pdwatch's parser (exit {exc.code})")
    assert args.command == argv[0]


def _runnable(line: str) -> bool:
    argv = shlex.split(line)[1:]
    if argv[0] not in ("report", "replay", "parse", "capacity") or "--follow" in argv or "-f" in argv:
        return False
    paths = build_parser(argv[0]).parse_args(_join_negative_offsets(argv)).__dict__.get("paths") or []
    return bool(paths) and all((REPO / p).exists() for p in paths)


RUNNABLE = [(p, c) for p, c in COMMANDS if _runnable(c)]


def test_some_documented_commands_run_on_the_samples():
    assert len(RUNNABLE) >= 2, RUNNABLE


@pytest.mark.parametrize("page,line", RUNNABLE, ids=[f"{p}:{c[:60]}" for p, c in RUNNABLE])
def test_documented_commands_on_the_samples_run(page: str, line: str, tmp_path: Path):
    (tmp_path / "samples").symlink_to(REPO / "samples")  # run from a copy of the checkout's top
    result = subprocess.run([sys.executable, "-m", "pdwatch", *shlex.split(line)[1:]], cwd=tmp_path,
                            capture_output=True, text=True, timeout=180)
    fail_on = "--fail-on" in line
    assert result.returncode in ((0, 1) if fail_on else (0,)), f"{page}: `{line}`: {result.stderr[-2000:]}"
    assert "Traceback" not in result.stderr
