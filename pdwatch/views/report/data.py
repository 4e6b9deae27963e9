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
from pdwatch.model.kv_transfers import kv_transfers
from pdwatch.model.store import Store
from pdwatch.model.throughput import Headline
from pdwatch.parsers.stats_marks import value_marks
from pdwatch.rules import Finding
from pdwatch.session.analysis import Analysis

SUMMARY_FIELDS = ("prompt_tps", "gen_tps", "running", "waiting", "kv_usage_pct")
FRONTEND_FIELDS = ("request_rate", "frontend_inflight", "frontend_queued", "ttft_s", "itl_s", "isl_tokens",
                   "osl_tokens")
# A Dynamo frontend's rows: those of its /metrics scrapes, and its log's inference responses counted per second.
SCRAPED_FIELDS = (*FRONTEND_FIELDS, "ttft_p99_s", "itl_p99_s")
REQUEST_FIELDS = ("requests_ok", "requests_failed")
KEY_ARGS = ("max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization", "data_parallel_size",
            "tensor_parallel_size", "api_server_count", "kv_role", "kv_connector", "max_capture_size",
            "num_speculative_tokens", "block_size", "async_scheduling", "enable_prefix_caching", "max_model_len")
CAPACITY_FACTS = ("weights_gib", "kv_memory_gib", "kv_capacity_tokens", "max_concurrency", "max_concurrency_tokens",
                  "max_num_seqs", "block_size", "max_capture_size", "hybrid", "ssm_dtype", "kv_blocks",
                  "num_gpu_blocks_override", "kv_blocks_from_memory")
_CHART_POINTS = 600


def build(analysis: Analysis) -> dict[str, Any]:
    """The report of an analysis: its diagnosis (made once, in ``analysis.diagnosis``) and the figures
    behind it, as plain data. The writers render this dict alone."""
    store = analysis.store
    diagnosis = analysis.diagnosis
    fields = {r.finding: list(r.quoted_fields()) for r in analysis.rules}
    return {
        "pdwatch_version": __version__,
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "sources": analysis.paths,
        "deployment": _deployment(store),
        "summary": _summary(analysis),
        "endpoints": [_endpoint_summary(store, ep.name, analysis) for ep in store.endpoints()],
        # most severe first, then by start: the order the diagnosis' groups index
        "findings": [_finding(store, f, fields.get(f.rule, ())) for f in diagnosis.findings],
        "capacity": _capacity(store, analysis),
        "series": _series(store),
        "notices": [n.message for n in analysis.notices if n.kind not in {"opened", "metrics_file"}],
        # a sweep job's measured points, each its own headline and verdict (empty: not a sweep)
        "phases": _phases(analysis),
        "rules": sorted(r.finding for r in analysis.rules),
        # the diagnosis: the verdict line, the findings grouped across endpoints ("findings" holds indices
        # into findings[]), the endpoints worst first and each endpoint's worst severity
        **diagnosis.to_json_dict(),
    }


def _phases(analysis: Analysis) -> list[dict[str, Any]]:
    from pdwatch.session.phases import phases
    out = []
    for phase in phases(analysis):
        h, v = phase.headline, phase.verdict
        out.append({
            "label": phase.label, "concurrency": phase.concurrency,
            "window": {"start": _iso(phase.start), "end": _iso(phase.end), "source": phase.source,
                       "timezone_assumed": phase.timezone},
            "steady": {"start": _iso(h.start), "end": _iso(h.end)},
            "tps_per_gpu": h.tps_per_gpu, "tps_per_worker": h.tps_per_worker, "total_tps": h.total_tps,
            "prompt_tps": h.prompt_tps, "gen_tps": h.gen_tps, "device": h.device,
            "verdict": None if v is None else {"text": v.text, "title": v.title, "rule": v.rule, "severity": v.severity},
            "valid": not phase.invalid_reasons, "invalid_reasons": list(phase.invalid_reasons),
        })
    return out


