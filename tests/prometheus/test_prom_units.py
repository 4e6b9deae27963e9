"""The pieces of the Prometheus source that need no server: selectors, the argument, times, naming."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pdwatch.errors import UsageError
from pdwatch.model.deployment import DeploymentModel, EndpointSpec, name_from_file
from pdwatch.model.topology_file import load_topology
from pdwatch.units import parse_duration
from pdwatch.sources.prometheus import (endpoint_name, parse_prom, parse_when, role_from_labels,
                                        source_labels, target_source)
from pdwatch.sources.promql import Matcher, SelectorError, labels_text, matches_all, parse_selector, quote, render


def test_selectors_parse_and_match_as_promql_does():
    ms = parse_selector('{job="vllm", instance=~"node[0-9]+:8000",role!="frontend", x!~`a\\d`}')
    assert ms == (Matcher("job", "=", "vllm"), Matcher("instance", "=~", "node[0-9]+:8000"),
                  Matcher("role", "!=", "frontend"), Matcher("x", "!~", "a\\d"))
    assert matches_all(ms, {"job": "vllm", "instance": "node7:8000"})
    assert not matches_all(ms, {"job": "vllm", "instance": "node7:8000x"})  # anchored, as in Prometheus
    assert not matches_all(ms, {"job": "vllm", "instance": "node7:8000", "role": "frontend"})
    assert parse_selector("{}") == ()
    assert parse_selector('{a="q\\"uote\\n",}') == (Matcher("a", "=", 'q"uote\n'),)
    assert parse_selector("{a='single'}") == (Matcher("a", "=", "single"),)


@pytest.mark.parametrize("text, says", [
    ("job=vllm", "expected a series selector"),
    ('vllm:num_requests_running{job="a"}', "without a metric name"),
    ("{job=}", "a quoted value was expected"),
    ('{job="a"', "never closed"),
    ('{job~"a"}', "=, !=, =~ or !~ was expected"),
    ('{job=~"("}', "bad regular expression"),
    ('{__name__="x"}', "__name__ cannot be chosen"),
    ('{job="a"} extra', "unexpected text"),
    ('{job="a\\q"}', "unknown escape"),
])
def test_bad_selectors_say_why(text, says):
    with pytest.raises(SelectorError, match=None) as info:
        parse_selector(text)
    assert says in str(info.value)


def test_written_selectors_read_back():
    labels = {"job": 'we"ird\\', "instance": "h:1", "z": "\n"}
    assert {m.name: m.value for m in parse_selector(labels_text(labels))} == labels
    assert render((Matcher("a", "=~", "x|y"),), "up") == 'up{a=~"x|y"}'
    assert quote('a"b') == '"a\\"b"'


def test_the_argument():
    spec = parse_prom('prom+https://me:secret@prom.example:9443/prom/?match={job="vllm"}')
    assert spec.base == "https://prom.example:9443/prom"
    assert spec.display == "prom+https://prom.example:9443/prom"  # no password in what is shown
    assert spec.auth == ("me", "secret")
    assert spec.matchers == (Matcher("job", "=", "vllm"),)
    assert parse_prom("prom+http://h:9090?match=%7Bjob%3D%22a%22%7D").matchers == (Matcher("job", "=", "a"),)
    assert parse_prom("prom+http://[::1]:9090").base == "http://[::1]:9090"
    for bad, says in [("prom+ftp://h", "expected prom+http"), ("prom+http://h:9090?foo=1", "unknown parameter"),
                      ("prom+http://h:9090?match={job=}", "bad selector"), ("prom+http://:9090", "HOST:PORT")]:
        with pytest.raises(ValueError) as info:
            parse_prom(bad)
        assert says in str(info.value)


def test_times():
    now = 1_800_000_000.0
    assert parse_duration("1h30m") == 5400 and parse_duration("250ms") == 0.25 and parse_duration("x") is None
    assert parse_when("30m", now, "--since") == now - 1800
    assert parse_when("now", now, "--until") == now
    assert parse_when("2026-12-02T03:16:00Z", now, "--since") == datetime(2026, 12, 2, 3, 16,
                                                                          tzinfo=timezone.utc).timestamp()
    assert parse_when("2026-12-02T03:16:00", now, "--since") == parse_when("2026-12-02T03:16:00+00:00", now, "x")
    assert parse_when("1796181389.7", now, "--since") == 1796181389.7
    with pytest.raises(ValueError, match="--since 'soon'"):
        parse_when("soon", now, "--since")


def test_targets_name_endpoints_and_roles():
    source = target_source("prom+http://p:9090", {"job": "vllm", "instance": "node7:8000", "role": "decode"})
    assert source == 'prom+http://p:9090{instance="node7:8000",job="vllm",role="decode"}'
    assert source_labels(source) == {"job": "vllm", "instance": "node7:8000", "role": "decode"}
    assert endpoint_name(source) == "node7:8000" == name_from_file(source)[0]
    assert source_labels("http://node7:8000/metrics") is None
    assert source_labels('prom+http://p:9090?match={job="x"}') is None  # a server, not a target
    assert role_from_labels({"role": "Prefill"}) == ("prefill", 'label role="Prefill"')
    assert role_from_labels({"worker_type": "agg"})[0] == "aggregated"
    assert role_from_labels({"dynamo_component": "prefill"})[0] == "prefill"
    assert role_from_labels({"dynamo_component": "backend", "dynamo_namespace": "ns"}) is None
    assert role_from_labels({"dynamo_component": "backend", "dynamo_namespace": "ns"}, frozenset({"ns"}))[0] == \
        "decode"


def test_a_topology_names_targets_by_selector(tmp_path):
    topo = tmp_path / "t.yaml"
    topo.write_text('endpoints:\n- {name: dec, role: decode, prom: \'{job="vllm",instance=~"node7:.*"}\'}\n'
                    '- {name: pre, role: prefill, globs: [pre.log], prom: [\'{instance="node1:8000"}\']}\n')
    specs = load_topology(str(topo))
    model = DeploymentModel(specs)
    assert model.endpoint_of('prom+http://p:9090{instance="node7:8000",job="vllm"}').name == "dec"
    assert model.endpoint_of('prom+http://p:9090{instance="node1:8000",job="other"}').name == "pre"
    assert model.endpoint_of('prom+http://p:9090{instance="node9:8000",job="vllm"}').name == "node9:8000"
    topo.write_text('endpoints:\n- {name: dec, role: decode, prom: \'{job=}\'}\n')
    with pytest.raises(UsageError, match="t.yaml:2: endpoints\\[0\\]: prom: .*a quoted value was expected"):
        load_topology(str(topo))


def test_a_log_and_its_target_are_one_endpoint_when_the_log_says_its_port():
    from pdwatch.parsers import Event

    model = DeploymentModel([EndpointSpec("", "decode", ("*decode*",))])
    log = model.endpoint_of("x_decode.log")
    model.observe(Event(kind="args", source="x_decode.log", line_no=1, ts=None, engine=None, level="INFO",
                        values={"args": {"port": 8000}}, text=""))
    assert model.endpoint_of('prom+http://p:9090{instance="node7:8000",job="vllm"}') is log
