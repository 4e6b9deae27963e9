"""``pdwatch capacity`` takes the KV cache size the server logged as the capacity, the model-shape
arithmetic beside it as the estimate, and says why the two are far apart.

The real logs: Dynamo workers (vLLM 0.31 for CPU) and a vLLM 0.32 server started with
``--num-gpu-blocks-override 40``, whose start-up lines say so ("Overriding num_gpu_blocks=16384 with
num_gpu_blocks_override=40", "CPU KV cache size: 5,120 tokens, Maximum concurrency for 1,536 tokens
per request: 3.33x"), and vLLM 0.32 servers without it. The expected figures and line numbers are
read from the logs' own text here, not from pdwatch's parsers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from pdwatch.capacity import CapacityInputs, assess, facts_by_source, load_model_config
from tests.capacity.test_capacity_cli import pdwatch
from tests.conftest import CPU_LOGS, REAL_LOGS, REPO, scan

CONFIG = REPO / "tools" / "capture-vllm" / "models" / "tiny-qwen3" / "config.json"  # the captures' model
AGG_KILLED = REAL_LOGS / "dynamo" / "agg_worker_killed" / "agg_worker_killed.worker.log"
DISAGG_DECODE = REAL_LOGS / "dynamo" / "disagg_kv_pressure" / "disagg_kv_pressure.decode.log"
VLLM_ARGS_OVERRIDE = REAL_LOGS / "captures" / "kv_pressure" / "server.log"  # vLLM 0.32: in its args too
OVERRIDE_LOGS = [AGG_KILLED, DISAGG_DECODE, VLLM_ARGS_OVERRIDE]

_OVERRIDE = re.compile(r"Overriding num_gpu_blocks=(\d+) with num_gpu_blocks_override=(\d+)")
_SIZE = re.compile(r"KV cache size: ([\d,]+) tokens, Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")


@dataclass(frozen=True)
class Printed:
    """What the log's own lines say (1-based line numbers)."""

    memory_blocks: int
    override: int
    override_line: int
    tokens: int
    request_tokens: int
    concurrency: float
    size_line: int


def printed(path: Path) -> Printed:
    override = size = None
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if m := _OVERRIDE.search(line):
            override = (int(m[1]), int(m[2]), n)
        if m := _SIZE.search(line):
            size = (int(m[1].replace(",", "")), int(m[2].replace(",", "")), float(m[3]), n)
    assert override and size, path
    return Printed(*override, *size)


def capacity_json(*args: str) -> dict:
    result = pdwatch("capacity", "--model-config", str(CONFIG), *args, "--format", "json")
    assert result.returncode == 0, result.stderr
    [one] = json.loads(result.stdout)["capacity"]
    return one


def test_the_logs_are_what_this_file_is_about():
    p = printed(AGG_KILLED)
    assert (p.override, p.tokens, p.request_tokens, p.concurrency) == (40, 5120, 1536, 3.33)
    assert p.memory_blocks == 16384


def test_the_command_shows_the_logged_capacity_its_origin_the_estimate_and_why_they_differ():
    p = printed(AGG_KILLED)
    result = pdwatch("capacity", "--model-config", str(CONFIG), str(AGG_KILLED))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Capacity, as the log says"))
    block = lines[start:lines.index("", start)]  # the capacity block opens the table, before the steps
    assert start < next(i for i, line in enumerate(lines) if line.startswith("1. State per layer"))
    rows = {line.strip().split("  ")[0]: line for line in block[1:]}
    # the log's figures, each with its line, then the estimate from the model's shape on the same row
    assert re.search(rf"KV blocks\s+{p.override} \(line {p.override_line}\)\s+{p.memory_blocks:,}\b",
                     rows["KV blocks"]), rows["KV blocks"]
    assert re.search(rf"KV cache size\s+{p.tokens:,} tokens \(line {p.size_line}\)\s+2,097,152 tokens",
                     rows["KV cache size"]), rows["KV cache size"]
    assert re.search(rf"maximum concurrency\s+{p.concurrency:.2f}x for {p.request_tokens:,} tokens "
                     rf"\(line {p.size_line}\)\s+1,365\.33x", rows["maximum concurrency"]), rows["maximum concurrency"]
    text = " ".join(" ".join(block).split())
    assert f"as the log says, line {p.size_line}" in text
    assert f"num_gpu_blocks_override {p.override} (line {p.override_line})" in text
    assert f"instead of the {p.memory_blocks:,} its 1.00 GiB of KV memory holds" in text


