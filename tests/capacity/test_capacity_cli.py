"""``pdwatch capacity`` as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.capacity.test_capacity_article import ARTICLE_CONFIG
from tests.conftest import CPU_LOGS


def pdwatch(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdwatch", *args], capture_output=True, text=True, timeout=120)


def _config(tmp_path, data=ARTICLE_CONFIG, name="config.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data) if isinstance(data, dict) else data)
    return str(path)


def test_prints_the_article_steps(tmp_path):
    result = pdwatch("capacity", "--model-config", _config(tmp_path), "--gpu", "gb300", "--isl", "8192",
                     "--osl", "1024")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for step in ("1. State per layer", "2. KV block", "3. KV cache per request", "4. Memory for the KV cache",
                 "5. Concurrency"):
        assert step in out
    for figure in ("= 2 KiB per token", "= 4 MiB", "= 120 KiB", "= 4216 KiB", "2108 → multiple of 16",
                   "= 2112 tokens", "= 4.125 MiB", "= 759 MiB", "276.62 × 0.92", "= 254.49 GiB"):
        assert figure in out, figure
    assert "not given, counted as 0: weights" in out


def test_json_shape(tmp_path):
    result = pdwatch("capacity", "--model-config", _config(tmp_path), "--gpu", "gb300", "--topology",
                     "4xDEP2-1xDEP8", "--cc", "5120", "--format", "json")
    assert result.returncode == 0, result.stderr
    [doc] = json.loads(result.stdout)["capacity"]
    assert list(doc) == ["source", "model", "settings", "state", "block", "groups", "request", "budget",
                         "kv_memory", "engine", "deployment", "vllm", "comparison", "notes",
                         "capacity_from_log", "estimate", "gap"]  # the last three: with LOGS (#31)
    assert doc["state"]["linear"]["state_bytes"] == 4216 * 1024
    assert doc["block"]["tokens"] == 2112 and doc["request"]["bytes"] == 759 * 1024 * 1024
    assert doc["settings"]["block_align"] == {"value": 16, "source": "the article's Blackwell setup"}
    assert doc["deployment"]["capture_size"] == 768 and doc["deployment"]["topology"] == "4xDEP2-1xDEP8"
    assert doc["budget"]["deductions"][0] == {"name": "CUDA context", "gib": 3.13, "source": "article (GB300)"}
    assert doc["vllm"] is None and doc["comparison"] == []
    assert doc["capacity_from_log"] is None and doc["gap"] is None  # no log: the estimate alone
    assert doc["estimate"]["blocks"] == doc["engine"]["pool_blocks"] and doc["estimate"]["tokens"] is None


def test_bad_inputs_exit_2_with_one_line(tmp_path):
    cases = [
        ("--model-config", _config(tmp_path, '{"num_hidden_layers": ', "truncated.json")),
        ("--model-config", _config(tmp_path, {"num_hidden_layers": 2, "num_attention_heads": 4,
                                              "layer_types": ["full_attention", "sliding_attention"]}, "swa.json")),
        ("--model-config", str(tmp_path / "missing.json")),
        ("--model-config", _config(tmp_path), "--topology", "4xFOO2"),
        ("--model-config", _config(tmp_path), "--tp", "3"),
        ("--model-config", _config(tmp_path), "--isl", "100"),
        ("--model-config", _config(tmp_path), str(tmp_path / "no-such.log")),
    ]
    for args in cases:
        result = pdwatch("capacity", *args)
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("pdwatch: error: "), (args, result.stderr)


def test_against_the_real_hybrid_log():
    config = str(CPU_LOGS / "model-qwen3next-hd128" / "config.json")
    log = str(CPU_LOGS / "s9b_qwen3next_hybrid_hd128.log")
    result = pdwatch("capacity", "--model-config", config, log, "--kv-cache-memory-gib", "1")
    assert result.returncode == 0, result.stderr
    assert "attention block size  printed 384 tokens, computed 384  ✓ same" in result.stdout
    assert "printed 46.56 %, computed 46.56  ✓ same" in result.stdout
    assert "printed 419,328 tokens, computed 419,328  ✓ same" in result.stdout
    assert "printed 273.00 x, computed 273.00  ✓ same" in result.stdout
    assert "ssm_dtype float32 (log: Reset SSM cache type)" in result.stdout.replace("\n   ", " ")
    doc = json.loads(pdwatch("capacity", "--model-config", config, log, "--format", "json").stdout)
    [one] = doc["capacity"]
    assert one["source"] == log and one["block"]["tokens"] == 384
    assert {c["name"]: c["match"] for c in one["comparison"]} == {
        "attention block size": True, "mamba page padding": True, "KV cache size": True,
        "maximum concurrency": True}  # the CPU backend line "Explicitly set (1.0/...) GiB for KV cache" gives the KV memory


def test_pd_pair_gives_one_section_per_server_and_skips_the_proxy():
    logs = sorted(str(p) for p in CPU_LOGS.glob("s10b_*.log"))
    assert len(logs) == 3
    result = pdwatch("capacity", "--model-config", str(CPU_LOGS / "model" / "config.json"), *logs, "--format", "json")
    assert result.returncode == 0, result.stderr
    sources = [c["source"] for c in json.loads(result.stdout)["capacity"]]
    assert sorted(sources) == [p for p in logs if not p.endswith("proxy.log")]
