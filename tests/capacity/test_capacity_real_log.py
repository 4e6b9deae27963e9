"""The real hybrid run s9b (vLLM 0.32, CPU backend): what vLLM printed, computed from config.json."""

from __future__ import annotations

import pytest

from pdwatch.capacity import CapacityInputs, assess, facts_by_source, load_model_config
from tests.conftest import CPU_LOGS, scan

S9B = CPU_LOGS / "s9b_qwen3next_hybrid_hd128.log"


def _facts(path):
    facts = facts_by_source(scan(path.read_bytes(), source=str(path)))
    return facts[str(path)]


@pytest.fixture
def s9b():
    return load_model_config(str(CPU_LOGS / "model-qwen3next-hd128" / "config.json")), _facts(S9B)


def test_block_size_and_padding_from_config_json(s9b):
    model, facts = s9b
    cap = assess(model, CapacityInputs(), facts).capacity
    assert cap.settings["ssm_dtype"].value == "float32"  # "Reset SSM cache type to float32" beats bfloat16
    assert cap.settings["block_align"].value == 128  # CPU backend
    assert cap.block.tokens == 384  # "Setting attention block size to 384 tokens"
    assert f"{cap.block.padding_pct:.2f}" == "46.56"  # "Padding mamba page size by 46.56%"


def test_without_the_log_the_config_alone_gives_another_block(s9b):
    model, _ = s9b
    cap = assess(model, CapacityInputs(block_align=128)).capacity
    assert cap.settings["ssm_dtype"].value == "bfloat16"  # the config's dtype, as nothing says otherwise
    assert cap.block.tokens == 256


def test_every_printed_figure_matches_with_the_cpu_kv_space(s9b):
    model, facts = s9b
    result = assess(model, CapacityInputs(kv_cache_memory_gib=1), facts)  # VLLM_CPU_KVCACHE_SPACE=1
    rows = {r.name: r for r in result.comparisons}
    assert set(rows) == {"attention block size", "mamba page padding", "KV cache size", "maximum concurrency"}
    assert all(r.match for r in rows.values()), [r for r in rows.values() if not r.match]
    assert (rows["KV cache size"].computed, rows["KV cache size"].printed) == (419_328, 419_328)
    assert rows["maximum concurrency"].computed == 273.0
    assert result.vllm.pool_blocks == 2730  # 1 GiB ÷ 384 KiB
    assert result.vllm.request.blocks == 10  # 4 attention + 3 GDN × 2 ('align' mode: prefix caching on)


def test_the_cpu_kv_space_line_alone_gives_every_figure(s9b):
    model, facts = s9b  # "Explicitly set (1.0/10.09) GiB for KV cache" is read as the KV memory
    rows = {r.name: r for r in assess(model, CapacityInputs(), facts).comparisons}
    assert rows["KV cache size"].match and rows["maximum concurrency"].match


def test_without_kv_memory_the_printed_figures_imply_it(s9b):
    model, facts = s9b
    facts = {k: v for k, v in facts.items() if k not in ("kv_memory_gib",)}
    rows = {r.name: r for r in assess(model, CapacityInputs(), facts).comparisons}
    conc = rows["maximum concurrency"]
    assert conc.match is None and conc.computed is None
    assert any("implies 2,730" in n and "1.00 GiB" in n for n in conc.notes)
    assert any("CPU backend" in n for n in rows["KV cache size"].notes)


def test_a_wrong_alignment_is_explained(s9b):
    model, facts = s9b
    rows = {r.name: r for r in assess(model, CapacityInputs(block_align=16), facts).comparisons}
    block = rows["attention block size"]
    assert (block.computed, block.printed, block.match) == (272, 384, False)
    assert any("alignment 128" in n for n in block.notes)


def test_dense_model_matches_too():
    path = CPU_LOGS / "s2_seqs4.log"
    model = load_model_config(str(CPU_LOGS / "model" / "config.json"))
    result = assess(model, CapacityInputs(kv_cache_memory_gib=1), _facts(path))
    assert result.capacity.block.tokens == 128
    rows = {r.name: r for r in result.comparisons}
    assert rows["KV cache size"].computed == 2_097_152 and rows["KV cache size"].match
    assert rows["maximum concurrency"].computed == 1365.33 and rows["maximum concurrency"].match
