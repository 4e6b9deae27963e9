"""The snapshot's rows, built from the store and memoised per store generation.

``SnapshotBuilder`` turns the store (and the rule engine's findings) into the immutable rows of
``snapshot``: each endpoint's latest engines, its recent history, its whole-run series and
start-up facts for the detail view, the findings with their quoted lines, and the headline.
What depends on the store alone is computed once per ``generation`` (the session bumps it
whenever the store changes), so a tick with nothing new recomputes nothing.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import datetime
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd

from pdwatch.model.store import Store
from pdwatch.model.throughput import COUNTED
from pdwatch.parsers import Event
from pdwatch.rules import Finding

from . import triage
from .snapshot import (EndpointDetail, EndpointRow, EndpointSeries, EngineRow, Evidence, FindingRow, Headline,
                       StartupFacts)

STALE_INTERVALS = 3  # an endpoint silent for more than 3 stats intervals is stale
DEFAULT_INTERVAL_S = 10.0
HISTORY_POINTS = 40


class SnapshotBuilder:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.generation = 0  # bumped by the session whenever the store changes
        self._derived: dict[tuple, Any] = {}
        self._args_by_source: dict[str, dict[str, Any]] = {}  # the non-default args line of each file
        self._graph_gib: dict[tuple[str, int | None], float] = {}  # measured CUDA-graph pool per engine
        self.rule_fields: dict[str, tuple[str, ...]] = {}  # each rule's stats fields (its evidence's highlights)

    def reset(self, store: Store) -> None:
        """A rebuilt store (a backwards seek): nothing derived from the old one is kept."""
        self.store = store
        self.generation += 1
        self._args_by_source.clear()
        self._graph_gib.clear()

    def note(self, events: Iterable[Event]) -> None:
        """Events just added to the store: keep the start-up values it keeps only as text."""
        self.generation += 1
        for e in events:
            if e.kind == "args" and isinstance(e.values.get("args"), dict):
                self._args_by_source[e.source] = e.values["args"]
            elif e.kind == "cudagraph_memory" and e.values.get("actual_gib") is not None:
                self._graph_gib[(e.source, e.engine)] = float(e.values["actual_gib"])

    def endpoint_rows(self, clock: pd.Timestamp | None) -> tuple[EndpointRow, ...]:
        return tuple(self._endpoint_row(ep, clock) for ep in self.store.endpoints())

    def finding_rows(self, findings: Iterable[Finding]) -> tuple[FindingRow, ...]:
        return tuple(self._finding_row(f) for f in findings)

    def triage(self, findings: tuple[FindingRow, ...], clock: pd.Timestamp | None) -> tuple:
        """The verdict and the groups of the findings firing now (once per store generation and set of findings)."""
        key = ("triage", tuple((f.key, f.severity, f.end) for f in findings))
        return self._memo(key, lambda: triage.assess(self.store, findings, clock))

    def _memo(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per store generation (a tick with nothing new recomputes nothing)."""
        full = (self.generation, *key)
        if full not in self._derived:
            if self._derived and next(iter(self._derived))[0] != self.generation:
                self._derived.clear()
            self._derived[full] = compute()
        return self._derived[full]

    def _endpoint_row(self, ep: Any, clock: pd.Timestamp | None) -> EndpointRow:
        row: EndpointRow = self._memo(("row", ep.name), lambda: self._endpoint_row_of_store(ep))
        stale = None
        last_seen = self.store.last_seen(ep.name)
        if clock is not None and last_seen is not None and row.engine_rows:
            silent = (clock - last_seen).total_seconds()
            if silent > STALE_INTERVALS * row.interval_s:
                stale = silent
        return row if stale is None else replace(row, stale_for_s=stale)

    def _endpoint_row_of_store(self, ep: Any) -> EndpointRow:
        stats = self.store.stats(ep.name)
        interval = float(ep.facts.get("stats_interval_s") or DEFAULT_INTERVAL_S)
        last_seen = self.store.last_seen(ep.name)
        engines: list[EngineRow] = []
        history: tuple[float, ...] = ()
        if not stats.empty:
            engines = latest_engine_rows(stats, interval)
            history = counted_history(stats, ep.role, interval, complete_only=True)
        kv = [e.kv_usage_pct for e in engines if e.kv_usage_pct is not None]
        return EndpointRow(
            name=ep.name, role=ep.role, engines=tuple(sorted(ep.engines)), gpus=ep.gpus,
            prompt_tps=_sum(e.prompt_tps for e in engines), gen_tps=_sum(e.gen_tps for e in engines),
            running=_sum(e.running for e in engines), waiting=_sum(e.waiting for e in engines),
            kv_usage_pct=sum(kv) / len(kv) if kv else None,
            last_seen=to_datetime(last_seen), stale_for_s=None,
            interval_s=interval, history=history, engine_rows=tuple(engines), sources=tuple(ep.sources),
            stats_silence=ep.stats_silence, frontend=_frontend_figures(stats) if ep.role == "frontend" else ())

    def _finding_row(self, f: Finding) -> FindingRow:
        fields = self.rule_fields.get(f.rule, ())
        evidence = []
        for q in f.evidence:
            quoted = self.store.quote(q)
            marks = tuple(triage.evidence_marks(quoted["text"] or "", fields)) if q.get("kind") == "stats" else ()
            evidence.append(Evidence(**quoted, marks=marks))
        evidence = tuple(evidence)
        return FindingRow(f.rule, f.severity, f.endpoint, tuple(f.engines), f.start, f.end, f.summary,
                          f.explanation, f.recommendation, evidence, f.summary_at_start, tuple(f.engines_at_start))

    def endpoint_detail(self, name: str, clock: pd.Timestamp | None, max_lines: int = 40) -> EndpointDetail | None:
        """The endpoint's series over the run so far, its start-up facts and its newest lines
        (None when the store does not know it, e.g. after a rewind to before its first line)."""
        ep = self.store.model.endpoints.get(name)
        if ep is None or name not in {e.name for e in self.store.endpoints()}:
            return None
        row = self._endpoint_row(ep, clock)
        series = self._memo(("series", name), lambda: _series(self.store.stats(name), row.interval_s))
        startup = self._memo(("startup", name), lambda: self._startup(ep))
        lines = self._memo(("lines", name, max_lines), lambda: self._recent_lines(name, max_lines))
        return EndpointDetail(row, series, startup, lines)

    def _startup(self, ep: Any) -> StartupFacts:
        facts = ep.facts
        args: dict[str, Any] = {}
        for source in ep.sources:  # an endpoint spanning several nodes: one args line per file
            args.update(self._args_by_source.get(source, {}))
        graphs = [gib for (source, _), gib in self._graph_gib.items() if source in ep.sources]
        graph = max(graphs) if graphs else facts.get("cudagraph_estimate_gib")
        return StartupFacts(
            version=_text_or_none(facts.get("version")), model=_text_or_none(facts.get("model") or args.get("model")),
            weights_gib=as_float(facts.get("weights_gib")), kv_memory_gib=as_float(facts.get("kv_memory_gib")),
            cudagraph_gib=as_float(graph), cudagraph_measured=bool(graphs),
            kv_capacity_tokens=_int_or_none(facts.get("kv_capacity_tokens")),
            max_concurrency=as_float(facts.get("max_concurrency")),
            max_concurrency_tokens=_int_or_none(facts.get("max_concurrency_tokens")),
            capture_sizes=tuple(int(x) for x in facts.get("capture_sizes") or () if isinstance(x, (int, float))),
            max_capture_size=_int_or_none(facts.get("max_capture_size")),
            non_default_args=tuple((str(k), _arg_text(v)) for k, v in args.items()))

    def _recent_lines(self, name: str, max_lines: int) -> tuple[Evidence, ...]:
        columns = ["ts", "source", "line_no", "text"]
        frames = [f[columns].iloc[-max_lines:] for f in (self.store.stats(name), self.store.events(name)) if not f.empty]
        if not frames:
            return ()
        merged = pd.concat(frames, ignore_index=True).sort_values(["ts", "source", "line_no"], kind="stable")
        return tuple(Evidence(str(r.source), int(r.line_no), str(r.text))
                     for r in merged.iloc[-max_lines:].itertuples(index=False))



