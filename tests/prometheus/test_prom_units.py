"""The pieces of the Prometheus source that need no server: selectors, the argument, times, naming."""

from __future__ import annotations

import pickle
from datetime import datetime, timezone

import pytest

from pdwatch.errors import UsageError
from pdwatch.events.stream import EventStream
from pdwatch.model.deployment import DeploymentModel, EndpointSpec, name_from_file
from pdwatch.model.store import Store
from pdwatch.model.topology_file import load_topology
from pdwatch.parsers import Event
from pdwatch.units import parse_duration
from pdwatch.sources.prometheus import (parse_prom, parse_when, role_from_labels, target_name, target_port,
                                        target_source)
from pdwatch.sources.records import Labels, SampleBlock
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
    labels = {"job": "vllm", "instance": "node7:8000", "role": "decode"}
    source = target_source("prom+http://p:9090", labels)
    assert source == 'prom+http://p:9090{instance="node7:8000",job="vllm",role="decode"}'
    assert target_name(labels) == "node7:8000" == name_from_file(source, labels)[0]
    assert target_name({"job": "vllm", "instance": ""}) == "vllm" and target_port(labels) == 8000
    assert target_port({"job": "vllm"}) is None and target_port({"instance": "node7:x"}) is None
    assert name_from_file(source)[0] != "node7:8000"  # the name alone is no target: its labels travel beside it
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
    for labels, name in [({"instance": "node7:8000", "job": "vllm"}, "dec"),
                         ({"instance": "node1:8000", "job": "other"}, "pre"),
                         ({"instance": "node9:8000", "job": "vllm"}, "node9:8000")]:
        assert model.endpoint_of(target_source("prom+http://p:9090", labels), labels).name == name
    # A source that only looks like a target (no labels given) is no target: no selector matches it.
    assert model.endpoint_of('prom+http://p:9090{instance="node7:8000",job="vllm",x="1"}').name != "dec"
    topo.write_text('endpoints:\n- {name: dec, role: decode, prom: \'{job=}\'}\n')
    with pytest.raises(UsageError, match="t.yaml:2: endpoints\\[0\\]: prom: .*a quoted value was expected"):
        load_topology(str(topo))


def test_a_log_and_its_target_are_one_endpoint_when_the_log_says_its_port():
    model = DeploymentModel([EndpointSpec("", "decode", ("*decode*",))])
    log = model.endpoint_of("x_decode.log")
    model.observe(Event(kind="args", source="x_decode.log", line_no=1, ts=None, engine=None, level="INFO",
                        values={"args": {"port": 8000}}, text=""))
    labels = {"instance": "node7:8000", "job": "vllm"}
    assert model.endpoint_of(target_source("prom+http://p:9090", labels), labels) is log


def _target_block(source: str, labels: Labels, scrape_no: int = 1) -> SampleBlock:
    series = {"engine": "0", "model_name": "m", **labels}
    samples = [("vllm:num_requests_running", series, 3.0), ("vllm:num_requests_waiting", series, 1.0),
               ("vllm:kv_cache_usage_perc", series, 0.5)]
    return SampleBlock(source, scrape_no, datetime(2026, 1, 1, 0, 0, scrape_no, tzinfo=timezone.utc), samples,
                       ("decode", 'label role="decode"') if scrape_no == 1 else None, labels)


def test_the_labels_travel_with_the_events_and_name_the_endpoint(tmp_path):
    """A target's endpoint is named and matched from its events' labels: a source name that
    shows none (here the server's alone) still lands on the endpoint its instance names."""
    labels = Labels({"instance": "node7:8000", "job": "vllm"})
    stream = EventStream(None)
    events = [e for n in (1, 2) for e in stream.events_of(_target_block("prom+http://p:9090", labels, n))]
    assert [e.kind for e in events] == ["role_hint", "stats", "stats"]
    assert all(e.labels is labels for e in events)
    assert all("labels" not in e.to_json_dict() for e in events)  # pdwatch parse prints the source only
    assert pickle.loads(pickle.dumps(events))[1].labels == {"instance": "node7:8000", "job": "vllm"}
    assert hash(labels) == hash(Labels([("job", "vllm"), ("instance", "node7:8000")]))

    store = Store()
    store.add(events)
    store.flush()
    endpoint = store.model.endpoint_of("prom+http://p:9090")
    assert (endpoint.name, endpoint.role, endpoint.role_from) == ("node7:8000", "decode", "prometheus label")
    assert endpoint.sources == ["prom+http://p:9090"] and len(store.stats("node7:8000")) == 2

    topo = tmp_path / "t.yaml"
    topo.write_text('endpoints:\n- {name: dec, role: decode, prom: \'{job="vllm",instance=~"node7:.*"}\'}\n')
    model = DeploymentModel(load_topology(str(topo)))
    assert model.observe(events[1]).name == "dec"  # the topology's selector matched the event's labels
    assert model.endpoint_of("prom+http://p:9090") is model.endpoints["dec"]
    # The same source name without labels (a log, a /metrics URL) is matched by no selector.
    assert DeploymentModel(load_topology(str(topo))).endpoint_of("prom+http://p:9090").name != "dec"


def test_a_log_claims_the_target_scraped_before_it_said_its_port():
    labels = Labels({"instance": "node7:8000", "job": "vllm"})
    store = Store(DeploymentModel([EndpointSpec("", "decode", ("*decode*",))]))
    store.add(EventStream(None).events_of(_target_block("prom+http://p:9090", labels)))
    assert "node7:8000" in store.model.endpoints
    store.add([Event(kind="args", source="x_decode.log", line_no=1, ts=None, engine=None, level="INFO",
                     values={"args": {"port": 8000}}, text="")])
    log = store.model.endpoint_of("x_decode.log")
    assert "node7:8000" not in store.model.endpoints  # its port, from the labels the model was given
    assert store.model.endpoint_of("prom+http://p:9090") is log and "prom+http://p:9090" in log.sources
