"""The triage: one verdict line rolled up from the findings and the store's numbers, and the
grouping of identical findings across endpoints (pdwatch.session.triage), on the bundled
samples and on the real captures (the same module the dashboard and the report writers use)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdwatch.session import triage
from pdwatch.session.analysis import analyse
from pdwatch.views.report.data import sort_findings

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
CAPTURES = REPO / "tests" / "data" / "real" / "captures"


def _assess(path: Path):
    a = analyse([str(path)])
    findings = sort_findings(a.findings)
    return triage.assess(a.store, findings, a.clock[1] if a.clock else None), findings


@pytest.fixture(scope="module")
def verdicts() -> dict[str, tuple]:
    out = {}
    for name in ("prefill-bound", "kv-exhausted", "healthy", "stats-missing", "engine-crash"):
        out[name] = _assess(SAMPLES / name)
    for name in ("kv_pressure", "pd_connector_crash", "pd_pair", "disable_log_stats"):
        out[name] = _assess(CAPTURES / name)
    return out


def test_prefill_bound_rolls_four_endpoints_into_one_line(verdicts):
    (verdict, groups), findings = verdicts["prefill-bound"]
    assert verdict.text == ("Bottleneck: prefill — 4/4 prefill endpoints saturated (≈42k tok/s per engine, "
                            "~275 waiting); decode at ≤18% KV")
    assert verdict.kind == "bottleneck" and verdict.severity == "warning" and verdict.rule == "prefill_bound"
    assert verdict.endpoints == ("prefill_w0", "prefill_w1", "prefill_w2", "prefill_w3")
    # the numbers come from the store, not from the findings' text
    assert 42_000 < verdict.figures["prompt_tps_per_engine"] < 42_500
    assert 270 < verdict.figures["waiting_per_engine"] < 280 and 17 < verdict.figures["decode_kv_max_pct"] < 19
    assert len(groups) == 1 and groups[0].label == "prefill_w0–w3" and groups[0].members == (0, 1, 2, 3)
    assert len(findings) == 4


def test_kv_exhausted_names_the_decode_endpoint_and_its_cache(verdicts):
    (verdict, groups), _ = verdicts["kv-exhausted"]
    assert verdict.title == "Bottleneck: decode KV cache" and verdict.severity == "critical"
    assert verdict.detail.startswith("decode_w0 at 99.9% KV, ~50 waiting, 587 running per engine")
    assert verdict.detail.endswith("prefill not queueing")
    assert [(g.rule, g.label) for g in groups] == [("kv_exhausted", "decode_w0"), ("capacity", "decode_w0")]
    assert verdict.others == 1


def test_healthy_has_no_bottleneck(verdicts):
    (verdict, groups), findings = verdicts["healthy"]
    assert not findings and not groups
    assert verdict.kind == "ok" and verdict.severity is None
    assert verdict.text == "No bottleneck found — prefill ≤0.6% KV, no queue; decode ≤43% KV, no queue"


def test_stats_missing_is_a_blind_spot_before_its_lint(verdicts):
    (verdict, groups), _ = verdicts["stats-missing"]
    assert verdict.text == ("Blind spot: no stats — decode_w0 prints no stats lines; 1/9 serving endpoints "
                            "cannot be judged")
    assert [g.rule for g in groups] == ["stats_missing", "lint_api_server_count"]


def test_engine_crash_is_a_failure_with_the_engine_and_time(verdicts):
    (verdict, _), _ = verdicts["engine-crash"]
    assert verdict.text == "Failure: engine died — decode_w0 engine 3 died at 14:01:53; 6 other endpoints still up"
    assert verdict.kind == "failure" and verdict.severity == "critical"


def test_real_captures(verdicts):
    (verdict, _), _ = verdicts["pd_connector_crash"]
    assert verdict.text == "Failure: engine died — decode engine 0 died at 04:04:29; 1 other endpoint still up"
    (verdict, groups), findings = verdicts["kv_pressure"]
    # the finding resolved before the end of the logs: the numbers are those of its episode (the
    # cache peaked at 100% while it lasted), not of its tail as it resolved
    assert findings[0].end is not None
    assert verdict.title == "Bottleneck: KV cache" and verdict.detail.startswith("server at 100% KV")
    assert "waiting" in verdict.detail
    (verdict, _), _ = verdicts["pd_pair"]
    assert verdict.kind == "ok" and verdict.text.startswith("No bottleneck found — prefill ≤0% KV, no queue; decode")
    (verdict, _), _ = verdicts["disable_log_stats"]
    assert verdict.kind == "blind" and "server prints no stats lines" in verdict.detail


class _F:
    def __init__(self, rule, severity, endpoint, start, end=None, engines=()):
        self.rule, self.severity, self.endpoint, self.start, self.end, self.engines = \
            rule, severity, endpoint, start, end, engines


def test_grouping_orders_by_severity_and_keeps_dicts_and_objects_alike():
    findings = [_F("prefill_bound", "warning", "p_w2", "2026-01-01T00:00:10Z"),
                _F("kv_exhausted", "critical", "d_w0", "2026-01-01T00:00:20Z"),
                _F("prefill_bound", "warning", "p_w0", "2026-01-01T00:00:10Z", "2026-01-01T00:01:00Z"),
                _F("prefill_bound", "warning", "p_w1", "2026-01-01T00:00:05Z")]
    groups = triage.group_findings(findings)
    assert [(g.rule, g.label, g.members, g.end) for g in groups] == [
        ("kv_exhausted", "d_w0", (1,), None), ("prefill_bound", "p_w0–w2", (3, 2, 0), None)]
    as_dicts = [{"rule": f.rule, "severity": f.severity, "endpoint": f.endpoint, "start": f.start, "end": f.end}
                for f in findings]
    assert triage.group_findings(as_dicts) == groups


@pytest.mark.parametrize("names, label", [
    (["prefill_w0", "prefill_w1", "prefill_w2", "prefill_w3"], "prefill_w0–w3"),
    (["prefill_w0", "prefill_w1"], "prefill_w0, w1"),
    (["prefill_w0", "prefill_w1", "prefill_w2", "prefill_w5"], "prefill_w0–w2, w5"),
    (["decode_w0", "prefill_w3"], "decode_w0, prefill_w3"),
    (["server"], "server"),
    ([None], "the deployment"),
    (["[bold]x[/] w1", "[bold]x[/] w2", "[bold]x[/] w3"], "[bold]x[/] w1–w3"),  # text stays text
])
def test_endpoint_labels(names, label):
    assert triage.endpoint_label(names) == label


def test_worst_first_and_evidence_marks():
    findings = [_F("kv_exhausted", "critical", "decode_w0", "2026-01-01T00:00:20Z"),
                _F("lint", "info", "prefill_w10", "2026-01-01T00:00:20Z")]
    order = triage.worst_first([("prefill_w2", "prefill"), ("prefill_w10", "prefill"), ("decode_w0", "decode"),
                                ("frontend", "frontend")], findings)
    assert order == ["decode_w0", "prefill_w10", "prefill_w2", "frontend"]
    line = ("Engine 001: Avg prompt throughput: 42261.7 tokens/s, Avg generation throughput: 5.8 tokens/s, "
            "Running: 2 reqs, Waiting: 280 reqs, GPU KV cache usage: 0.7%, Prefix cache hit rate: 0.0%")
    marks = triage.evidence_marks(line, ["waiting", "kv_usage_pct"])
    assert [line[a:b] for a, b in marks] == ["Waiting: 280 reqs", "GPU KV cache usage: 0.7%"]
