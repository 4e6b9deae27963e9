"""Each endpoint's load over a window of the run, measured on the store: the numbers a verdict says."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from pdwatch.model.kept import KeptWhile
from pdwatch.model.store import Store
from pdwatch.rules.verdict import EndpointFigures

WINDOW_INTERVALS = 6  # the verdict's numbers: each endpoint's last 6 stats intervals (the rules' usual window)


def figures(store: Store, until: Any = None, intervals: int = WINDOW_INTERVALS,
            since: Any = None, memo: KeptWhile | None = None) -> dict[str, EndpointFigures]:
    """Each endpoint's figures over its last ``intervals`` stats intervals up to ``until`` (default:
    its last line), or over (``since``, ``until``] when ``since`` is given: a finding's episode.
    ``memo`` keeps each endpoint's figures while its rows (``Store.version``) and window are the
    same: a dashboard asks on every refresh, for every endpoint, while a line changes one."""
    out = {}
    cut, start = _utc(until), _utc(since)
    for ep in store.endpoints():
        stats = store.stats(ep.name)
        at = len(stats)
        if cut is not None and not stats.empty:  # the frame is in time order: a bisection, not a scan
            stamps = stats["ts"]
            at = int(stamps.searchsorted(cut.as_unit(stamps.dt.unit) if hasattr(stamps, "dt") else cut, side="right"))

        def compute(ep: Any = ep, stats: pd.DataFrame = stats, at: int = at) -> EndpointFigures:
            stats = stats.iloc[:at]
            engines = len(ep.engines) or (stats["engine"].nunique() if not stats.empty else 0)
            return window_figures(ep.name, ep.role, max(engines, 1), stats,
                                  float(ep.facts.get("stats_interval_s") or 10.0), intervals, start)

        if memo is None:
            out[ep.name] = compute()
        else:  # the same rows up to the same line, the same endpoint: the same figures
            token = (store.version(ep.name), at, ep.role, len(ep.engines), ep.facts.get("stats_interval_s"))
            out[ep.name] = memo.get((ep.name, intervals, start), token, compute)
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
    step_s = max(round(interval_s), 1)
    fields = [f for f in FIGURE_FIELDS if f in tail]
    grouped = _last_per_bucket_and_engine(tail, fields, step_s)
    if grouped is None:  # not a store's frame (other dtypes, another zone): pandas, the general way
        keyed = tail.assign(bucket=tail["ts"].dt.floor(f"{step_s}s"))
        last = keyed.groupby(["bucket", "engine"])[fields].last()
        per_engine = {f: float(v) for f, v in last.mean().items()}  # the mean engine over the window
        kv_max = None
        if "kv_usage_pct" in last:
            per_bucket = last["kv_usage_pct"].groupby(level="bucket").mean().dropna()
            kv_max = float(per_bucket.max()) if len(per_bucket) else None
    else:
        buckets, last = grouped
        per_engine = {f: _mean_as_pandas(v) for f, v in last.items()}
        kv_max = None
        if "kv_usage_pct" in last:  # a few dozen values: pandas' own group mean, to its last digit
            per_bucket = pd.Series(last["kv_usage_pct"]).groupby(buckets).mean().dropna()
            kv_max = float(per_bucket.max()) if len(per_bucket) else None

    def num(key: str) -> float | None:
        v = per_engine.get(key)
        return None if v is None or math.isnan(v) else v

    return EndpointFigures(name, role, engines, True, num("prompt_tps"), num("gen_tps"), num("running"),
                           num("waiting"), num("kv_usage_pct"), kv_max)


FIGURE_FIELDS = ("prompt_tps", "gen_tps", "running", "waiting", "kv_usage_pct")


def _last_per_bucket_and_engine(tail: pd.DataFrame, fields: list[str],
                                step_s: int) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    """What ``groupby([ts floored to step_s, engine])[fields].last()`` gives, in numpy: each
    (bucket, engine) group's last non-missing value of each field, groups in sorted order (NaN
    where a group has none), and each group's bucket. A dashboard asks for it per endpoint on
    every refresh; pandas' groupby cost ~3 ms a call. None when the frame is not a store's (a
    UTC ``ts``, integer engines, float fields): the caller then asks pandas."""
    ts = tail["ts"]
    if (str(getattr(ts.dtype, "tz", None)) != "UTC" or tail["engine"].dtype.kind not in "iu"
            or any(tail[f].dtype != np.float64 for f in fields)):
        return None
    ns = ts.dt.tz_convert(None).to_numpy().astype("datetime64[ns]").astype(np.int64)
    dated = ns != np.iinfo(np.int64).min  # groupby leaves out rows without a key
    step = step_s * 1_000_000_000
    bucket = np.floor_divide(ns[dated], step)
    engine = tail["engine"].to_numpy()[dated]
    keys = np.stack([bucket, engine])
    uniq, group = np.unique(keys, axis=1, return_inverse=True)  # sorted by bucket, then engine
    group = group.reshape(-1)
    n = uniq.shape[1]
    out: dict[str, np.ndarray] = {}
    for f in fields:
        values = tail[f].to_numpy()[dated]
        have = np.flatnonzero(~np.isnan(values))[::-1]  # newest first: a group's first is its last row
        groups, newest = np.unique(group[have], return_index=True)
        column = np.full(n, np.nan)
        column[groups] = values[have[newest]]
        out[f] = column
    return uniq[0] * step, out


def _mean_as_pandas(values: np.ndarray) -> float:
    """``mean()`` of ``values`` (NaN skipped) as pandas takes it of a groupby's result: missing ones
    as 0, summed in row order (that block is column-major, so pandas adds one row after another;
    numpy's pairwise ``sum`` differed in the last bit), so the figures are pandas' to the last digit."""
    missing = np.isnan(values)
    count = len(values) - int(np.count_nonzero(missing))
    return float(np.cumsum(np.where(missing, 0.0, values))[-1] / count) if count else math.nan


def _utc(when: Any) -> pd.Timestamp | None:
    if when is None:
        return None
    stamp = pd.Timestamp(when)
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp
