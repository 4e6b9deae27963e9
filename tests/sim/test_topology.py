"""Recipe names -> endpoints, engines and GPUs."""

from __future__ import annotations

import pytest

from pdwatch.sim import parse_topology


def test_articles_default_topology():
    topo = parse_topology("4xDEP2-1xDEP8")
    assert topo.disaggregated
    assert (topo.prefill.count, topo.prefill.kind, topo.prefill.size) == (4, "DEP", 2)
    assert (topo.decode.count, topo.decode.kind, topo.decode.size) == (1, "DEP", 8)
    assert topo.prefill.engines_per_endpoint == 2 and topo.prefill.gpus_per_engine == 1
    assert topo.decode.engines_per_endpoint == 8
    assert topo.gpus == 16  # 2N + 8
    assert str(topo) == "4xDEP2-1xDEP8"


@pytest.mark.parametrize("n", [4, 5, 6, 7, 8])
def test_gpu_count_is_2n_plus_8(n):
    assert parse_topology(f"{n}xDEP2-1xDEP8").gpus == 2 * n + 8


def test_aggregated_single_server():
    topo = parse_topology("1xDEP8")
    assert not topo.disaggregated
    assert topo.prefill is None and topo.decode is None
    assert [role for role, _ in topo.groups] == ["agg"]
    assert topo.gpus == 8


def test_tensor_parallel_is_one_engine_over_several_gpus():
    topo = parse_topology("2xTEP4-1xTP8")
    assert topo.prefill.engines_per_endpoint == 1 and topo.prefill.gpus_per_engine == 4
    assert topo.decode.engines_per_endpoint == 1 and topo.decode.gpus_per_engine == 8
    assert topo.gpus == 16


def test_case_and_spaces_tolerated():
    assert str(parse_topology(" 4xdep2-1xDEP8 ")) == "4xDEP2-1xDEP8"


def test_a_single_part_without_count_is_one_aggregated_server():
    assert str(parse_topology("DEP8")) == "1xDEP8" and not parse_topology("DEP8").disaggregated


@pytest.mark.parametrize("text", ["", "4xDEP2-", "4xFOO2-1xDEP8", "0xDEP2-1xDEP8", "4xDEP0-1xDEP8",
                                  "4xDEP2-1xDEP8-1xDEP8", "2xDEP8", "4x DEP2", "4xDEP2-1xDEP9999"])
def test_bad_topologies_are_refused_with_one_line(text):
    with pytest.raises(ValueError) as info:
        parse_topology(text)
    assert "\n" not in str(info.value)
    assert "topology" in str(info.value)
