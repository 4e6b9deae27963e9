"""The report as plain data: the JSON contract, and what the Markdown and HTML writers render.

Keys documented in the README ("Report JSON") are a contract: never rename them.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd

from pdwatch import __version__
from pdwatch.capacity import view as capacity_view
from pdwatch.session import triage
from pdwatch.session.analysis import Analysis
from pdwatch.model.store import Store
from pdwatch.rules import Finding

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
SUMMARY_FIELDS = ("prompt_tps", "gen_tps", "running", "waiting", "kv_usage_pct")
FRONTEND_FIELDS = ("request_rate", "frontend_inflight", "frontend_queued", "ttft_s", "itl_s", "isl_tokens",
                   "osl_tokens")
KEY_ARGS = ("max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization", "data_parallel_size",
            "tensor_parallel_size", "api_server_count", "kv_role", "kv_connector", "max_capture_size",
            "num_speculative_tokens", "block_size", "async_scheduling", "enable_prefix_caching", "max_model_len")
CAPACITY_FACTS = ("weights_gib", "kv_memory_gib", "kv_capacity_tokens", "max_concurrency", "max_concurrency_tokens",
                  "max_num_seqs", "block_size", "max_capture_size", "hybrid", "ssm_dtype")
_CHART_POINTS = 600


def build(analysis: Analysis) -> dict[str, Any]:
    store = analysis.store
    findings = sort_findings(analysis.findings)
    verdict, groups = triage.assess(store, findings, analysis.clock[1] if analysis.clock else None)
    fields = {r.finding: list(r.quoted_fields()) for r in analysis.rules}
    return {
        "pdwatch_version": __version__,
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "sources": analysis.paths,
        "deployment": _deployment(store),
        "summary": _summary(analysis),
        "endpoints": [_endpoint_summary(store, ep.name, analysis) for ep in store.endpoints()],
        "findings": [_finding(store, f, fields.get(f.rule, ())) for f in findings],
        "capacity": _capacity(store, analysis),
        "series": _series(store),
        "notices": [n.message for n in analysis.notices if n.kind not in {"opened", "metrics_file"}],
        "rules": sorted(r.finding for r in analysis.rules),
        # added by the triage (issue 17): the verdict line and the findings grouped across endpoints
        # ("findings" holds indices into findings[]); endpoints_order: worst first
        "verdict": verdict.to_json_dict(),
        "groups": [g.to_json_dict() for g in groups],
        "endpoints_order": triage.worst_first([(ep.name, ep.role) for ep in store.endpoints()], findings),
    }


def sort_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (SEVERITY_ORDER.get(f.severity, 9), _ts_key(f.start), f.rule,
                                           f.endpoint or ""))


def _deployment(store: Store) -> dict[str, Any]:
    endpoints = []
    for ep in store.endpoints():
        facts = ep.facts
        endpoints.append({
            "name": ep.name, "role": ep.role, "role_from": ep.role_from, "engines": sorted(ep.engines),
            "gpus": ep.gpus, "gpus_inferred": ep.gpus_inferred, "gpus_from": ep.gpus_from, "sources": list(ep.sources),
            "version": facts.get("version"), "model": facts.get("model"),
            "key_args": {k: facts[k] for k in KEY_ARGS if k in facts},
        })
    gpus = [e["gpus"] for e in endpoints if e["role"] != "frontend"]
    return {"endpoints": endpoints, "total_gpus": sum(gpus) if gpus and all(gpus) else None}


def _summary(analysis: Analysis) -> dict[str, Any]:
    h = analysis.headline
    return {
        "total_tps": _num(h.total_tps), "tps_per_gpu": _num(h.tps_per_gpu),
        "prompt_tps": _num(h.prompt_tps), "gen_tps": _num(h.gen_tps),
        "window": {"start": _iso(h.start), "end": _iso(h.end)},
        "gpus": h.gpus, "gpus_inferred": h.gpus_inferred,
        "device": h.device, "workers": h.workers, "tps_per_worker": _num(h.tps_per_worker),
        "per_role": {role: {k: _num(v) for k, v in vals.items()} for role, vals in h.per_role.items()},
        "note": h.note,
        "run": {"start": _iso(analysis.clock[0]), "end": _iso(analysis.clock[1])} if analysis.clock else None,
    }


def _endpoint_summary(store: Store, name: str, analysis: Analysis) -> dict[str, Any]:
    stats = store.stats(name)
    h = analysis.headline
    if h.start is not None and not stats.empty:
        window = stats[(stats["ts"] >= h.start) & (stats["ts"] <= h.end)]
        stats = window if not window.empty else stats
    out: dict[str, Any] = {"name": name, "stats_lines": int(len(store.stats(name))),
                           "last_seen": _iso(store.last_seen(name))}
    endpoint = store.model.endpoints.get(name)
    interval = endpoint.facts.get("stats_interval_s") if endpoint is not None else None
    # An endpoint without a stats line is said in words (why, when its start-up lines tell), not as "?" cells.
    out["no_stats"] = None if out["stats_lines"] else _no_stats(endpoint)
    totals = endpoint_totals(stats, interval) if not stats.empty else None
    for field in SUMMARY_FIELDS:
        values = totals[field].dropna() if totals is not None else pd.Series(dtype="float64")
        out[field] = ({"p50": _num(float(np.percentile(values, 50))), "p95": _num(float(np.percentile(values, 95)))}
                      if len(values) else {"p50": None, "p95": None})
    out["frontend"] = _frontend_summary(stats)
    if out["frontend"] is not None:
        out["no_stats"] = None  # a Dynamo frontend's /metrics rows: its figures are the frontend ones
    return out


def _frontend_summary(stats: pd.DataFrame) -> dict[str, Any] | None:
    """A Dynamo frontend's user-facing figures over the steady state (p50 / p95), from its /metrics."""
    if stats.empty or not any(f in stats.columns and stats[f].notna().any() for f in FRONTEND_FIELDS):
        return None
    out: dict[str, Any] = {}
    for field in FRONTEND_FIELDS:
        values = stats[field].dropna() if field in stats.columns else pd.Series(dtype="float64")
        out[field] = ({"p50": _num(float(np.percentile(values, 50))), "p95": _num(float(np.percentile(values, 95)))}
                      if len(values) else {"p50": None, "p95": None})
    return out


