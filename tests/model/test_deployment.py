"""Endpoints, roles and GPU counts from file names, logs and explicit specs."""

from __future__ import annotations

import pytest

from pdwatch.parsers import Event
from pdwatch.model.deployment import DeploymentModel, EndpointSpec, name_from_file


@pytest.mark.parametrize("path,name,role", [
    ("logs/node01_prefill_w3.out", "prefill_w3", "prefill"),
    ("logs/node07_decode_w0.out", "decode_w0", "decode"),
    ("node07_agg_w1.err", "agg_w1", "aggregated"),
    ("logs/node01_frontend_0.out", "frontend_0", "frontend"),
    ("s10b_pd_example.prefill.log", "s10b_pd_example.prefill", "prefill"),
    ("my-decode-server.log", "my-decode-server", "decode"),
    ("s2_seqs4.log", "s2_seqs4", None),
    ("predecoder.log", "predecoder", None),
])
def test_names_and_roles_from_file_names(path, name, role):
    assert name_from_file(path) == (name, role)


def _args(source, **args):
    return Event("args", source, 1, None, None, "INFO", {"args": args})


def test_one_endpoint_spans_the_files_of_several_nodes():
    model = DeploymentModel()
    a = model.endpoint_of("n1_decode_w0.out")
    b = model.endpoint_of("n2_decode_w0.out")
    assert a is b and a.sources == ["n1_decode_w0.out", "n2_decode_w0.out"]


def test_role_from_kv_role_and_gpus_from_args():
    model = DeploymentModel()
    ep = model.observe(_args("server.log", data_parallel_size=8, tensor_parallel_size=1,
                             kv_transfer_config={"kv_role": "kv_consumer"}))
    assert (ep.role, ep.role_from, ep.gpus, ep.gpus_inferred) == ("decode", "kv_role", 8, False)
    both = model.observe(_args("other.log", kv_transfer_config={"kv_role": "kv_both"}))
    assert both.role == "unknown"  # kv_both says nothing


def test_gpus_guessed_from_engines_seen_are_flagged():
    model = DeploymentModel()
    for engine in range(4):
        model.observe(Event("stats", "n_prefill_w0.out", engine + 1, None, engine, "INFO", {}))
    ep = model.endpoints["prefill_w0"]
    assert (ep.gpus, ep.gpus_inferred) == (4, True)


def test_explicit_spec_beats_file_name_and_log():
    model = DeploymentModel([EndpointSpec("p0", "prefill", ("*_decode_w9.out",), gpus=2)])
    ep = model.observe(_args("x/n_decode_w9.out", kv_transfer_config={"kv_role": "kv_consumer"}))
    assert (ep.name, ep.role, ep.gpus, ep.gpus_inferred) == ("p0", "prefill", 2, False)
    assert "role_conflict" in ep.facts