def _iso(when: Any) -> str | None:
    import pandas as pd
    return None if when is None else pd.Timestamp(when).tz_convert("UTC").isoformat()


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
    out: dict[str, Any] = {"name": name, "stats_lines": store.stats_line_count(name),
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
    out["frontend"] = _frontend_summary(store, name, stats, h)
    if out["frontend"] is not None:
        out["no_stats"] = None  # a Dynamo frontend's rows (requests, /metrics): its figures are the frontend ones
    out["kv_transfers"] = _kv_transfers(store, name, h)
    return out


def _kv_transfers(store: Store, name: str, h: Headline) -> dict[str, Any] | None:
    """The KV transfers its connector logged (a NIXL decode worker): over the run and the steady state."""
    events = store.events(name)
    run = kv_transfers(events)
    if run is None:
        return None
    steady = kv_transfers(events, h.start, h.end) if h.start is not None else None

    def period(t: Any) -> dict[str, Any] | None:
        return None if t is None else {"transfers": t.transfers, "failed": t.failed, "avg_ms": _num(t.avg_ms),
                                       "lines": t.lines}
    return {"run": period(run), "steady": period(steady)}


def _frontend_summary(store: Store, name: str, steady_stats: pd.DataFrame,
                      h: Headline) -> dict[str, Any] | None:
    """A Dynamo frontend as its users saw it, or None when it has no request or /metrics rows.

    The p50 / p95 of its /metrics figures over the steady state (``steady_stats``: the rows in the
    headline's window), and its figures over the run and over that window (``_frontend_period``)."""
    stats = store.stats(name)
    if not _has_any(stats, (*SCRAPED_FIELDS, *REQUEST_FIELDS)):
        return None
    out: dict[str, Any] = {}
    for field in FRONTEND_FIELDS:
        values = steady_stats[field].dropna() if field in steady_stats.columns else pd.Series(dtype="float64")
        out[field] = ({"p50": _num(float(np.percentile(values, 50))), "p95": _num(float(np.percentile(values, 95)))}
                      if len(values) else {"p50": None, "p95": None})
    events = store.events(name)
    out["scraped"] = _has_any(stats, SCRAPED_FIELDS)
    out["run"] = _frontend_period(stats, events, *_request_span(stats))
    # the headline's window as an interval [start, end): its end is the last microsecond in it
    out["steady"] = (_frontend_period(stats, events, h.start, h.end + pd.Timedelta(microseconds=1))
                     if h.start is not None else None)
    return out


def _has_any(stats: pd.DataFrame, fields: tuple[str, ...]) -> bool:
    return not stats.empty and bool(stats[[f for f in fields if f in stats.columns]].notna().to_numpy().any())


def _request_span(stats: pd.DataFrame) -> tuple[pd.Timestamp, pd.Timestamp]:
    """The run of a frontend: from the start of its first second with an inference response to the end
    of its last (a request row is stamped at the end of its second); without any, all its rows."""
    answered = stats[stats["requests_ok"].notna() | stats["requests_failed"].notna()]
    rows = answered if not answered.empty else stats
    return rows["ts"].iloc[0] - pd.Timedelta(seconds=1), rows["ts"].iloc[-1]


def _frontend_period(stats: pd.DataFrame, events: pd.DataFrame, start: pd.Timestamp,
                     end: pd.Timestamp) -> dict[str, Any]:
    """What a frontend's users got in [start, end): requests from its log's rows (ok, failed, their
    rate and mean latency), the failed ones by HTTP status and by Dynamo error type (its kept
    lines), and from its /metrics the TTFT and ITL (mean of the scrape intervals' means, and the
    highest p99 of a scrape interval), in flight and queued (mean and max); None where not known."""
    rows = stats[(stats["ts"] > start) & (stats["ts"] <= end)]  # a row describes the time before it
    seconds = (end - start).total_seconds()
    ok, failed = (rows[f].sum() if rows[f].notna().any() else None for f in REQUEST_FIELDS)
    answered = None if ok is None and failed is None else (ok or 0.0) + (failed or 0.0)
    weights = rows["requests_ok"].where(rows["request_latency_s"].notna(), 0.0).fillna(0.0)
    latency = (rows["request_latency_s"].fillna(0.0) * weights).sum() / weights.sum() if weights.sum() else None
    dated = events[(events["ts"] >= start) & (events["ts"] < end)]
    return {
        # its last microsecond, as the headline's window ends (16:24:01.999999: "to 16:24:01")
        "start": _iso(start), "end": _iso(end - pd.Timedelta(microseconds=1)), "seconds": _num(seconds),
        "requests_ok": None if answered is None else int(ok or 0),
        "requests_failed": None if answered is None else int(failed or 0),
        "requests_per_s": _num(answered / seconds) if answered is not None and seconds > 0 else None,
        "failed_pct": _num(100.0 * (failed or 0) / answered) if answered else None,
        "latency_s": _num(latency, 6),
        "by_status": _failed_by_status(rows, dated),
        "by_error_type": [{"error_type": reason, "lines": n} for reason, n in _reasons(dated, "request_error")],
        "ttft_mean_s": _num(_mean(rows["ttft_s"]), 6), "ttft_p99_s": _num(_max(rows["ttft_p99_s"]), 6),
        "itl_mean_s": _num(_mean(rows["itl_s"]), 6), "itl_p99_s": _num(_max(rows["itl_p99_s"]), 6),
        "inflight_mean": _num(_mean(rows["frontend_inflight"])), "inflight_max": _num(_max(rows["frontend_inflight"])),
        "queued_mean": _num(_mean(rows["frontend_queued"])), "queued_max": _num(_max(rows["frontend_queued"])),
    }


def _failed_by_status(rows: pd.DataFrame, events: pd.DataFrame) -> list[dict[str, Any]]:
    """The failed requests by HTTP status, commonest first: ``requests`` estimated, ``lines`` kept.

    The store counts every failed response (a row's ``requests_failed``, per second) but keeps only
    the first few lines of each second, with their status: each second's count is shared among the
    statuses of its kept lines (exact when a second had no more failures than lines kept, or one
    status). A failure whose second kept no line (a line without a time) is under status "?"."""
    failed = events[events["kind"] == "request_failed"]
    lines = dict(_reasons(failed, "request_failed"))
    if not lines:
        return []
    second = (failed["ts"].dt.floor("s") + pd.Timedelta(seconds=1)).rename("second")  # as the rows are stamped
    kept = failed.groupby([second, failed["reason"].astype(str).rename("status")]).size()
    share = kept / kept.groupby(level="second").transform("sum")
    per_second = rows.dropna(subset=["requests_failed"]).groupby("ts")["requests_failed"].sum()
    counted = per_second.reindex(share.index.get_level_values("second")).fillna(0.0).to_numpy()
    estimated = (share * counted).groupby(level="status").sum()
    out = [{"status": status, "requests": int(round(float(estimated.get(status, 0.0)))), "lines": n}
           for status, n in lines.items()]
    unplaced = float(per_second.sum() - estimated.sum())
    if unplaced >= 0.5:
        out.append({"status": "?", "requests": int(round(unplaced)), "lines": 0})
    return sorted(out, key=lambda r: (-r["requests"], -r["lines"], r["status"]))


def _reasons(events: pd.DataFrame, kind: str) -> list[tuple[str, int]]:
    """The reasons of a kind's events (an HTTP status, an error type) and their kept lines, commonest first."""
    reasons = events.loc[events["kind"] == kind, "reason"].dropna().astype(str)
    counts = reasons.value_counts()
    return sorted(((str(r), int(n)) for r, n in counts.items()), key=lambda item: (-item[1], item[0]))


def _mean(values: pd.Series) -> float | None:
    known = values.dropna()
    return float(known.mean()) if len(known) else None


def _max(values: pd.Series) -> float | None:
    known = values.dropna()
    return float(known.max()) if len(known) else None


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
        quoted["highlight"] = [list(span) for span in value_marks(quoted["text"] or "", fields)] \
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
            gap = capacity_view.gap_row(analysis.capacity, ep.name, ep.facts)
            rows.append({"endpoint": ep.name, "role": ep.role, "engines": sorted(ep.engines), **facts,
                         "computed": computed, **({"gap": gap} if gap else {})})
    return rows


def _series(store: Store) -> dict[str, dict[str, list]]:
    """Per endpoint, engines summed per stats interval, thinned to at most ~600 points for charts;
    a frontend's own figures (``frontend_series``)."""
    out = {}
    for ep in store.endpoints():
        stats = store.stats(ep.name)
        if stats.empty:
            continue
        if _has_any(stats, (*SCRAPED_FIELDS, *REQUEST_FIELDS)):
            out[ep.name] = frontend_series(stats)
            continue
        per_ts = endpoint_totals(stats, ep.facts.get("stats_interval_s"))
        step = max(1, math.ceil(len(per_ts) / _CHART_POINTS))
        per_ts = per_ts.iloc[::step]
        out[ep.name] = {"ts": [_iso(t) for t in per_ts.index],
                        **{c: [_num(v) for v in per_ts[c].tolist()] for c in per_ts.columns}}
    return out


FRONTEND_SERIES = ("requests_ok_per_s", "requests_failed_per_s", "latency_s", "ttft_s", "ttft_p99_s", "itl_s",
                   "itl_p99_s", "frontend_inflight", "frontend_queued")


def frontend_series(stats: pd.DataFrame) -> dict[str, list]:
    """A frontend per slice of time (a scrape interval, at least 1 s, at most ~600 slices): its
    inference responses per second, ok and failed, and their mean latency (its log), and the means of
    its /metrics figures in the slice (none where no request ended in a scrape interval)."""
    scrape = stats[list(SCRAPED_FIELDS)].notna().any(axis=1)  # the rows of a scrape
    gap = float(stats.loc[scrape, "ts"].diff().dt.total_seconds().median()) if scrape.sum() > 2 else 1.0
    span = (stats["ts"].iloc[-1] - stats["ts"].iloc[0]).total_seconds()
    seconds = max(1, math.ceil(gap - 0.05), math.ceil(span / _CHART_POINTS))  # 2.01 s scrapes: 2 s slices
    slice_of = stats["ts"].dt.floor(f"{seconds}s")
    grid = pd.date_range(slice_of.iloc[0], slice_of.iloc[-1], freq=f"{seconds}s")
    slices = stats.groupby(slice_of)
    # A second with no response has no row: between the first and the last response, a slice without
    # one had none (0/s); outside, unknown.
    answered = slice_of[stats["requests_ok"].notna() | stats["requests_failed"].notna()]
    requests = slices[list(REQUEST_FIELDS)].sum().reindex(grid).fillna(0.0) / seconds
    if answered.empty:
        requests[:] = np.nan
    else:
        requests[(grid < answered.min()) | (grid > answered.max())] = np.nan
    ok = stats["requests_ok"].where(stats["request_latency_s"].notna())
    latency = ((stats["request_latency_s"] * ok).groupby(slice_of).sum(min_count=1)
               / ok.groupby(slice_of).sum(min_count=1)).reindex(grid)
    metrics = slices[["ttft_s", "ttft_p99_s", "itl_s", "itl_p99_s", "frontend_inflight",
                      "frontend_queued"]].mean().reindex(grid)
    # Scrapes drift across the slices' edges: a slice no scrape fell in is drawn between its neighbours
    # (a scrape with no latency, no request having ended in its interval, stays a gap).
    scraped = scrape.groupby(slice_of).any().reindex(grid, fill_value=False)
    metrics = metrics.where(scraped, (metrics.shift(1) + metrics.shift(-1)) / 2, axis=0)
    columns = {"requests_ok_per_s": requests["requests_ok"], "requests_failed_per_s": requests["requests_failed"],
               "latency_s": latency, **{c: metrics[c] for c in metrics.columns}}
    return {"ts": [_iso(t) for t in grid],
            **{key: [_num(v, 6) for v in columns[key].tolist()] for key in FRONTEND_SERIES}}


def _iso(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _num(value: Any, digits: int = 3) -> float | None:
    """A number for the JSON: rounded (latencies in seconds keep 6 digits: an ITL is a few ms), None if unknown."""
    if value is None:
        return None
    value = float(value)
    return round(value, digits) if math.isfinite(value) else None
