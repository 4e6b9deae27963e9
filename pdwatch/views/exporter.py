"""Serve pdwatch's current view as Prometheus metrics (prometheus-client, a custom Collector).

Metrics (label values come from file names and logs: they are data, escaped by prometheus_client):

- ``pdwatch_endpoint_tokens_per_second{endpoint,role,kind="prompt"|"generation"}``: the endpoint's
  latest tokens/s, summed over its engines (each engine's latest stats value).
- ``pdwatch_engine_running``, ``pdwatch_engine_waiting``, ``pdwatch_engine_kv_usage_ratio`` (0-1)
  ``{endpoint,role,engine}``: each engine's latest value.
- ``pdwatch_deployment_tps_per_gpu``: counted tokens/s (prefill: prompt, decode: generation,
  aggregated/unknown: both, as in ``pdwatch.model.throughput``) per GPU, latest values; absent when a
  GPU count is unknown or the workers run on vLLM's CPU backend (no GPU), unless ``update(tps_per_gpu=...)``
  gives it (e.g. the report's headline).
- ``pdwatch_source_up{source}``: 1/0 per source given to ``update(sources_up=...)``
  (e.g. ``{url: s.up for url, s in MetricsScraper.status.items()}``).
- ``pdwatch_finding_active{rule,endpoint,severity}``: 1 per active finding (``rules.Finding`` with
  ``end is None`` or ``rules.FindingState`` not ``resolved``; endpoint "" at deployment scope).

Thread-safety: the thread that owns the ``Store`` calls ``exporter.update(store, findings, ...)``
(e.g. each dashboard tick); that takes a plain snapshot under a lock, and scrapes only read
snapshots. API:

    exporter = PdwatchExporter()
    exporter.update(store, findings, sources_up={...})
    server, thread = exporter.serve(port, addr="127.0.0.1")   # server.shutdown() to stop
    text = exporter.render()                                 # the exposition, without HTTP
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from prometheus_client import CollectorRegistry, generate_latest, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from pdwatch.model.store import Store
from pdwatch.model.throughput import COUNTED


@dataclass
class Snapshot:
    endpoint_tps: list[tuple[str, str, str, float]] = field(default_factory=list)  # endpoint, role, kind, value
    engines: list[tuple[str, str, str, dict[str, float]]] = field(default_factory=list)  # endpoint, role, engine, values
    tps_per_gpu: float | None = None
    sources_up: dict[str, bool] = field(default_factory=dict)
    findings: list[tuple[str, str, str]] = field(default_factory=list)  # rule, endpoint, severity


def _finite(x: Any) -> float | None:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _active(finding: Any) -> bool:
    if getattr(finding, "state", None) is not None:
        return finding.state != "resolved"
    return getattr(finding, "end", None) is None


def snapshot(store: Store, findings: Iterable[Any] = (), *, sources_up: Mapping[str, bool] | None = None,
             tps_per_gpu: float | None = None) -> Snapshot:
    """The plain-data view the exporter serves (call in the thread that owns ``store``)."""
    snap = Snapshot(sources_up=dict(sources_up or {}))
    counted_total, gpus_total, gpus_known = 0.0, 0, True
    endpoints = {e.name: e for e in store.endpoints()}
    for ep in store.view().endpoints:
        stats = ep.stats
        per_kind = {"prompt": None, "generation": None}
        counted = 0.0
        if not stats.empty:
            for engine, group in stats.groupby("engine", sort=True):
                last = {col: group[col].dropna() for col in ("running", "waiting", "kv_usage_pct", "prompt_tps", "gen_tps")}
                last = {col: (_finite(s.iloc[-1]) if len(s) else None) for col, s in last.items()}
                values = {k: v for k, v in (("running", last["running"]), ("waiting", last["waiting"]),
                                            ("kv_usage_ratio", None if last["kv_usage_pct"] is None
                                             else last["kv_usage_pct"] / 100.0)) if v is not None}
                snap.engines.append((ep.name, ep.role, str(engine), values))
                for kind, col in (("prompt", "prompt_tps"), ("generation", "gen_tps")):
                    if last[col] is not None:
                        per_kind[kind] = (per_kind[kind] or 0.0) + last[col]
                        if col in COUNTED.get(ep.role, ()):
                            counted += last[col]
        for kind, value in per_kind.items():
            if value is not None:
                snap.endpoint_tps.append((ep.name, ep.role, kind, value))
        if ep.role in COUNTED:
            counted_total += counted
            model = endpoints.get(ep.name)
            on_cpu = model is not None and str(model.facts.get("kv_device") or "").upper() == "CPU" \
                and model.declared_gpus is None
            if ep.gpus and not on_cpu:
                gpus_total += ep.gpus
            else:
                gpus_known = False  # vLLM's CPU backend has no GPU to divide by: no TPS/GPU at all
    if tps_per_gpu is not None:
        snap.tps_per_gpu = _finite(tps_per_gpu)
    elif gpus_known and gpus_total:
        snap.tps_per_gpu = counted_total / gpus_total
    for f in findings:
        if _active(f):
            snap.findings.append((str(f.rule), "" if f.endpoint is None else str(f.endpoint), str(f.severity)))
    return snap


class PdwatchExporter(Collector):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snap = Snapshot()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    def update(self, store: Store, findings: Iterable[Any] = (), *, sources_up: Mapping[str, bool] | None = None,
               tps_per_gpu: float | None = None) -> None:
        snap = snapshot(store, findings, sources_up=sources_up, tps_per_gpu=tps_per_gpu)
        with self._lock:
            self._snap = snap

    def collect(self):
        with self._lock:
            snap = self._snap
        tps = GaugeMetricFamily("pdwatch_endpoint_tokens_per_second",
                                "Latest tokens/s of the endpoint, summed over its engines.",
                                labels=["endpoint", "role", "kind"])
        for name, role, kind, value in snap.endpoint_tps:
            tps.add_metric([name, role, kind], value)
        yield tps
        for metric, key, help_text in (
                ("pdwatch_engine_running", "running", "Requests running on the engine (latest)."),
                ("pdwatch_engine_waiting", "waiting", "Requests waiting on the engine (latest)."),
                ("pdwatch_engine_kv_usage_ratio", "kv_usage_ratio", "KV-cache usage of the engine, 0-1 (latest).")):
            fam = GaugeMetricFamily(metric, help_text, labels=["endpoint", "role", "engine"])
            for name, role, engine, values in snap.engines:
                if key in values:
                    fam.add_metric([name, role, engine], values[key])
            yield fam
        if snap.tps_per_gpu is not None:
            yield GaugeMetricFamily("pdwatch_deployment_tps_per_gpu",
                                    "Counted tokens/s of the deployment per GPU.", value=snap.tps_per_gpu)
        up = GaugeMetricFamily("pdwatch_source_up", "1 when the source was read or scraped last time.",
                               labels=["source"])
        for source, ok in sorted(snap.sources_up.items()):
            up.add_metric([source], 1.0 if ok else 0.0)
        yield up
        active = GaugeMetricFamily("pdwatch_finding_active", "1 for each active finding.",
                                   labels=["rule", "endpoint", "severity"])
        for labels in sorted(set(snap.findings)):
            active.add_metric(list(labels), 1.0)
        yield active

    def render(self) -> str:
        return generate_latest(self.registry).decode("utf-8")

    def serve(self, port: int, addr: str = "127.0.0.1"):
        """Serve ``/metrics`` on ``addr:port`` (port 0: any free port) in a daemon thread; returns (server, thread)."""
        return start_http_server(port, addr=addr, registry=self.registry)
