"""Golden: the Qwen3.8-2.4T article's numbers, from its stated inputs, through a config.json.

The article gives per-layer sizes, not the config; the config below is the one shape that yields
them with Qwen3-Next's layout: 92 layers, full attention every 4th (23 full, 69 GDN); 2 KV heads ×
head_dim 256 in bfloat16 = 2 KiB per token; GDN 128 value heads × 128 × 128 in bfloat16 = 4 MiB of
SSM state, and (16 × 128 × 2 + 128 × 128) conv channels × 3 × 2 bytes = 120 KiB of conv state.
"""

from __future__ import annotations

import json

import pytest

from pdwatch.capacity import CapacityInputs, assess, load_model_config
from pdwatch.capacity import arithmetic as ar

ARTICLE_CONFIG = {
    "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "torch_dtype": "bfloat16",
    "num_hidden_layers": 92, "full_attention_interval": 4, "hidden_size": 8192,
    "num_attention_heads": 64, "num_key_value_heads": 2, "head_dim": 256,
    "linear_num_key_heads": 16, "linear_num_value_heads": 128, "linear_key_head_dim": 128,
    "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
}


@pytest.fixture
def article(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(ARTICLE_CONFIG))
    return load_model_config(str(path))


def test_article_state_block_and_request(article):
    cap = assess(article, CapacityInputs(gpu="gb300", isl=8192, osl=1024)).capacity
    assert (article.attention.layers, article.linear.layers) == (23, 69)
    assert cap.attention_bytes_per_token == 2 * ar.KiB
    assert cap.linear.ssm_bytes == 4 * ar.MiB
    assert cap.linear.conv_bytes == 120 * ar.KiB
    assert cap.linear.bytes == 4216 * ar.KiB  # 4 MiB + 120 KiB
    assert cap.block.ratio_tokens == 2108  # 4216 KiB ÷ 2 KiB
    assert cap.block.tokens == 2112  # align(2108, 16) = 132 × 16
    assert cap.block.page_bytes == 4.125 * ar.MiB  # 2112 × 2 KiB
    assert cap.request.tokens == 9216
    assert (cap.request.attention_blocks, cap.request.linear_blocks) == (23 * 5, 69)
    assert cap.request.bytes == 759 * ar.MiB


def test_article_memory_budget(article):
    budget = assess(article, CapacityInputs(gpu="gb300")).capacity.budget
    assert budget.total.value == 276.62
    assert round(budget.requested_gib, 1) == 254.5  # 276.62 GiB × 0.92
    assert round(budget.kv_gib) == 248  # − 3.13 CUDA context − 2.90 non-torch, before the weights
    assert budget.missing == ["weights", "peak activations", "CUDA-graph estimate"]


def test_article_concurrency_and_capture_size(article):
    for cc, capture in ((4096, 640), (5120, 768)):  # "640 at cc=4096 and 768 at cc=5120"
        cap = assess(article, CapacityInputs(gpu="gb300", weights_gib=100, topology="4xDEP2-1xDEP8", cc=cc)).capacity
        assert cap.deployment.decode_engines == 8
        assert cap.deployment.capture_size == capture
    kv_bytes = int((276.62 * 0.92 - 3.13 - 2.90 - 100) * ar.GiB)
    assert cap.engine.per_request_division == pytest.approx(kv_bytes / (759 * ar.MiB))
    assert cap.engine.whole_requests == kv_bytes // (4.125 * ar.MiB) // 23 // 8
    assert cap.deployment.kv_limit_concurrency == 8 * cap.engine.whole_requests
    assert any("--max-cudagraph-capture-size 768" in n for n in cap.notes)  # over vLLM's default 512


def test_article_arithmetic_from_the_stated_numbers():
    block = ar.hybrid_block(4216 * ar.KiB, 2 * ar.KiB, 16)
    assert (block.tokens, block.page_bytes) == (2112, 4224 * ar.KiB)
    groups = ar.kv_cache_groups({"attention": 23, "linear": 69})
    assert (groups.group_size, groups.groups) == (23, {"attention": 1, "linear": 3})
    request = ar.request_kv(8192 + 1024, block, groups, ar.linear_blocks_per_request("none", 0, 9216, 2112))
    assert request.bytes == 759 * ar.MiB