@pytest.mark.parametrize("log", OVERRIDE_LOGS, ids=lambda p: p.name)
def test_json_gives_the_logged_capacity_the_estimate_and_the_override(log):
    p = printed(log)
    one = capacity_json(str(log))
    logged = one["capacity_from_log"]
    assert logged["blocks"] == {"value": p.override, "line_no": p.override_line}
    assert logged["tokens"] == {"value": p.tokens, "line_no": p.size_line}
    assert logged["max_concurrency"] == {"value": p.concurrency, "tokens_per_request": p.request_tokens,
                                         "line_no": p.size_line}
    assert logged["num_gpu_blocks_override"]["value"] == p.override
    assert logged["origin"] == f"as the log says, line {p.size_line}"
    # the estimate is the model-shape arithmetic from the KV memory: the count vLLM itself made before the override
    estimate = one["estimate"]
    assert estimate["blocks"] == p.memory_blocks
    assert estimate["tokens"] == p.memory_blocks * 128 and round(estimate["max_concurrency"], 2) == 1365.33
    gap = one["gap"]
    assert gap["large"] and gap["reason"] == "override"
    assert gap["log_over_estimate"] == pytest.approx(p.override / p.memory_blocks)
    assert f"num_gpu_blocks_override {p.override}" in gap["text"]


def test_with_the_override_the_printed_figures_check_the_model_shape():
    # vLLM sized its figures on the override's 40 blocks: redone the same way, they match the log
    p = printed(AGG_KILLED)
    rows = {c["name"]: c for c in capacity_json(str(AGG_KILLED))["comparison"]}
    assert (rows["KV cache size"]["computed"], rows["KV cache size"]["match"]) == (p.tokens, True)
    assert (rows["maximum concurrency"]["computed"], rows["maximum concurrency"]["match"]) == (p.concurrency, True)


def test_the_override_in_the_args_alone_is_enough():
    # vLLM 0.32's "non-default args" name num_gpu_blocks_override: without its "Overriding" line the
    # capacity still comes from the "KV cache size" line, and the gap is still put on the override
    lines = VLLM_ARGS_OVERRIDE.read_text().splitlines(keepends=True)
    kept = "".join(line for line in lines if not _OVERRIDE.search(line)).encode()
    facts = facts_by_source(scan(kept, source="server.log"))["server.log"]
    result = assess(load_model_config(str(CONFIG)), CapacityInputs(), facts)
    assert result.logged.tokens.value == 5120 and result.logged.memory_blocks is None
    assert result.logged.override.value == 40 and result.logged.override.line_no == 8
    assert result.logged.blocks == result.logged.override  # vLLM allocates the override's blocks
    assert result.gap.reason == "override" and "num_gpu_blocks_override 40 (line 8)" in result.gap.text


def test_without_the_kv_memory_the_override_meets_vllms_own_count():
    # No "Explicitly set (1.0/...) GiB for KV cache" line: no estimate, but the "Overriding" line's count remains
    p = printed(AGG_KILLED)
    lines = AGG_KILLED.read_text(errors="replace").splitlines(keepends=True)
    kept = "".join(line for line in lines if "GiB for KV cache" not in line).encode()
    facts = facts_by_source(scan(kept, source="worker.log"))["worker.log"]
    result = assess(load_model_config(str(CONFIG)), CapacityInputs(), facts)
    assert result.estimate is None and result.logged.tokens.value == p.tokens
    assert result.gap.reason == "override" and result.gap.estimate_from == "vLLM's count from its KV memory"
    assert f"instead of the {p.memory_blocks:,} its KV memory holds" in result.gap.text


