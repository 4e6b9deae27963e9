"""The snapshot's rows, built from the store and memoised.

``SnapshotBuilder`` turns the store (and the rule engine's findings) into the immutable rows of
``snapshot``: each endpoint's latest engines, its recent history, its whole-run series and
start-up facts for the detail view, the findings with their quoted lines, and the headline.
What one endpoint's rows make (its row, series, figures) is computed once per change of those
rows (``Store.version``); the rest once per ``generation`` (the session bumps it whenever the
store changes). A tick with nothing new recomputes nothing; a line recomputes its endpoint's.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import datetime
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd

from pdwatch.diagnosis import Diagnosis, diagnose
from pdwatch.model.kept import KeptWhile
from pdwatch.model.retention import stamps_ns
from pdwatch.model.store import Store
from pdwatch.model.throughput import COUNTED
from pdwatch.parsers import Event
from pdwatch.parsers.stats_marks import value_marks
from pdwatch.rules import Finding

from .snapshot import (EndpointDetail, EndpointRow, EndpointSeries, EngineRow, Evidence, FindingRow,
                       FrontendSummary, Headline, StartupFacts)

STALE_INTERVALS = 3  # an endpoint silent for more than 3 stats intervals is stale
DEFAULT_INTERVAL_S = 10.0
HISTORY_POINTS = 40
LIVE_INTERVALS = 1  # the dashboard's verdict: each endpoint's newest stats interval, as its pane
FRONTEND_WINDOW_S = 60.0  # the frontend strip's figures: the last minute, the requests_failing rule's window


class SnapshotBuilder:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.generation = 0  # bumped by the session whenever the store changes
        self._derived: dict[tuple, Any] = {}
        # What one endpoint's rows alone make (its pane's row, its charts' series), kept per endpoint
        # until its rows change (``Store.version``): on a big job a new line changes one endpoint of 72.
        self._per_endpoint = KeptWhile()
        self._figures = KeptWhile()  # the verdict's figures, per endpoint and window
        self._args_by_source: dict[str, dict[str, Any]] = {}  # the non-default args line of each file
        self._graph_gib: dict[tuple[str, int | None], float] = {}  # measured CUDA-graph pool per engine
        self.rule_fields: dict[str, tuple[str, ...]] = {}  # each rule's stats fields (its evidence's highlights)
        # each frontend's summary, for one version of its rows and one second of the clock (an idle
        # watch's clock moves on every tick: a second's figures are computed once)
        self._frontends = KeptWhile()

    def reset(self, store: Store) -> None:
        """A rebuilt store (a backwards seek): nothing derived from the old one is kept."""
        self.store = store
        self.generation += 1
        for kept in (self._per_endpoint, self._figures, self._frontends):
            kept.clear()  # a new store counts its versions from 0 again
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

    def diagnosis(self, findings: tuple[FindingRow, ...], clock: pd.Timestamp | None) -> Diagnosis:
        """The diagnosis of the findings firing now (once per store generation and set of findings).
        Its numbers are the newest stats interval's, what the panes show at the clock (a verdict
        that averaged the last six lagged the panes by six intervals, both ways)."""
        key = ("diagnosis", tuple((f.key, f.severity, f.end) for f in findings))
        return self._memo(key, lambda: diagnose(self.store, findings, clock, intervals=LIVE_INTERVALS,
                                                memo=self._figures))

    def _memo(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per store generation (a tick with nothing new recomputes nothing)."""
        full = (self.generation, *key)
        if full not in self._derived:
            if self._derived and next(iter(self._derived))[0] != self.generation:
                self._derived.clear()
            self._derived[full] = compute()
        return self._derived[full]

    def _of_endpoint(self, key: tuple, name: str, token: tuple, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per change of endpoint ``name``'s rows and of ``token`` (what else it reads)."""
        return self._per_endpoint.get(key, (self.store.version(name), token), compute)

    def _endpoint_row(self, ep: Any, clock: pd.Timestamp | None) -> EndpointRow:
        last_seen = self.store.last_seen(ep.name)
        # Besides its rows, a pane's row reads these of the endpoint (learned from any line of its).
        token = (ep.role, tuple(sorted(ep.engines)), ep.gpus, tuple(ep.sources), ep.stats_silence,
                 ep.facts.get("stats_interval_s"), ep.facts.get("kv_device"), last_seen)
        row: EndpointRow = self._of_endpoint(("row", ep.name), ep.name, token, lambda: self._endpoint_row_of_store(ep))
        stale = None
        if clock is not None and last_seen is not None and row.engine_rows:
            silent = (clock - last_seen).total_seconds()
            if silent > STALE_INTERVALS * row.interval_s:
                stale = silent
        summary = self._frontend_summary(ep.name, clock) if ep.role == "frontend" else None
        if stale is None and summary is None:
            return row
        return replace(row, stale_for_s=stale, frontend_summary=summary)

    def _frontend_summary(self, name: str, clock: pd.Timestamp | None) -> FrontendSummary | None:
        token = (self.store.version(name), None if clock is None else clock.floor("s"))
        return self._frontends.get(name, token, lambda: frontend_summary(self.store.stats(name),
                                                                         self.store.events(name), clock))

    def _endpoint_row_of_store(self, ep: Any) -> EndpointRow:
        stats = self.store.stats(ep.name)
        interval = float(ep.facts.get("stats_interval_s") or DEFAULT_INTERVAL_S)
        last_seen = self.store.last_seen(ep.name)
        engines: list[EngineRow] = []
        history: tuple[float, ...] = ()
        if not stats.empty:
            engines = latest_engine_rows(stats, interval)
            if ep.role != "frontend":  # a frontend's rows are requests and latencies, not tokens
                history = counted_history(stats, ep.role, interval, complete_only=True)
        kv = [e.kv_usage_pct for e in engines if e.kv_usage_pct is not None]
        return EndpointRow(
            name=ep.name, role=ep.role, engines=tuple(sorted(ep.engines)), gpus=ep.gpus,
            prompt_tps=_sum(e.prompt_tps for e in engines), gen_tps=_sum(e.gen_tps for e in engines),
            running=_sum(e.running for e in engines), waiting=_sum(e.waiting for e in engines),
            kv_usage_pct=sum(kv) / len(kv) if kv else None,
            last_seen=to_datetime(last_seen), stale_for_s=None,
            interval_s=interval, history=history, engine_rows=tuple(engines), sources=tuple(ep.sources),
            stats_silence=ep.stats_silence, frontend=_frontend_figures(stats) if ep.role == "frontend" else (),
            device=str(ep.facts.get("kv_device") or "").upper() or None)

    def _finding_row(self, f: Finding) -> FindingRow:
        fields = self.rule_fields.get(f.rule, ())
        evidence = []
        for q in f.evidence:
            quoted = self.store.quote(q)
            marks = tuple(value_marks(quoted["text"] or "", fields)) if q.get("kind") == "stats" else ()
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
        series = self._of_endpoint(("series", name), name, (row.interval_s,),
                                   lambda: _series(self.store.history(name), row.interval_s))
        startup = self._memo(("startup", name), lambda: self._startup(ep))  # facts and start-up lines: any note
        lines = self._of_endpoint(("lines", name, max_lines), name, (), lambda: self._recent_lines(name, max_lines))
        return EndpointDetail(row, series, startup, lines)

    def endpoint_series(self, name: str) -> EndpointSeries | None:
        """The endpoint's whole-run series alone (the dashboard's charts, for several endpoints per
        tick): computed once per change of its rows, shared with ``endpoint_detail``."""
        ep = self.store.model.endpoints.get(name)
        if ep is None or name not in {e.name for e in self.store.endpoints()}:
            return None
        interval = float(ep.facts.get("stats_interval_s") or DEFAULT_INTERVAL_S)
        return self._of_endpoint(("series", name), name, (interval,), lambda: _series(self.store.history(name), interval))

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
        # A stats line's text is read back from its file (None in the frame: ``Store.line_text``).
        return tuple(Evidence(str(r.source), int(r.line_no),
                              r.text if isinstance(r.text, str) else self.store.line_text(str(r.source), int(r.line_no)) or "")
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
    stamps = stamps_ns(recent["ts"])
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

    ttft_times, ttft = _known(keyed, "ttft_s")
    latency_times, latency = _known(keyed, "request_latency_s")
    return EndpointSeries(
        times=tuple(to_datetime(t) for t in summed.index), prompt_tps=column(summed["prompt_tps"]),
        gen_tps=column(summed["gen_tps"]), running=column(summed["running"]), waiting=column(summed["waiting"]),
        kv_usage_pct=column(kv), ttft_times=ttft_times, ttft_s=ttft, latency_times=latency_times, latency_s=latency)


def _known(keyed: pd.DataFrame, field: str) -> tuple[tuple[datetime, ...], tuple[float, ...]]:
    """A column's mean per bucket, over the buckets where it is known (none: empty)."""
    if field not in keyed.columns or not keyed[field].notna().any():
        return (), ()
    means = keyed.groupby("bucket")[field].mean().dropna()
    return tuple(to_datetime(t) for t in means.index), tuple(float(v) for v in means.tolist())


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
    # vLLM's CPU backend on every serving endpoint: tokens/s per worker, as the report's headline
    # (pdwatch.model.throughput.headline), never a GPU count
    on_cpu = bool(serving) and all(r.device == "CPU" for r in serving)
    if not serving or all(r.counted_tps is None for r in serving):
        if on_cpu:
            return Headline(None, None, None, None, None, "CPU", len(serving), None)
        gpus = [r.gpus for r in serving]
        return Headline(None, None, None, None, sum(gpus) if gpus and all(gpus) else None,  # type: ignore[arg-type]
                        workers=len(serving))
    prompt = gen = 0.0
    for r in serving:
        fields = COUNTED[r.role]
        prompt += (r.prompt_tps or 0.0) if "prompt_tps" in fields and r.stale_for_s is None else 0.0
        gen += (r.gen_tps or 0.0) if "gen_tps" in fields and r.stale_for_s is None else 0.0
    total = prompt + gen
    if on_cpu:
        return Headline(total, prompt, gen, None, None, "CPU", len(serving), total / len(serving))
    gpus_list = [r.gpus for r in serving]
    gpus = sum(g for g in gpus_list if g) if all(gpus_list) else None
    return Headline(total, prompt, gen, total / gpus if gpus else None, gpus, workers=len(serving))


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


_SCRAPED = ("ttft_s", "ttft_p99_s", "itl_s", "itl_p99_s", "frontend_inflight", "frontend_queued")


def frontend_summary(stats: pd.DataFrame, events: pd.DataFrame, clock: pd.Timestamp | None,
                     window_s: float = FRONTEND_WINDOW_S) -> FrontendSummary | None:
    """A frontend over the last ``window_s`` seconds up to ``clock`` (its newest row without one);
    None when it has neither request nor /metrics rows (nothing to summarise).

    Its request rows (one per second, stamped at the second's end) are summed; a window reaching
    back before its first second is cut there, so a frontend that just started is not diluted."""
    if stats.empty or not _any_known(stats, ("requests_ok", "requests_failed", *_SCRAPED)):
        return None
    end = clock if clock is not None else stats["ts"].iloc[-1]
    start = max(end - pd.Timedelta(seconds=window_s), stats["ts"].iloc[0] - pd.Timedelta(seconds=1))
    stamps = stats["ts"]
    unit = stamps.dt.unit  # searchsorted refuses a time finer than the column's; on its grid, floored says the same
    first, last = (int(stamps.searchsorted(t.floor(unit).as_unit(unit), side="right")) for t in (start, end))
    rows = stats.iloc[first:last]
    failed_lines = events[(events["ts"] > start) & (events["ts"] <= end)] if not events.empty else events

    def newest(field: str) -> float | None:
        known = rows[field].dropna()
        return float(known.iloc[-1]) if len(known) else None

    ok, failed, latency = rows["requests_ok"], rows["requests_failed"], rows["request_latency_s"]
    weights = ok.where(latency.notna(), 0.0).fillna(0.0)
    return FrontendSummary(
        window_s=max((end - start).total_seconds(), 1.0),
        requests_ok=int(ok.sum()), requests_failed=int(failed.sum()),
        statuses=_commonest(failed_lines, "request_failed"), error_types=_commonest(failed_lines, "request_error"),
        latency_s=float((latency.fillna(0.0) * weights).sum() / weights.sum()) if weights.sum() else None,
        scraped=_any_known(stats, _SCRAPED),
        ttft_s=newest("ttft_s"), ttft_p99_s=newest("ttft_p99_s"), itl_s=newest("itl_s"),
        itl_p99_s=newest("itl_p99_s"), inflight=newest("frontend_inflight"), queued=newest("frontend_queued"))


def _any_known(stats: pd.DataFrame, fields: tuple[str, ...]) -> bool:
    """Whether a row has one of ``fields``: column by column, the first one known ends it (it runs
    on every tick of a replay, on a frame of a row a second)."""
    return any(not np.isnan(stats[f].to_numpy(dtype=np.float64)).all() for f in fields)


def _commonest(events: pd.DataFrame, kind: str) -> tuple[str, ...]:
    """The reasons of a kind's events (an HTTP status, an error type), commonest first."""
    if events.empty:
        return ()
    counts = events.loc[events["kind"] == kind, "reason"].dropna().astype(str).value_counts()
    return tuple(sorted(counts.index, key=lambda r: (-counts[r], r)))


def _sum(values: Any) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) if vals else None


def to_datetime(value: pd.Timestamp | None) -> datetime | None:
    return None if value is None else pd.Timestamp(value).floor("us").to_pydatetime()

