"""Per-endpoint time series (pandas), fed with events in batches, read as rule views.

Rows are buffered as plain tuples and turned into DataFrames only on ``flush`` (a tick
of the dashboard, the end of a replay): appending to a DataFrame per line would copy it
every time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median
from typing import Any, Iterable

import numpy as np
import pandas as pd

from parsers import Event
from pdwatch.capacity.log_facts import fold as learn_facts
from pdwatch.deployment import DeploymentModel, Endpoint
from rules.model import STATS_FIELDS, DeploymentView, EndpointView

_STATS_COLUMNS = ("ts", "engine", *STATS_FIELDS, "source", "line_no", "text")
_EVENT_COLUMNS = ("ts", "engine", "kind", "source", "line_no", "text", "reason")
# Problems and facts rules may quote; the chatty kinds (access lines, router choices) stay out.
_KEPT_EVENT_KINDS = {
    "preemption", "stats_disabled", "nixl_failure", "kv_expired", "kv_load_failure", "kv_cache_error",
    "oom", "engine_dead", "traceback", "shutdown", "spec_decode", "kv_transfer", "cudagraph_capture",
    "args", "engine_config", "version", "kv_cache_size", "max_concurrency", "kv_memory",
    "model_loading", "memory_profile", "cudagraph_memory", "block_size", "ssm_dtype", "ssm_conv_layout",
    "init_time", "role_hint",
}


@dataclass
class _Series:
    stats_rows: list[tuple] = field(default_factory=list)
    event_rows: list[tuple] = field(default_factory=list)
    stats: pd.DataFrame = field(default_factory=lambda: _empty(_STATS_COLUMNS))
    events: pd.DataFrame = field(default_factory=lambda: _empty(_EVENT_COLUMNS))
    last_ts: pd.Timestamp | None = None


def _empty(columns: Iterable[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object") for c in columns})


class Store:
    def __init__(self, model: DeploymentModel | None = None) -> None:
        self.model = model or DeploymentModel()
        self._series: dict[str, _Series] = {}
        self.deployment_facts: dict[str, Any] = {}
        self.raw_counts: dict[str, int] = {}
        self._line_memo: dict[tuple[str, int], str | None] = {}

    # --- writing ----------------------------------------------------------------------------

    def add(self, events: Iterable[Event]) -> None:
        for event in events:
            endpoint = self.model.observe(event)
            series = self._series.get(endpoint.name)
            if series is None:  # not setdefault: building a _Series makes two DataFrames
                series = self._series[endpoint.name] = _Series()
            self.raw_counts[event.kind] = self.raw_counts.get(event.kind, 0) + 1
            learn_facts(endpoint.facts, event)  # the rules' facts plus what capacity needs
            if event.ts is not None:
                series.last_ts = pd.Timestamp(event.ts)
            if event.kind == "stats":
                v = event.values
                series.stats_rows.append((
                    event.ts, 0 if event.engine is None else event.engine,  # no DP: one engine
                    *(_float(v.get(f)) for f in STATS_FIELDS), event.source, event.line_no, event.text))
            elif event.kind in _KEPT_EVENT_KINDS:
                series.event_rows.append((event.ts, event.engine, event.kind, event.source, event.line_no,
                                          event.text, event.values.get("reason")))

    def flush(self) -> None:
        for name, series in self._series.items():
            if series.stats_rows:
                frame = _stats_frame(series.stats_rows)
                series.stats = frame if series.stats.empty else pd.concat([series.stats, frame], ignore_index=True)
                series.stats = series.stats.sort_values("ts", kind="stable", ignore_index=True)
                series.stats_rows = []
                self._learn_interval(self.model.endpoints[name], series.stats)
            if series.event_rows:
                frame = _events_frame(series.event_rows)
                series.events = frame if series.events.empty else pd.concat([series.events, frame], ignore_index=True)
                series.event_rows = []

    # --- reading ----------------------------------------------------------------------------

    def endpoints(self) -> list[Endpoint]:
        return sorted(self.model.endpoints.values(), key=lambda e: (_ROLE_ORDER.get(e.role, 9), e.name))

    def stats(self, name: str) -> pd.DataFrame:
        return self._series[name].stats if name in self._series else _empty(_STATS_COLUMNS)

    def events(self, name: str) -> pd.DataFrame:
        return self._series[name].events if name in self._series else _empty(_EVENT_COLUMNS)

    def line_text(self, source: str, line_no: int) -> str | None:
        """The original text of a stats line (evidence quotes), memoised: the same few lines are
        asked for on every dashboard tick, and each lookup would otherwise filter a whole frame."""
        key = (source, line_no)
        if key not in self._line_memo:
            endpoint = self.model.endpoint_of(source)
            stats = self.stats(endpoint.name)
            hit = stats[(stats["source"] == source) & (stats["line_no"] == line_no)] if not stats.empty else stats
            self._line_memo[key] = str(hit["text"].iloc[-1]) if not hit.empty else None
        return self._line_memo[key]

    def last_seen(self, name: str) -> pd.Timestamp | None:
        series = self._series.get(name)
        return series.last_ts if series else None

    def view(self) -> DeploymentView:
        self.flush()
        views = []
        for ep in self.endpoints():
            engines = tuple(sorted(ep.engines)) or (0,)  # a server with no DP rank in sight is one engine
            views.append(EndpointView(ep.name, ep.role, engines, ep.gpus, dict(ep.facts),
                                      self.stats(ep.name), self.events(ep.name)))
        return DeploymentView(tuple(views), dict(self.deployment_facts))

    def time_range(self) -> tuple[pd.Timestamp, pd.Timestamp] | None:
        starts, ends = [], []
        for name in self._series:
            frame = self.stats(name)
            if not frame.empty:
                starts.append(frame["ts"].iloc[0])
                ends.append(frame["ts"].iloc[-1])
        return (min(starts), max(ends)) if starts else None

    @staticmethod
    def _learn_interval(endpoint: Endpoint, frame: pd.DataFrame) -> None:
        gaps: list[float] = []
        for _, group in frame.groupby("engine", sort=False):
            diffs = group["ts"].diff().dt.total_seconds().dropna()
            gaps.extend(d for d in diffs.tolist() if d > 0)
        if gaps:
            endpoint.facts["stats_interval_s"] = float(median(gaps))


_ROLE_ORDER = {"prefill": 0, "decode": 1, "aggregated": 2, "unknown": 3, "frontend": 4}


def _float(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else np.nan


def _stats_frame(rows: list[tuple]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(rows, columns=_STATS_COLUMNS)
    frame["ts"] = pd.to_datetime(frame["ts"], utc=True)
    frame["engine"] = frame["engine"].astype("int64")
    frame["line_no"] = frame["line_no"].astype("int64")
    for name in STATS_FIELDS:
        frame[name] = frame[name].astype("float64")
    frame["preemptions"] = frame["preemptions"].fillna(0.0)  # omitted when 0
    return frame.dropna(subset=["ts"])


def _events_frame(rows: list[tuple]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(rows, columns=_EVENT_COLUMNS)
    frame["ts"] = pd.to_datetime(frame["ts"], utc=True)
    frame["engine"] = frame["engine"].astype("Int64")
    frame["line_no"] = frame["line_no"].astype("int64")
    return frame
