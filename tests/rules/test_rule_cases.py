"""promtool-style rule tests: every tests/rules/cases/*.test.yaml must pass."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pdwatch.rules.casefile import run_case_file
from pdwatch.rules.series import expand

CASES = sorted((Path(__file__).parent / "cases").glob("*.test.yaml"))


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_case_file(path):
    results = run_case_file(path)
    assert results, f"{path.name} has no tests"
    failures = [f"{r.name}: {msg}" for r in results for msg in r.failures]
    assert not failures, "\n".join(failures)


def test_runner_reports_what_differs(tmp_path):
    case = tmp_path / "wrong.test.yaml"
    rules = Path(__file__).parent / "cases" / "samples_rule.yaml"
    case.write_text(f"""rule_files: [{rules}]
tests:
- name: expects the wrong thing
  interval: 10s
  endpoints:
  - name: e
    engines: {{0: {{waiting: '0 5 5 5'}}}}
  expect:
  - {{at: 30s, firing: []}}
  - {{at: 0s, firing: [{{finding: queue_persists}}]}}
""")
    [r] = run_case_file(case)
    assert r.failures == [
        "at 0s: expected {'finding': 'queue_persists'}, not found",
        "at 30s: unexpected {'finding': 'queue_persists', 'endpoint': 'e', 'engines': [0], 'value': 5.0}"]


@pytest.mark.parametrize("text, values", [
    ("1 2 3", [1, 2, 3]),
    ("0+10x3", [0, 10, 20, 30]),
    ("44-11x4", [44, 33, 22, 11, 0]),
    ("4x3", [4, 4, 4, 4]),
    ("_ 1 _x2 2", [None, 1, None, None, 2]),
    ("-1.5 1e2", [-1.5, 100]),
])
def test_series_notation(text, values):
    got = [None if math.isnan(v) else v for v in expand(text)]
    assert got == values


def test_series_errors():
    with pytest.raises(ValueError, match="bad series token 'x3'"):
        expand("1 x3")
