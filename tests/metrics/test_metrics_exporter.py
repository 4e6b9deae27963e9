"""exporter: pdwatch's view as Prometheus metrics, read back with prometheus-client's parser."""

from __future__ import annotations

import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pdwatch.parsers import Event
from pdwatch.events.recorded import read_recorded
from pdwatch.views.exporter import PdwatchExporter
from pdwatch.model.store import Store

REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 11, 29, 9, 0, tzinfo=timezone.utc)


def samples(text: str) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def stats(source, engine, **values):
    return Event("stats", source, 1, T0, engine, None, values)


def test_store_view_exported():
    store = Store()
    store.add([stats("node1_prefill_w0.log", 0, prompt_tps=1000.0, gen_tps=1.0, running=2, waiting=5, kv_usage_pct=40.0),
               stats("node1_prefill_w0.log", 1, prompt_tps=3000.0, gen_tps=1.0, running=4, waiting=1, kv_usage_pct=60.0),
               stats("node2_decode_w0.log", 0, prompt_tps=0.0, gen_tps=500.0, running=50, waiting=0, kv_usage_pct=90.0)])
    findings = [SimpleNamespace(rule="prefill_bound", endpoint="prefill_w0", severity="warning", end=None),
                SimpleNamespace(rule="old", endpoint="decode_w0", severity="info", end=T0),
                SimpleNamespace(rule="kv_exhausted", endpoint=None, severity="critical", state="firing"),
                SimpleNamespace(rule="gone", endpoint=None, severity="critical", state="resolved")]
    exporter = PdwatchExporter()
    exporter.update(store, findings, sources_up={"http://127.0.0.1:1/metrics": False, "a.log": True})
    got = samples(exporter.render())
    names = {ep.name: ep for ep in store.endpoints()}
    pre = next(n for n in names if "prefill" in n)
    dec = next(n for n in names if "decode" in n)
    assert got[("pdwatch_endpoint_tokens_per_second", (("endpoint", pre), ("kind", "prompt"), ("role", "prefill")))] == 4000.0
    assert got[("pdwatch_endpoint_tokens_per_second", (("endpoint", dec), ("kind", "generation"), ("role", "decode")))] == 500.0
    assert got[("pdwatch_engine_kv_usage_ratio", (("endpoint", pre), ("engine", "1"), ("role", "prefill")))] == pytest.approx(0.6)
    assert got[("pdwatch_engine_running", (("endpoint", dec), ("engine", "0"), ("role", "decode")))] == 50.0
    assert got[("pdwatch_engine_waiting", (("endpoint", pre), ("engine", "0"), ("role", "prefill")))] == 5.0
    # prefill counts prompt (4000), decode generation (500); 2 + 1 GPUs (engines seen)
    assert got[("pdwatch_deployment_tps_per_gpu", ())] == pytest.approx(4500 / 3)
    assert got[("pdwatch_source_up", (("source", "http://127.0.0.1:1/metrics"),))] == 0.0
    assert got[("pdwatch_source_up", (("source", "a.log"),))] == 1.0
    active = {k[1] for k in got if k[0] == "pdwatch_finding_active"}
    assert active == {(("endpoint", "prefill_w0"), ("rule", "prefill_bound"), ("severity", "warning")),
                      (("endpoint", ""), ("rule", "kv_exhausted"), ("severity", "critical"))}


def test_hostile_endpoint_name_is_escaped_not_breaking():
    hostile = 'evil"} 1\npdwatch_pwned 1\n# \\'
    store = Store()
    store.add([stats(hostile + "_decode.log", 0, gen_tps=10.0, running=1, waiting=0, kv_usage_pct=1.0)])
    exporter = PdwatchExporter()
    exporter.update(store, [SimpleNamespace(rule="r", endpoint=hostile, severity="s", end=None)],
                    sources_up={hostile: True})
    text = exporter.render()
    got = samples(text)
    assert not any(k[0] == "pdwatch_pwned" for k in got)
    assert got[("pdwatch_source_up", (("source", hostile),))] == 1.0
    endpoints = {dict(k[1]).get("endpoint") for k in got if k[0] == "pdwatch_engine_running"}
    assert endpoints == {store.endpoints()[0].name} and "\n" in store.endpoints()[0].name


def test_served_over_http_on_loopback_from_recorded_scrapes():
    store = Store()
    pairs = set()
    for path in sorted((REPO / "samples" / "prefill-bound" / "metrics").glob("*.metrics.txt")):
        events = read_recorded(path)[0]
        pairs |= {(e.source, e.engine) for e in events}
        store.add(events)
    exporter = PdwatchExporter()
    exporter.update(store)
    server, thread = exporter.serve(0)
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    got = samples(text)
    running = [v for k, v in got.items() if k[0] == "pdwatch_engine_running"]
    assert len(running) == len(pairs) == 16  # 4 prefill workers x DEP2 + 1 decode worker x DEP8
    assert got[("pdwatch_deployment_tps_per_gpu", ())] > 0


def test_empty_store_still_valid():
    exporter = PdwatchExporter()
    exporter.update(Store())
    got = samples(exporter.render())
    assert not any(k[0] == "pdwatch_deployment_tps_per_gpu" for k in got)