def latest_engine_rows(stats: pd.DataFrame, interval: float) -> list[EngineRow]:
    """Each engine's latest stats line, engines that stopped printing left out. Only the
    frame's tail since the stale horizon can hold them (it is sorted by time): numpy on that
    tail, not a groupby of the whole run on every tick."""
    stamps = stats["ts"]
    # A measured interval (between /metrics scrapes) has nanoseconds; the frame may be in
    # microseconds and pandas' searchsorted refuses to round. Rounded up, so "ts >= horizon" holds as before.
    unit = stamps.dt.unit
    horizon = (stamps.iloc[-1] - pd.Timedelta(seconds=STALE_INTERVALS * interval)).ceil(unit).as_unit(unit)
    tail = stats.iloc[int(stamps.searchsorted(horizon, side="left")):]
    engines = tail["engine"].to_numpy()
    ids, from_end = np.unique(engines[::-1], return_index=True)
    rows = len(engines) - 1 - from_end
    columns = {name: tail[name].to_numpy() for name in ("prompt_tps", "gen_tps", "running", "waiting", "kv_usage_pct")}
    stamps = tail["ts"]
    return [EngineRow(int(engine), *(as_float(columns[name][i]) for name in columns), to_datetime(stamps.iloc[i]))
            for engine, i in zip(ids.tolist(), rows.tolist())]


