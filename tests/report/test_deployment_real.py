"""GPU counts and models read from every form real vLLM logs print them in, and said where.

DP x TP x PP comes from the non-default args dict (a size it leaves out is at its default,
1), from V0's ``args: Namespace(...)`` (every argument), or from the engine config line;
DP is guessed from the engines seen only when no line gives it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import CPU_LOGS, GPU_LOGS, REAL_LOGS

V0_LOG = REAL_LOGS / "vllm-0.8-cpu-v0" / "dmasirkar-vLLM-testing-on-CPU-qwen2.5-1.5b.log"
TP4 = GPU_LOGS / "dennislee22-vLLM-benchmarking-vllm-120B-4gpuA10080GB-0.8GRAM-diff-nodes.log"
TP2 = GPU_LOGS / "dennislee22-vLLM-benchmarking-vllm-7B-2gpuA10040GB-0.5GRAM-diff-nodes.log"


def deployment(path) -> dict:
    out = subprocess.run([sys.executable, "-m", "pdwatch", "report", str(path), "--format", "json", "--year", "2025"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    (endpoint,) = report["deployment"]["endpoints"]
    return {**endpoint, "summary": report["summary"]}


@pytest.mark.parametrize("path, gpus, model, origins", [
    # V0: every argument in a Namespace, TP and PP also in "Initializing a V0 LLM engine"
    (V0_LOG, 1, "Qwen/Qwen2.5-1.5B-Instruct",
     ["DP 1 (Namespace args, line 3)", "TP 1 (Namespace args, line 3)", "PP 1 (Namespace args, line 3)"]),
    # V1 0.10, TP 4 over two nodes: the non-default args say TP 4 and leave DP, PP at 1
    (TP4, 4, "gpt-oss-120b",
     ["DP 1 (default: not in the non-default args, line 3)", "TP 4 (non-default args, line 3)",
      "PP 1 (default: not in the non-default args, line 3)"]),
    (TP2, 2, "Qwen2-7B-Instruct", ["TP 2 (non-default args, line 3)"]),
    # vLLM 0.32 on CPU: nothing parallel among the non-default args; the engine config line says 1, 1, 1
    (CPU_LOGS / "s2_seqs4.log", 1, "/models/model",
     ["DP 1 (engine config, line 18)", "TP 1 (engine config, line 18)", "PP 1 (engine config, line 18)"]),
])
def test_gpu_count_and_model_from_the_start_up_lines(path, gpus, model, origins):
    ep = deployment(path)
    assert (ep["gpus"], ep["gpus_inferred"], ep["model"]) == (gpus, False, model)
    for origin in origins:
        assert origin in ep["gpus_from"], ep["gpus_from"]
    on_cpu = ep["summary"]["device"] == "CPU"  # vLLM's CPU backend: the headline counts workers, not GPUs
    assert ep["summary"]["gpus"] == (None if on_cpu else gpus) and "guessed" not in (ep["summary"]["note"] or "")
    assert on_cpu == (path.parent == CPU_LOGS)


def test_the_v0_log_is_measured_per_gpu():
    ep = deployment(V0_LOG)
    assert ep["engines"] == [0]  # V0 stats lines name no engine: the one engine
    summary = ep["summary"]
    assert summary["tps_per_gpu"] == summary["total_tps"] > 0


def test_a_guess_is_said_to_be_one(tmp_path):
    # stats lines and nothing else: DP from the engines seen, TP and PP not printed
    log = tmp_path / "server.log"
    lines = [f"INFO 05-29 14:00:{10 * i:02d} [loggers.py:1] Engine 00{e}: Avg prompt throughput: 1.0 tokens/s, "
             f"Avg generation throughput: 9.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 5.0%, "
             f"Prefix cache hit rate: 0.0%" for i in range(1, 6) for e in (0, 1)]
    log.write_text("\n".join(lines) + "\n")
    ep = deployment(log)
    assert (ep["gpus"], ep["gpus_inferred"]) == (2, True)
    assert ep["gpus_from"] == "DP 2 (guessed from the engines seen), TP 1 (guessed: not printed), " \
                              "PP 1 (guessed: not printed)"
    assert "guessed" in ep["summary"]["note"] and "server: DP 2" in ep["summary"]["note"]


def test_v0_namespace_disable_log_stats_gets_its_word(tmp_path):
    # The real V0 start-up, as if it had been started with --disable-log-stats: V0 prints the
    # flag inside its Namespace(...) args, and then no stats line at all.
    real = V0_LOG.read_text().splitlines()
    startup = [line for line in real if "metrics.py" not in line]  # its stats lines gone, as the flag does
    assert any("disable_log_stats=False" in line for line in startup)
    log = tmp_path / "server.log"
    log.write_text("\n".join(line.replace("disable_log_stats=False", "disable_log_stats=True") for line in startup)
                   + "\n")
    out = subprocess.run([sys.executable, "-m", "pdwatch", "report", str(log), "--format", "json", "--year", "2025"],
                         capture_output=True, text=True, timeout=120)
    report = json.loads(out.stdout)
    (finding,) = [f for f in report["findings"] if f["rule"] == "stats_missing"]
    assert finding["severity"] == "warning" and "--disable-log-stats" in finding["summary"]
    assert "--disable-log-stats" in report["summary"]["note"]
    (endpoint,) = report["endpoints"]
    assert "--disable-log-stats" in endpoint["no_stats"]
