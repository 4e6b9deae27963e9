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


@pytest.mark.parametrize("source,name,role", [
    ("logs/raw_prometheus.jsonl#decode_w0", "decode_w0", "decode"),
    ("logs/raw_prometheus.jsonl.gz#agg_w1", "agg_w1", "aggregated"),
    ("raw_prometheus.jsonl#frontend_0", "frontend_0", "frontend"),
    ("logs/raw_prometheus.jsonl#decode@node1:8081", "decode@node1:8081", "decode"),
    ("logs/raw_prometheus.jsonl#prefill@10.0.0.8:8082", "prefill@10.0.0.8:8082", "prefill"),
])
def test_names_and_roles_of_raw_prometheus_records(source, name, role):
    assert name_from_file(source) == (name, role)


def test_a_raw_prometheus_record_joins_the_log_it_names():
    model = DeploymentModel()
    decode = model.endpoint_of("logs/node1_decode_w0.out")
    agg = model.endpoint_of("logs/node2_agg_w0.out")
    prefill = model.endpoint_of("logs/node3_prefill_w1.out")
    frontend = model.endpoint_of("logs/node1_frontend_0.out")
    raw = "logs/raw_prometheus.jsonl"
    assert model.endpoint_of(f"{raw}#decode@node1:8081") is decode  # srt-slurm's: the node
    assert model.endpoint_of(f"{raw}#decode@node2:8081") is agg  # srt-slurm scrapes an agg worker as decode
    assert model.endpoint_of(f"{raw}#prefill_w1") is prefill  # an index
    assert model.endpoint_of(f"{raw}#frontend_0") is frontend
    other = model.endpoint_of(f"{raw}#decode@node9:8081")  # no log of that node: an endpoint of its own
    assert other.name == "decode@node9:8081" and other.role == "decode"


def test_two_workers_of_a_role_on_one_node_are_not_guessed_by_the_model():
    model = DeploymentModel()
    w0 = model.endpoint_of("logs/node1_decode_w0.out")
    w1 = model.endpoint_of("logs/node1_decode_w1.out")
    raw = "logs/raw_prometheus.jsonl"
    assert model.raw_record_candidates(f"{raw}#decode@node1:8082") == [w0, w1]
    assert model.raw_record_home(f"{raw}#decode@node1:8082") is None


def test_report_takes_them_in_the_order_of_their_ports_when_as_many_ports_as_logs():
    from pdwatch.model.store import Store
    from pdwatch.session.analysis import _raw_record_homes
    store = Store()
    w0 = store.model.endpoint_of("logs/node1_decode_w0.out")
    w1 = store.model.endpoint_of("logs/node1_decode_w1.out")
    raw = "logs/raw_prometheus.jsonl"
    notices = []
    homes = _raw_record_homes(store, [f"{raw}#decode@node1:8091", f"{raw}#decode@node1:8081"], notices)
    assert homes == {f"{raw}#decode@node1:8081": w0, f"{raw}#decode@node1:8091": w1}
    assert "taken in the order of their ports" in notices[0].message
    notices = []
    assert _raw_record_homes(store, [f"{raw}#decode@node1:8081"], notices) == {}  # one port, two logs: not known
    assert "which is which is not known" in notices[0].message