@pytest.mark.parametrize("name", ["s2_seqs4.log", "s4_prefix_cache_on.log"])
def test_without_an_override_the_log_and_the_estimate_agree(name):
    one = capacity_json(str(CPU_LOGS / name))
    assert one["capacity_from_log"]["tokens"]["value"] == one["estimate"]["tokens"] == 2_097_152
    assert one["capacity_from_log"]["num_gpu_blocks_override"] is None
    assert one["gap"]["log_over_estimate"] == 1.0 and not one["gap"]["large"] and one["gap"]["reason"] is None


def test_a_gap_the_log_does_not_explain_is_called_unexplained_with_the_figures():
    # The same s2 log read with --kv-cache-memory-gib 4: the estimate is 4x the log's 1 GiB cache
    one = capacity_json(str(CPU_LOGS / "s2_seqs4.log"), "--kv-cache-memory-gib", "4")
    gap = one["gap"]
    assert gap["large"] and gap["reason"] == "unexplained"
    assert "2,097,152" in gap["text"] and "8,388,608" in gap["text"] and "4.00 GiB" in gap["text"]


def test_memory_utilisation_explains_a_budget_gap():
    # No "Explicitly set" line: the estimate comes from --gpu-mem-gib and the article's utilisation,
    # which the log does not state; what the log's size implies is said in words
    lines = (CPU_LOGS / "s2_seqs4.log").read_text().splitlines(keepends=True)
    kept = "".join(line for line in lines if "GiB for KV cache" not in line).encode()
    facts = facts_by_source(scan(kept, source="s2.log"))["s2.log"]
    result = assess(load_model_config(str(CONFIG)), CapacityInputs(gpu_mem_gib=10, cuda_context_gib=0,
                                                                    non_torch_gib=0), facts)
    assert result.gap.large and result.gap.reason == "gpu_memory_utilization"
    assert "0.92" in result.gap.text and "0.10" in result.gap.text  # assumed, and what 1 GiB of 10 implies


def test_unmeasured_activation_and_cuda_graph_memory_explain_a_budget_gap():
    # As above, but the utilisation given: what the budget left out (activations, CUDA graphs) is the reason
    lines = (CPU_LOGS / "s2_seqs4.log").read_text().splitlines(keepends=True)
    kept = "".join(line for line in lines if "GiB for KV cache" not in line).encode()
    facts = facts_by_source(scan(kept, source="s2.log"))["s2.log"]
    inputs = CapacityInputs(gpu_mem_gib=2, gpu_memory_utilization=0.9, cuda_context_gib=0, non_torch_gib=0)
    result = assess(load_model_config(str(CONFIG)), inputs, facts)
    assert result.gap.large and result.gap.reason == "activation_cudagraph_memory"
    assert "peak activations and CUDA-graph memory as 0" in result.gap.text
    assert "leave 0.80 GiB of the estimate's 1.80 GiB" in result.gap.text  # 2 × 0.9 − the log's 1 GiB
    measured = assess(load_model_config(str(CONFIG)), CapacityInputs(
        gpu_mem_gib=2, gpu_memory_utilization=0.9, cuda_context_gib=0, non_torch_gib=0, activation_gib=0,
        cudagraph_gib=0), facts)
    assert measured.gap.reason == "unexplained"  # every term given: nothing left to put it on


def test_without_a_log_nothing_is_claimed_from_one():
    # the CPU captures' settings given as options: the estimate is the count vLLM made from 1 GiB
    one = capacity_json("--kv-cache-memory-gib", "1", "--max-model-len", "1536", "--block-align", "128")
    assert one["capacity_from_log"] is None and one["gap"] is None
    assert one["estimate"]["blocks"] == printed(AGG_KILLED).memory_blocks
