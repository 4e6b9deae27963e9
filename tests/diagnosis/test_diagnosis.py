"""The diagnosis (pdwatch.diagnosis): one verdict line rolled up from the findings and the store's
numbers, the findings grouped across endpoints, the endpoints worst first, on the bundled samples
and on the real captures (the one object the dashboard and the report writers render)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdwatch.diagnosis import diagnose
from pdwatch.session.analysis import analyse

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
CAPTURES = REPO / "tests" / "data" / "real" / "captures"


def _assess(path: Path):
    d = analyse([str(path)]).diagnosis
    return (d.verdict, d.groups), list(d.findings)


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


def test_the_analysis_makes_its_diagnosis_once_and_the_report_carries_it():
    from pdwatch.views.report import data
    a = analyse([str(SAMPLES / "kv-exhausted")])
    assert a.diagnosis is a.diagnosis  # computed once, then carried
    report = data.build(a)
    assert report["verdict"] == a.diagnosis.verdict.to_json_dict()
    assert report["groups"] == [g.to_json_dict() for g in a.diagnosis.groups]
    assert [f["rule"] for f in report["findings"]] == [f.rule for f in a.diagnosis.findings]
    assert report["endpoints_order"][0] == "decode_w0" and report["endpoint_severity"] == {"decode_w0": "critical"}


class _F:
    def __init__(self, rule, severity, endpoint, start, end=None, engines=()):
        self.rule, self.severity, self.endpoint, self.start, self.end, self.engines = \
            rule, severity, endpoint, start, end, engines


class _Endpoint:
    def __init__(self, name, role):
        self.name, self.role, self.engines, self.facts = name, role, (), {}


class _Store:
    """What diagnose reads of a store: its endpoints, and no stats (no verdict figures)."""

    def __init__(self, *endpoints):
        self._endpoints = list(endpoints)

    def endpoints(self):
        return self._endpoints

    def stats(self, name):
        import pandas as pd
        return pd.DataFrame()


def test_endpoints_worst_first_and_the_worst_severity_of_each_endpoint_and_engine():
    store = _Store(_Endpoint("prefill_w2", "prefill"), _Endpoint("prefill_w10", "prefill"),
                   _Endpoint("decode_w0", "decode"), _Endpoint("frontend", "frontend"))
    findings = [_F("lint_async_scheduling_off", "info", "prefill_w10", "2026-01-01T00:00:20Z"),
                _F("cudagraph_overflow", "warning", "decode_w0", "2026-01-01T00:00:10Z", engines=(1, 2)),
                _F("kv_exhausted", "critical", "decode_w0", "2026-01-01T00:00:20Z", engines=(2,))]
    d = diagnose(store, findings)
    assert d.endpoint_order == ("decode_w0", "prefill_w10", "prefill_w2", "frontend")
    assert d.endpoint_severity == {"decode_w0": "critical", "prefill_w10": "info"}
    assert d.engine_severity == {"decode_w0": {1: "warning", 2: "critical"}}
    assert [f.rule for f in d.findings] == ["kv_exhausted", "cudagraph_overflow", "lint_async_scheduling_off"]
    assert [g.members for g in d.groups] == [(0,), (1,), (2,)]  # indices into d.findings
    assert d.verdict.rule == "kv_exhausted" and d.verdict.others == 2
