"""The whole-clock sweep (``RuleEngine.evaluate_series``, ``rules.sweep``) against the step engine.

Both engines evaluate the same view at the same times; afterwards everything they hold must be
equal: every alert (state, pending/firing/resolved times, keep_firing_for grace, value,
severity, texts now and at firing, evidence and how far it was scanned), every firing period,
the findings, the notices. Run on every rule case, every sample, every real capture, a
generated run, and random deployments (a property test), whole and cut into pieces (a
replay sweeps the clock piece by piece, carrying the alerts over).
"""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from pdwatch.rules import DeploymentView, RuleEngine, load_rules, parse_rules_text
from pdwatch.rules.casefile import DEFAULT_START, _last_sample, _seconds, _start, build_view
from pdwatch.rules.sweep import stepped

ROOT = Path(__file__).resolve().parents[2]
CASE_FILES = sorted((ROOT / "tests" / "rules" / "cases").glob("*.test.yaml")) + \
    sorted((ROOT / "tests" / "rules_builtin" / "cases").glob("*.test.yaml"))
SAMPLES = sorted(p for p in (ROOT / "samples").iterdir() if p.is_dir())
CAPTURES = sorted(p for p in (ROOT / "tests" / "data" / "real" / "captures").iterdir() if p.is_dir())


# -- what an engine holds ------------------------------------------------------------------
def _alert(a) -> dict:
    return {"key": a.key, "state": a.state, "active_at": a.active_at, "engines": a.engines, "fired_at": a.fired_at,
            "resolved_at": a.resolved_at, "keep_since": a.keep_since, "value": a.value, "severity": a.severity,
            "texts": a.texts, "fired_texts": a.fired_texts, "fired_value": a.fired_value,
            "evidence": None if a.evidence is None else (a.evidence.scanned_to, a.evidence.as_dicts())}


def held(engine: RuleEngine) -> dict:
    return {"active": [sorted((repr(k), _alert(a)) for k, a in alerts.items()) for alerts in engine.book.active_per_rule()],
            "periods": sorted((p.rule, repr(_alert(p.alert))) for p in engine.book.periods),
            "findings": engine.findings(), "notices": list(engine.notices), "clock": engine._last_now}


def differences(a, b, path: str = "") -> list[str]:
    if type(a) is not type(b):
        return [f"{path}: {a!r:.200} vs {b!r:.200}"]
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items vs {len(b)}: {a!r:.400} vs {b!r:.400}"]
        return [d for k, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{k}]")]
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return [f"{path}: keys {sorted(a, key=str)} vs {sorted(b, key=str)}"]
        return [d for k in a for d in differences(a[k], b[k], f"{path}.{k}")]
    if hasattr(a, "__dataclass_fields__"):
        return differences(a.__dict__, b.__dict__, path)
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return []
    return [] if a == b else [f"{path}: {a!r:.300} vs {b!r:.300}"]


def _view_at(view, facts_at, k):
    """``view`` with each changing fact's value at the ``k``-th time."""
    endpoints = []
    for ep in view.endpoints:
        facts = dict(ep.facts)
        for name, per_endpoint in facts_at.items():
            if ep.name in per_endpoint:
                facts[name] = per_endpoint[ep.name][k]
        endpoints.append(replace(ep, facts=facts))
    return DeploymentView(tuple(endpoints), view.facts)


def assert_same(rules, view, times, cuts=(), facts_at=None) -> RuleEngine:
    """Step through ``times``; sweep them, in pieces cut at ``cuts``; compare after each piece.
    ``facts_at``: facts that change along the clock (fact -> endpoint -> value per time)."""
    step, sweep = RuleEngine(rules), RuleEngine(rules)
    bounds = sorted({c for c in cuts if 0 < c < len(times)}) + [len(times)]
    start = 0
    for end in bounds:
        for k in range(start, end):
            step.evaluate(_view_at(view, facts_at, k) if facts_at else view, times[k])
        piece = {name: {ep: values[start:end] for ep, values in per.items()} for name, per in (facts_at or {}).items()}
        sweep.evaluate_series(view, times[start:end], piece or None)
        diff = differences(held(step), held(sweep))
        assert not diff, f"after steps {start}..{end}:\n" + "\n".join(diff[:8])
        start = end
    return step


# -- rule cases ----------------------------------------------------------------------------
def _cases():
    for path in CASE_FILES:
        doc = yaml.safe_load(path.read_text())
        for test in doc.get("tests") or []:
            yield pytest.param(path, test, id=f"{path.name}::{test.get('name')}")