def _no_stats(endpoint: Any) -> str:
    if endpoint is not None and endpoint.stats_silence:
        return endpoint.stats_silence
    if endpoint is not None and endpoint.role == "frontend":
        return "a frontend prints no stats lines"
    return "no stats lines in its logs"


def endpoint_totals(stats: pd.DataFrame, interval_s: float | None) -> pd.DataFrame:
    """The endpoint per stats interval: each engine's last line in the bucket, engines summed (KV averaged).

    Engines of one endpoint print their lines in the same burst but not at the same
    microsecond, so rows are bucketed before they are added up.
    """
    freq = f"{max(round(interval_s or 1.0), 1)}s"
    keyed = stats.assign(bucket=stats["ts"].dt.floor(freq))
    last = keyed.groupby(["bucket", "engine"])[list(SUMMARY_FIELDS)].last()
    per_bucket = last.groupby("bucket").agg({f: ("mean" if f == "kv_usage_pct" else "sum") for f in SUMMARY_FIELDS})
    return per_bucket


def _finding(store: Store, finding: Finding, fields: Any = ()) -> dict[str, Any]:
    evidence = []
    for e in finding.evidence:
        quoted = store.quote(e)
        # the values the rule read, as character spans of the quoted line (stats lines only)
        quoted["highlight"] = [list(span) for span in triage.evidence_marks(quoted["text"] or "", fields)] \
            if e.get("kind") == "stats" else []
        evidence.append(quoted)
    return {
        "rule": finding.rule, "severity": finding.severity, "endpoint": finding.endpoint,
        "engines": list(finding.engines), "start": _iso(finding.start), "end": _iso(finding.end),
        "summary": finding.summary, "explanation": finding.explanation,
        "evidence": evidence,
        "recommendation": finding.recommendation,
    }


def _capacity(store: Store, analysis: Analysis) -> list[dict[str, Any]]:
    rows = []
    for ep in store.endpoints():
        facts = {k: ep.facts[k] for k in CAPACITY_FACTS if k in ep.facts}
        computed = capacity_view.report_rows(analysis.capacity, ep.name)
        if facts or computed:
            rows.append({"endpoint": ep.name, "role": ep.role, "engines": sorted(ep.engines), **facts,
                         "computed": computed})
    return rows


def _series(store: Store) -> dict[str, dict[str, list]]:
    """Per endpoint, engines summed per stats interval, thinned to at most ~600 points for charts."""
    out = {}
    for ep in store.endpoints():
        stats = store.stats(ep.name)
        if stats.empty:
            continue
        per_ts = endpoint_totals(stats, ep.facts.get("stats_interval_s"))
        step = max(1, math.ceil(len(per_ts) / _CHART_POINTS))
        per_ts = per_ts.iloc[::step]
        out[ep.name] = {"ts": [_iso(t) for t in per_ts.index],
                        **{c: [_num(v) for v in per_ts[c].tolist()] for c in per_ts.columns}}
    return out


def _iso(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _ts_key(value: Any) -> float:
    if value is None:
        return float("inf")
    return pd.Timestamp(value).timestamp()


def _num(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return round(value, 3) if math.isfinite(value) else None
