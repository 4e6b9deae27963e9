"""vLLM's rules the arithmetic follows: groups, blocks per linear layer, TP, topology names."""

from __future__ import annotations

import pytest

from pdwatch.capacity import CapacityError, CapacityInputs, estimate, model_spec
from pdwatch.capacity import arithmetic as ar
from pdwatch.capacity.topology import parse_topology
from pdwatch.units import fmt_bytes
from tests.capacity.test_capacity_article import ARTICLE_CONFIG


def test_groups_follow_vllm():
    assert ar.kv_cache_groups({"attention": 1, "linear": 3}).group_size == 1  # s9b: 4 groups of one layer
    padded = ar.kv_cache_groups({"attention": 24, "linear": 69})  # an MTP layer joins the 23 full ones
    assert (padded.group_size, padded.groups, padded.padding_layers["linear"]) == (24, {"attention": 1,
                                                                                        "linear": 3}, 3)
    close = ar.kv_cache_groups({"attention": 13, "linear": 12})  # under 1.5×: the larger count, padded
    assert (close.group_size, close.padding_layers) == (13, {"attention": 0, "linear": 1})


def test_linear_blocks_per_mode():
    assert ar.linear_blocks_per_request("none", 0, 9216, 2112) == 1
    assert ar.linear_blocks_per_request("align", 2, 9216, 2112) == 4
    assert ar.linear_blocks_per_request("all", 0, 9216, 2112) == 5
    with pytest.raises(ValueError):
        ar.linear_blocks_per_request("some", 0, 1, 1)


def test_user_block_size_only_when_large_enough():
    assert ar.hybrid_block(4216 * ar.KiB, 2 * ar.KiB, 16, user_block_size=1024).tokens == 2112
    assert ar.hybrid_block(4216 * ar.KiB, 2 * ar.KiB, 16, user_block_size=4096).tokens == 4096


def test_tensor_parallel_shards_heads_and_state():
    spec = model_spec(ARTICLE_CONFIG)
    cap = estimate(spec, CapacityInputs(topology="1xTEP4"))
    assert cap.kv_heads_per_rank == 1 and cap.attention_bytes_per_token == 1 * ar.KiB  # 2 KV heads, TP 4
    assert cap.linear.ssm_bytes == 1 * ar.MiB and cap.linear.conv_bytes == 30 * ar.KiB
    assert cap.settings["engines"].value == 1


def test_speculative_tokens_widen_the_conv_state():
    cap = estimate(model_spec(ARTICLE_CONFIG), CapacityInputs(num_speculative_tokens=2))
    assert cap.linear.shapes.conv == (5, 20480)
    assert cap.request.linear_blocks_per_layer == 3


def test_topology_names():
    topo = parse_topology("4xDEP2-1xDEP8")
    assert (topo.prefill.gpus, topo.decode.engines, topo.decode.tp) == (8, 8, 1)
    assert str(parse_topology("tep8")) == "1xTEP8" and parse_topology("2×TP4").serving.engines == 2
    for bad in ("", "4xDEP2-1xDEP8-1xDEP8", "4xDEP0", "DEP"):
        with pytest.raises(ValueError):
            parse_topology(bad)


def test_conflicting_inputs():
    spec = model_spec(ARTICLE_CONFIG)
    with pytest.raises(CapacityError, match="either --topology or --tp"):
        estimate(spec, CapacityInputs(topology="1xDEP8", tp=2))
    with pytest.raises(CapacityError, match="unknown GPU"):
        estimate(spec, CapacityInputs(gpu="a100"))
    with pytest.raises(CapacityError, match="no memory left"):
        estimate(spec, CapacityInputs(gpu="h100", weights_gib=80))
    with pytest.raises(CapacityError, match="unknown dtype"):
        estimate(spec, CapacityInputs(kv_cache_dtype="nvfp4"))


def test_byte_formatting():
    assert [fmt_bytes(n) for n in (4216 * ar.KiB, 4.125 * ar.MiB, 759 * ar.MiB, 512)] == [
        "4.117 MiB", "4.125 MiB", "759 MiB", "512 B"]
    assert fmt_bytes(4216 * ar.KiB, "KiB") == "4216 KiB"