@pytest.mark.parametrize("path, test", list(_cases()))
def test_rule_cases(path, test):
    doc = yaml.safe_load(path.read_text())
    files = doc.get("rule_files") or ["builtin"]
    rules = load_rules([os.path.join(path.parent, f) for f in files if f != "builtin"],
                       include_builtin="builtin" in files)
    start = _start(test)
    view = build_view(test)
    step = _seconds(test.get("eval_every", test.get("interval", "10s")))
    expects = test.get("expect") or []
    seconds = {_seconds(e["at"]) for e in expects}
    last = max([*seconds, _last_sample(view, start)] if test.get("periods") is not None else [*seconds, 0.0])
    k = 0
    while k * step <= last + 1e-9:
        seconds.add(round(k * step, 6))
        k += 1
    order = sorted(seconds)
    times = [start + timedelta(seconds=s) for s in order]
    assert_same(rules, view, times)
    assert_same(rules, view, times, cuts=[order.index(_seconds(e["at"])) + 1 for e in expects])


# -- real logs and generated runs, as a report reads them ----------------------------------
def _run(paths: list[str], pieces: int = 4) -> None:
    from pdwatch.session.analysis import analyse, evaluation_times
    analysis = analyse(paths, rules=[])
    if analysis.clock is None:
        return
    store = analysis.store
    times = [t.floor("us").to_pydatetime() for t in evaluation_times(store, *analysis.clock)]
    view = store.view()
    rules = load_rules()
    assert_same(rules, view, times)
    assert_same(rules, view, times, cuts=[len(times) * k // pieces for k in range(1, pieces)])


@pytest.mark.parametrize("folder", SAMPLES, ids=[p.name for p in SAMPLES])
def test_samples(folder):
    _run([str(folder)])


@pytest.mark.parametrize("folder", CAPTURES, ids=[p.name for p in CAPTURES])
def test_real_captures(folder):
    _run([str(folder)])


@pytest.mark.parametrize("args", [
    ["--topology", "2xDEP2-1xDEP4", "--cc", "2048", "--duration", "20m", "--interval", "2", "--seed", "3"],
    ["--scenario", "kv-exhausted", "--duration", "12m", "--interval", "5", "--seed", "7"],
], ids=["pd-2s", "kv-exhausted-5s"])
def test_generated_runs(tmp_path, args):
    out = tmp_path / "run"
    subprocess.run([sys.executable, "-m", "pdwatch", "simulate", "--out", str(out), "--noise", "quiet", *args],
                   check=True, capture_output=True, timeout=300)
    _run([str(out)])


# -- random deployments ----------------------------------------------------------------------
FUZZ_RULES = """groups:
- name: fuzz
  rules:
  - finding: q_engine
    scope: engine
    expr: avg(waiting, 3 samples) > 2 and last(running) >= 1
    value: max(waiting, 3 samples)
    for: 2 samples
    keep_firing_for: 20s
    severity: warning
    summary: "{{ endpoint }} {{ engines }} waiting {{ value }} run {{ avg(running, 1m) }} since {{ since_last() }}"
    evidence:
      rows: waiting > avg(waiting, 2 samples)
      rank: waiting - running
      events: [preemption, kv_expired]
      fields: [running, waiting]
      limit: 2
  - finding: q_ep
    scope: endpoint
    when: role() != "frontend"
    expr: fraction(waiting > 0, 4 samples) >= 0.5 or count_events("kv_expired", 30s) > 0
    for: 15s
    keep_firing_for: 2 samples
    severity: info
    summary: "{{ role }} {{ fact.max_num_seqs }} {{ count_events('kv_expired') }} {{ p90(kv_usage_pct, 1m) }}"
    variants:
    - when: max(kv_usage_pct, 2 samples) > 80
      severity: critical
      summary: "hot {{ stddev(kv_usage_pct, 1m) }} {{ slope(waiting, 1m) }}"
    evidence:
      rank: kv_usage_pct
      events: [kv_expired]
  - finding: dep
    scope: deployment
    expr: peer_max("*", avg(waiting, 2 samples)) > 3 and peer_any("decode", last(running) > 2)
    value: peer_avg("*", avg(running, 3 samples))
    keep_firing_for: 1 sample
    severity: warning
    summary: "dep {{ value }} {{ peer_sum('*', last(waiting)) }} {{ interval() }}"
  - finding: crashy
    scope: engine
    expr: count_events("engine_dead") > 0 and not before("stop_requested", "engine_dead") or since_last() > 3 * interval()
    severity: critical
    summary: "crash {{ count_events('engine_dead') }} {{ coalesce(since_last(), -1) }}"
    evidence:
      events: [engine_dead, stop_requested]
  - finding: slopey
    scope: endpoint
    expr: slope(running, greatest(3 * interval(), 20)) > 0.05 and samples(1m) >= 2
    keep_firing_for: 25s
    severity: info
    summary: "s {{ first(running, 1m) }} {{ delta(running, 1m) }} {{ min(kv_usage_pct, 30s) }} {{ sum(running > 1, 1m) }}"
    evidence:
      rows: running > 1
  - finding: matching
    scope: endpoint
    expr: count_matching("kv_expired", "ev [13579]", 1m) > 0
    keep_firing_for: 1 sample
    severity: info
    summary: "m {{ count_matching('kv_expired', 'ev [13579]') }}"
"""


def _series(rng: random.Random, n: int, lo: int, hi: int, missing: float = 0.1) -> str:
    out = []
    for _ in range(n):
        if rng.random() < missing:
            out.append("_")
        else:
            out.append(str(rng.choice([rng.randint(lo, hi), round(rng.uniform(lo, hi), 1), lo, hi])))
    return " ".join(out)


def random_run(rng: random.Random):
    """A deployment of 1-4 endpoints of 0-3 engines, with gaps, events (some without a time),
    measured or given intervals, and a clock at another step, sometimes with a repeated time."""
    n = rng.randint(8, 60)
    interval = rng.choice([1, 2, 5, 10])
    endpoints = []
    for k in range(rng.randint(1, 4)):
        engines = {}
        for g in range(rng.randint(0, 3)):
            engines[g] = {"running": _series(rng, rng.randint(0, n), 0, 6),
                          "waiting": _series(rng, rng.randint(0, n), 0, 8),
                          "kv_usage_pct": _series(rng, rng.randint(0, n), 0, 100)}
            if rng.random() < 0.3:
                engines[g]["preemptions"] = _series(rng, n, 0, 2, 0.3)
        events = [{"at": None if rng.random() < 0.15 else f"{rng.randint(0, n) * 2}s",
                   "kind": rng.choice(["kv_expired", "engine_dead", "stop_requested", "preemption", "oom"]),
                   "engine": rng.choice([None, 0, 1, 2]), "text": f"ev {j}", "line_no": rng.randint(1, 50)}
                  for j in range(rng.randint(0, 8))]
        facts = {"max_num_seqs": rng.choice([4, 8, 256])} if rng.random() < 0.7 else {}
        endpoints.append({"name": f"e{k}", "engines": engines, "events": events, "facts": facts,
                          "role": rng.choice(["prefill", "decode", "aggregated", "unknown", "frontend"])})
    view = build_view({"interval": f"{interval}s", "endpoints": endpoints})
    for e in view.endpoints:
        if rng.random() < 0.3:
            e.facts.pop("stats_interval_s")  # measured from the lines, as the clock moves
    step = interval * rng.choice([0.5, 1, 1, 2, 3])
    count = int(n * interval / step) + rng.randint(0, 10)
    times = [DEFAULT_START + timedelta(seconds=round(k * step, 6)) for k in range(count)]
    if count > 3 and rng.random() < 0.2:
        times.insert(2, times[2])
    cuts = sorted(rng.sample(range(1, count), min(3, count - 1))) if count > 1 and rng.random() < 0.6 else []
    # A replay's store learns each endpoint's interval anew as lines come: it changes along the clock.
    facts_at = {"stats_interval_s": {e.name: [interval * rng.choice([0.97, 1.0, 1.0, 1.3]) for _ in times]
                                     for e in view.endpoints if "stats_interval_s" in e.facts and rng.random() < 0.5}}
    return view, times, cuts, facts_at if facts_at["stats_interval_s"] else None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_random_deployments(seed):
    rules = load_rules() + parse_rules_text(FUZZ_RULES, "fuzz.yaml")
    view, times, cuts, facts_at = random_run(random.Random(seed))
    assert_same(rules, view, times, cuts, facts_at)


def test_count_matching_rules_are_stepped():
    rules = parse_rules_text(FUZZ_RULES, "fuzz.yaml")
    assert [r.finding for r in rules if stepped(r)] == ["matching"]
    assert all(stepped(r) is None for r in load_rules())  # every built-in rule is swept


def test_the_clock_may_not_go_back():
    view, times, _, _ = random_run(random.Random(1))
    engine = RuleEngine(load_rules())
    engine.evaluate_series(view, times[3:5])
    with pytest.raises(ValueError, match="backwards"):
        engine.evaluate_series(view, times[:2])
    with pytest.raises(ValueError, match="backwards"):
        engine.evaluate_series(view, [times[6], times[5]])
