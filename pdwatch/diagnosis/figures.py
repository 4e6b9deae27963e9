"""Each endpoint's load over a window of the run, measured on the store: the numbers a verdict says."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from pdwatch.model.store import Store
from pdwatch.rules.verdict import EndpointFigures

WINDOW_INTERVALS = 6  # the verdict's numbers: each endpoint's last 6 stats intervals (the rules' usual window)


def figures(store: Store, until: Any = None, intervals: int = WINDOW_INTERVALS,
            since: Any = None) -> dict[str, EndpointFigures]:
    """Each endpoint's figures over its last ``intervals`` stats intervals up to ``until`` (default:
    its last line), or over (``since``, ``until``] when ``since`` is given: a finding's episode."""
    out = {}
    cut, start = _utc(until), _utc(since)
    for ep in store.endpoints():
        stats = store.stats(ep.name)
        if cut is not None and not stats.empty:  # the frame is in time order: a bisection, not a scan
            stamps = stats["ts"]
            at = int(stamps.searchsorted(cut.as_unit(stamps.dt.unit) if hasattr(stamps, "dt") else cut, side="right"))
            stats = stats.iloc[:at]
        engines = len(ep.engines) or (stats["engine"].nunique() if not stats.empty else 0)
        out[ep.name] = window_figures(ep.name, ep.role, max(engines, 1), stats,
                                      float(ep.facts.get("stats_interval_s") or 10.0), intervals, start)
    return out


def window_figures(name: str, role: str, engines: int, stats: pd.DataFrame, interval_s: float,
                   intervals: int = WINDOW_INTERVALS, start: pd.Timestamp | None = None) -> EndpointFigures:
    if stats.empty or "ts" not in stats:
        return EndpointFigures(name, role, engines, False)
    stamps = stats["ts"]
    end = stamps.iloc[-1]
    since = (end - pd.Timedelta(seconds=intervals * max(interval_s, 0.1))).as_unit(stamps.dt.unit)
    if start is not None:  # an episode: from its start, at least the usual window
        since = min(since, start.as_unit(stamps.dt.unit) - pd.Timedelta(seconds=max(interval_s, 0.1)))
    # In nanoseconds both: an episode's start (a scrape's time, to the microsecond) less a measured interval
    # is finer than a frame of whole-second log lines, which pandas will not round to bisect.
    tail = stats.iloc[int(stamps.dt.as_unit("ns").searchsorted(since.as_unit("ns"), side="right")):]
    step = f"{max(round(interval_s), 1)}s"
    keyed = tail.assign(bucket=tail["ts"].dt.floor(step))
    fields = [f for f in ("prompt_tps", "gen_tps", "running", "waiting", "kv_usage_pct") if f in keyed]
    last = keyed.groupby(["bucket", "engine"])[fields].last()
    per_engine = last.mean()  # the mean engine over the window

    def num(key: str) -> float | None:
        if key not in per_engine:
            return None
        v = float(per_engine[key])
        return None if math.isnan(v) else v

    kv_max = None
    if "kv_usage_pct" in last:
        per_bucket = last["kv_usage_pct"].groupby(level="bucket").mean().dropna()
        kv_max = float(per_bucket.max()) if len(per_bucket) else None
    return EndpointFigures(name, role, engines, True, num("prompt_tps"), num("gen_tps"), num("running"),
                           num("waiting"), num("kv_usage_pct"), kv_max)


def _utc(when: Any) -> pd.Timestamp | None:
    if when is None:
        return None
    stamp = pd.Timestamp(when)
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp
