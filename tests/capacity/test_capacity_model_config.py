"""Reading config.json into layer shapes, and the errors for configs it cannot read."""

from __future__ import annotations

import pytest

from pdwatch.capacity import ConfigError, model_spec
from tests.capacity.test_capacity_article import ARTICLE_CONFIG


def test_layer_types_and_interval_agree():
    by_interval = model_spec(ARTICLE_CONFIG)
    types = ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(92)]
    by_types = model_spec({**ARTICLE_CONFIG, "layer_types": types})
    assert by_interval == by_types
    assert (by_types.attention.layers, by_types.linear.layers) == (23, 69)


def test_qwen35_nests_the_text_config():
    spec = model_spec({"architectures": ["Qwen3_5ForConditionalGeneration"],
                       "text_config": {**ARTICLE_CONFIG, "mamba_ssm_dtype": "float32", "mtp_num_hidden_layers": 1}})
    assert spec.architecture == "Qwen3_5ForConditionalGeneration"
    assert spec.ssm_dtype == "float32" and spec.mtp_layers == 1 and spec.linear.num_v_heads == 128


def test_nemotron_h_pattern_and_dense_and_mla():
    nemo = model_spec({"hybrid_override_pattern": "M-M*-M-", "num_hidden_layers": 7, "num_attention_heads": 8,
                       "num_key_value_heads": 2, "head_dim": 64, "mamba_num_heads": 16, "mamba_head_dim": 32,
                       "ssm_state_size": 64, "n_groups": 2, "conv_kernel": 4, "torch_dtype": "bfloat16"})
    assert (nemo.attention.layers, nemo.linear.layers, nemo.linear.kind) == (1, 3, "mamba2")
    dense = model_spec({"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 128})
    assert (dense.linear, dense.attention.num_kv_heads, dense.attention.head_dim, dense.dtype) == (None, 4, 32, None)
    mla = model_spec({"num_hidden_layers": 3, "num_attention_heads": 16, "kv_lora_rank": 512,
                      "qk_rope_head_dim": 64, "torch_dtype": "bfloat16"})
    assert mla.attention.mla and mla.attention.head_dim == 576


@pytest.mark.parametrize("data, message", [
    ([], "must be a JSON object"),
    ({"num_attention_heads": 4}, "missing num_hidden_layers"),
    ({"num_hidden_layers": 2, "num_attention_heads": 4, "layer_types": ["full_attention"]}, "lists 1 layers"),
    ({"num_hidden_layers": 1, "num_attention_heads": 4, "layer_types": ["sliding_attention"]}, "not supported"),
    ({"num_hidden_layers": 2, "num_attention_heads": 4, "layer_types": ["linear_attention"] * 2}, "attention-free"),
    ({**ARTICLE_CONFIG, "head_dim": "256"}, "head_dim must be a positive integer"),
    ({**ARTICLE_CONFIG, "full_attention_interval": None}, "cannot tell which layers"),
    ({k: v for k, v in ARTICLE_CONFIG.items() if k != "linear_conv_kernel_dim"}, "missing linear_conv_kernel_dim"),
])
def test_errors_are_one_line(data, message):
    with pytest.raises(ConfigError, match=message) as exc:
        model_spec(data)
    assert "\n" not in str(exc.value)
