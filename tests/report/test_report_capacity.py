"""The report's capacity section and the `capacity` rule read the same arithmetic (pdwatch capacity)."""

from __future__ import annotations

import json
import subprocess
import sys

from pdwatch.session.analysis import analyse
from pdwatch.capacity import load_model_config
from tests.conftest import CPU_LOGS, REAL_LOGS, REPO

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


OVERRIDE_LOG = REAL_LOGS / "dynamo" / "agg_worker_killed" / "agg_worker_killed.worker.log"  # --num-gpu-blocks-override 40
TINY_QWEN3 = REPO / "tools" / "capture-vllm" / "models" / "tiny-qwen3" / "config.json"


def test_with_a_model_config_the_capacity_rule_still_reads_the_logged_capacity():
    # The log: "CPU KV cache size: 5,120 tokens, Maximum concurrency for 1,536 tokens per request: 3.33x";
    # the model's shape and its 1 GiB of KV memory give 1,365.33x, which vLLM did not allocate.
    with_config = analyse([str(OVERRIDE_LOG)], year=2026, model=load_model_config(str(TINY_QWEN3)))
    without = analyse([str(OVERRIDE_LOG)], year=2026)
    (endpoint,) = with_config.store.endpoints()
    assert endpoint.facts["planned_concurrency"] == endpoint.facts["max_concurrency"] == 3.33
    fired = [[(f.rule, f.start, f.end) for f in a.findings if f.rule == "capacity"] for a in (with_config, without)]
    assert fired[0] and fired[0] == fired[1]  # 6 running of 3.33: at the limit, with or without the config


def test_the_report_says_the_override_set_the_kv_cache():
    result = subprocess.run([sys.executable, "-m", "pdwatch", "report", str(OVERRIDE_LOG), "--format", "json"],
                            capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)["capacity"]
    assert (row["kv_blocks"], row["num_gpu_blocks_override"], row["kv_blocks_from_memory"]) == (40, 40, 16384)
    assert row["gap"]["reason"] == "override" and row["gap"]["estimate_from"] == "vLLM's count from its KV memory"
    md = subprocess.run([sys.executable, "-m", "pdwatch", "report", str(OVERRIDE_LOG)], capture_output=True,
                        text=True, timeout=120).stdout
    assert "num_gpu_blocks_override 40 (line 102)" in " ".join(md.split())


def test_with_a_model_config_the_report_sets_the_estimate_beside_the_logged_capacity():
    result = subprocess.run([sys.executable, "-m", "pdwatch", "report", str(OVERRIDE_LOG), "--model-config",
                             str(TINY_QWEN3), "--format", "json"], capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)["capacity"]
    computed = row["computed"]
    assert round(computed["max_concurrency"], 2) == row["max_concurrency"] == 3.33  # vLLM's redone on the override's pool
    assert computed["estimate"]["blocks"] == 16384 and round(computed["estimate"]["max_concurrency"], 2) == 1365.33
    assert row["gap"]["reason"] == "override" and row["gap"]["estimate_from"] == "the model config"
