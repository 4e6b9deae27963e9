"""How much a long ``watch`` keeps at full resolution, and the per-minute rows older ones become (issue 34).

A watch left on a job for a week would otherwise keep every stats line and KV-transfer line it
read. The rules read back at most their widest window plus their ``for:`` hold (the builtin
rules: 1 h), so each engine keeps its rows of that span, counted back from its own newest row
(an engine that went silent keeps its last rows: "no progress since" still reads them), and a
margin. Older stats rows become one row per engine and minute, which the dashboard's charts and
an exported report still show; older KV-transfer and spec-decode lines (a line per stats
interval each) are counted, unless a rule counts them over the whole run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pandas as pd

from pdwatch.rules.model import STATS_FIELDS

MINIMUM_KEPT_S = 3600.0  # at least an hour at full resolution, whatever the rules read
MARGIN_S = 600.0  # kept beyond the rules' reach; also how often the old rows are folded (amortised)
MINUTE_NS = 60 * 1_000_000_000

# How a minute's rows become one: counts add up, worst percentiles stay the worst, latency is
# weighted by the requests it describes, everything else (rates, gauges) is averaged.
SUMMED = ("preemptions", "requests_ok", "requests_failed")
HIGHEST = ("ttft_p99_s", "itl_p99_s")
AVERAGED = tuple(f for f in STATS_FIELDS if f not in (*SUMMED, *HIGHEST, "request_latency_s"))
# Event kinds a log writes on every stats interval: the ones a long watch may stop keeping.
FREQUENT_EVENT_KINDS = frozenset({"kv_transfer", "spec_decode"})


@dataclass(frozen=True)
class Retention:
    """What a watch keeps: ``seconds`` of rows at full resolution (or ``samples`` stats intervals,
    if longer), counted back from each engine's newest row; frequent events of ``retired_kinds``
    older than that are counted, not kept."""

    seconds: float
    samples: int = 0
    retired_kinds: frozenset[str] = FREQUENT_EVENT_KINDS

    @classmethod
    def for_rules(cls, rules: Iterable, setting: float | None = None) -> "Retention":
        """The rules' reach plus the margin, at least ``MINIMUM_KEPT_S``; ``setting`` (seconds,
        ``watch --keep-full``) overrides the span but never goes below what the rules read."""
        reaches = [rule.reach() for rule in rules if getattr(rule, "enabled", True)]
        reach_s = max((r.seconds for r in reaches), default=0.0)
        samples = max((r.samples for r in reaches), default=0)
        counted = frozenset(k for r in reaches for k in r.so_far_kinds)
        seconds = max(reach_s + MARGIN_S, MINIMUM_KEPT_S if setting is None else setting)
        return cls(seconds, samples, FREQUENT_EVENT_KINDS - counted)

    def kept_s(self, interval_s: float | None) -> float:
        return max(self.seconds, (self.samples + 3) * (interval_s or 0.0) + MARGIN_S)


def stamps_ns(ts: pd.Series) -> np.ndarray:
    """A frame's tz-aware ``ts`` column as int64 nanoseconds since the epoch (UTC)."""
    return ts.dt.tz_convert(None).to_numpy().astype("datetime64[ns]").astype(np.int64)


def older_than_kept(ts: np.ndarray, groups: np.ndarray, kept_ns: int) -> np.ndarray:
    """Rows more than ``kept_ns`` older than the newest row of their group (an engine), cut at a
    minute's start: a minute is folded whole, once."""
    if not len(ts):
        return np.zeros(0, dtype=bool)
    ids, inverse = np.unique(groups, return_inverse=True)
    newest = np.full(len(ids), np.iinfo(np.int64).min)
    np.maximum.at(newest, inverse, ts)
    cut = (newest - kept_ns) // MINUTE_NS * MINUTE_NS
    return ts < cut[inverse]


def per_minute(rows: pd.DataFrame) -> pd.DataFrame:
    """Stats rows -> one row per engine and minute: the minute's first time (a run's start stays
    exact), its ``lines``, the fields folded as ``SUMMED`` / ``HIGHEST`` / ``AVERAGED`` say
    (latency weighted by requests).
    Rows that are already minutes (a ``lines`` column) fold with their weight."""
    if rows.empty:
        return empty_minutes()
    lines = rows["lines"].to_numpy(dtype=np.float64) if "lines" in rows.columns else np.ones(len(rows))
    key = pd.DataFrame({"minute": stamps_ns(rows["ts"]) // MINUTE_NS, "engine": rows["engine"].to_numpy()})
    grouped = pd.concat([key, rows.reindex(columns=list(STATS_FIELDS)).reset_index(drop=True)], axis=1)
    weights = pd.DataFrame({f: np.where(np.isnan(grouped[f].to_numpy(dtype=np.float64)), 0.0, lines)
                            for f in AVERAGED})
    weighted = pd.DataFrame({f: grouped[f].to_numpy(dtype=np.float64) * weights[f].to_numpy() for f in AVERAGED})
    ok = grouped["requests_ok"].to_numpy(dtype=np.float64)
    latency = grouped["request_latency_s"].to_numpy(dtype=np.float64)
    has_latency = ~np.isnan(latency) & ~np.isnan(ok)
    by = [key["minute"], key["engine"]]
    sums = weighted.groupby(by).sum()
    weight = weights.groupby(by).sum()
    out = (sums / weight.where(weight > 0)).reset_index()  # a minute with no known value stays unknown
    out.columns = ["minute", "engine", *AVERAGED]
    counted = grouped.groupby(by)[list(SUMMED)].sum(min_count=1).reset_index(drop=True)
    highest = grouped.groupby(by)[list(HIGHEST)].max().reset_index(drop=True)
    lat = pd.DataFrame({"num": np.where(has_latency, latency * ok, 0.0), "den": np.where(has_latency, ok, 0.0)})
    lat = lat.groupby(by).sum().reset_index(drop=True)
    stamp = rows["ts"].reset_index(drop=True).groupby(by).min().reset_index(drop=True)
    count = pd.Series(lines).groupby(by).sum().reset_index(drop=True)
    frame = pd.DataFrame({"ts": stamp, "engine": out["engine"].to_numpy(dtype=np.int64)})
    for f in STATS_FIELDS:
        if f in AVERAGED:
            frame[f] = out[f].to_numpy()
        elif f in SUMMED:
            frame[f] = counted[f].to_numpy(dtype=np.float64)
        elif f in HIGHEST:
            frame[f] = highest[f].to_numpy(dtype=np.float64)
        else:  # request_latency_s
            frame[f] = np.where(lat["den"] > 0, lat["num"] / lat["den"].where(lat["den"] > 0), np.nan)
    frame["lines"] = count.to_numpy(dtype=np.int64)
    # A worker's rows have no frontend figures (and a frontend's no engine ones): about half the
    # fields are never known. Their columns are left out; ``Store.history`` puts them back.
    unknown = [f for f in STATS_FIELDS if frame[f].isna().all()]
    return frame.drop(columns=unknown).sort_values("ts", kind="stable", ignore_index=True)


def empty_minutes() -> pd.DataFrame:
    frame = pd.DataFrame({"ts": pd.to_datetime([], utc=True), "engine": np.zeros(0, dtype=np.int64)})
    for f in STATS_FIELDS:
        frame[f] = np.zeros(0)
    frame["lines"] = np.zeros(0, dtype=np.int64)
    return frame
