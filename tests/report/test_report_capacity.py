"""The report's capacity section and the `capacity` rule read the same arithmetic (pdwatch capacity)."""

from __future__ import annotations

import json
import subprocess
import sys

from pdwatch.session.analysis import analyse
from pdwatch.capacity import load_model_config
from tests.conftest import CPU_LOGS

S9B = CPU_LOGS / "s9b_qwen3next_hybrid_hd128.log"
CONFIG = CPU_LOGS / "model-qwen3next-hd128" / "config.json"


def test_report_capacity_section_uses_the_capacity_arithmetic():
    result = subprocess.run([sys.executable, "-m", "pdwatch", "report", str(S9B), "--model-config", str(CONFIG),
                             "--format", "json"], capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)["capacity"]
    computed = row["computed"]
    assert computed["block_tokens"] == 384 and computed["max_concurrency"] == 273.0
    assert {c["name"]: c["match"] for c in computed["comparisons"]} == {
        "attention block size": True, "mamba page padding": True, "KV cache size": True, "maximum concurrency": True}


def test_the_capacity_rule_reads_the_planned_concurrency():
    analysis = analyse([str(S9B)], year=2026, model=load_model_config(str(CONFIG)))
    (endpoint,) = analysis.store.endpoints()
    assert endpoint.facts["planned_concurrency"] == 273.0  # what the capacity section shows
    # Same log, but the arithmetic says an engine holds only 16 requests: running 16 is at the limit.
    endpoint_facts = dict(endpoint.facts)
    from pdwatch.rules import RuleEngine, load_rules
    store = analysis.store
    store.model.endpoints[endpoint.name].facts["planned_concurrency"] = 16.0
    engine = RuleEngine([r for r in load_rules() if r.finding == "capacity"])
    view = store.view()
    start, end = analysis.clock
    from pdwatch.session.analysis import evaluation_times
    for now in evaluation_times(store, start, end):
        engine.evaluate(view, now.floor("us").to_pydatetime())
    (finding,) = engine.findings()
    assert finding.rule == "capacity" and "16" in finding.summary
    assert endpoint_facts["max_concurrency"] == 273.0  # vLLM's own figure is not what fired it


def test_without_a_model_config_the_rule_uses_vllms_figure():
    analysis = analyse([str(S9B)], year=2026)
    (endpoint,) = analysis.store.endpoints()
    assert "planned_concurrency" not in endpoint.facts
    assert not [f for f in analysis.findings if f.rule == "capacity"]  # 16 running of 273


def test_bad_model_config_is_one_line(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    result = subprocess.run([sys.executable, "-m", "pdwatch", "report", str(S9B), "--model-config", str(bad)],
                            capture_output=True, timeout=60)
    assert result.returncode == 2 and result.stderr.decode().count("\n") == 1