def counted_history(stats: pd.DataFrame, role: str, interval: float, complete_only: bool = False) -> tuple[float, ...]:
    """Counted tokens/s per stats interval, engines summed (each engine's last value in the
    interval), the last HISTORY_POINTS intervals. In numpy: it runs for every endpoint that
    got a line, on every tick. ``complete_only`` (the dashboard's sparkline): the newest interval
    only once as many engines reported in it as in the one before."""
    fields = list(COUNTED.get(role, ("prompt_tps", "gen_tps")))
    recent = stats.iloc[-(HISTORY_POINTS * 16):]
    step = max(round(interval), 1) * 1_000_000_000
    stamps = recent["ts"].dt.tz_convert(None).to_numpy().astype("datetime64[ns]").astype(np.int64)
    buckets = stamps // step * step
    values = recent[fields].to_numpy(dtype=np.float64)
    known = ~np.isnan(values)
    counted = np.where(known.any(axis=1), np.where(known, values, 0.0).sum(axis=1), np.nan)
    engines = recent["engine"].to_numpy()
    every_bucket = np.unique(buckets)
    totals = np.zeros(len(every_bucket))
    ok = ~np.isnan(counted)
    if ok.any():
        b, e, c = buckets[ok], engines[ok], counted[ok]
        order = np.lexsort((np.arange(len(b)), e, b))  # by bucket, engine, then arrival
        b, e, c = b[order], e[order], c[order]
        last = np.ones(len(b), dtype=bool)
        last[:-1] = (b[1:] != b[:-1]) | (e[1:] != e[:-1])  # the last line of each (bucket, engine)
        np.add.at(totals, np.searchsorted(every_bucket, b[last]), c[last])
        # The live edge: a bucket is drawn once every engine has reported in it (engines print a
        # few ms apart; the newest bucket with half of them would dip, then recover).
        reported = np.zeros(len(every_bucket), dtype=np.int64)
        np.add.at(reported, np.searchsorted(every_bucket, b[last]), 1)
        if complete_only and len(reported) > 1 and reported[-1] < reported[-2]:
            totals = totals[:-1]
    return tuple(float(v) for v in totals[-HISTORY_POINTS:])


_SERIES_POINTS = 2000  # a terminal chart is at most a few hundred cells wide


def _series(stats: pd.DataFrame, interval: float) -> EndpointSeries:
    """Engines combined per stats interval over the whole frame, in at most ~_SERIES_POINTS buckets."""
    if stats.empty:
        return EndpointSeries()
    span = (stats["ts"].iloc[-1] - stats["ts"].iloc[0]).total_seconds()
    seconds = max(round(interval), 1, math.ceil(span / _SERIES_POINTS))
    keyed = stats.assign(bucket=stats["ts"].dt.floor(f"{seconds}s"))
    last = keyed.groupby(["bucket", "engine"])[["prompt_tps", "gen_tps", "running", "waiting", "kv_usage_pct"]].last()
    per = last.groupby(level="bucket")
    summed = per[["prompt_tps", "gen_tps", "running", "waiting"]].sum(min_count=1)
    kv = per["kv_usage_pct"].mean()

    def column(values: pd.Series) -> tuple[float, ...]:
        return tuple(0.0 if v != v else float(v) for v in values.tolist())

    return EndpointSeries(
        times=tuple(to_datetime(t) for t in summed.index), prompt_tps=column(summed["prompt_tps"]),
        gen_tps=column(summed["gen_tps"]), running=column(summed["running"]), waiting=column(summed["waiting"]),
        kv_usage_pct=column(kv))


def _arg_text(value: Any) -> str:
    if isinstance(value, (dict, list, tuple)):
        try:
            return json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _int_or_none(value: Any) -> int | None:
    v = as_float(value)
    return None if v is None else int(v)


def headline(rows: tuple[EndpointRow, ...]) -> Headline:
    serving = [r for r in rows if r.role in COUNTED]
    if not serving or all(r.counted_tps is None for r in serving):
        gpus = [r.gpus for r in serving]
        return Headline(None, None, None, None, sum(gpus) if gpus and all(gpus) else None)  # type: ignore[arg-type]
    prompt = gen = 0.0
    for r in serving:
        fields = COUNTED[r.role]
        prompt += (r.prompt_tps or 0.0) if "prompt_tps" in fields and r.stale_for_s is None else 0.0
        gen += (r.gen_tps or 0.0) if "gen_tps" in fields and r.stale_for_s is None else 0.0
    gpus_list = [r.gpus for r in serving]
    gpus = sum(g for g in gpus_list if g) if all(gpus_list) else None
    total = prompt + gen
    return Headline(total, prompt, gen, total / gpus if gpus else None, gpus)


def as_float(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return None if v != v else v


_FRONTEND_FIELDS = ("ttft_s", "itl_s", "frontend_inflight", "frontend_queued", "request_rate")


def _frontend_figures(stats: pd.DataFrame) -> tuple[tuple[str, float], ...]:
    """The newest value of each Dynamo frontend field in the last few rows (a latency needs a
    request to have ended in the scrape interval, so the newest row may lack one)."""
    if stats.empty:
        return ()
    tail = stats.tail(5)
    out = []
    for name in _FRONTEND_FIELDS:
        if name in tail.columns:
            values = tail[name].dropna()
            if len(values):
                out.append((name, float(values.iloc[-1])))
    return tuple(out)


def _sum(values: Any) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) if vals else None


def to_datetime(value: pd.Timestamp | None) -> datetime | None:
    return None if value is None else pd.Timestamp(value).floor("us").to_pydatetime()

