"""The built-in rules' promtool-style cases: every tests/rules_builtin/cases/<rule>.test.yaml
passes, and every built-in rule has one, with a case that fires it and a near miss."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pdwatch.rules import load_rules
from pdwatch.rules.casefile import run_case_file

CASES_DIR = Path(__file__).parent / "cases"
CASES = sorted(CASES_DIR.glob("*.test.yaml"))
BUILTIN_IDS = sorted(r.finding for r in load_rules())


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_builtin_case_file(path):
    results = run_case_file(path)
    assert results, f"{path.name} has no tests"
    failures = [f"{r.name}: {msg}" for r in results for msg in r.failures]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("rule", BUILTIN_IDS)
def test_every_builtin_has_a_fire_case_and_a_near_miss(rule):
    path = CASES_DIR / f"{rule}.test.yaml"
    assert path.is_file(), f"no case file for built-in rule {rule}"
    doc = yaml.safe_load(path.read_text())
    assert doc.get("rule_files") == ["builtin"], "cases run against all built-ins, as deployed"
    tests = doc["tests"]
    near = [t for t in tests if str(t["name"]).startswith("near miss")]
    fire = [t for t in tests if not str(t["name"]).startswith("near miss")]
    assert near, f"{rule}: no 'near miss - ...' case"
    assert fire, f"{rule}: no case that fires it"
    for t in fire:  # a fire case expects this rule somewhere
        wants = [w for e in t.get("expect") or [] for w in e.get("firing") or []] + list(t.get("periods") or [])
        assert any(w.get("finding") == rule for w in wants), f"{rule}: case {t['name']!r} never expects it"
    for t in near:  # a near miss says this rule stays silent
        silent = [e for e in t.get("expect") or [] if not any(w.get("finding") == rule for w in e.get("firing") or [])]
        periods = t.get("periods")
        assert silent or periods is not None, f"{rule}: near miss {t['name']!r} checks nothing"
        assert not any(p.get("finding") == rule for p in periods or []), f"{rule}: near miss {t['name']!r} expects it"


def test_case_files_name_builtin_rules():
    assert sorted(p.name.removesuffix(".test.yaml") for p in CASES) == BUILTIN_IDS
