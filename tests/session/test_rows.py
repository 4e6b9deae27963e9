"""The dashboard's per-tick numpy (latest engine rows, throughput history) against the plain pandas way."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd
import pytest

from pdwatch.session.rows import HISTORY_POINTS, STALE_INTERVALS, as_float, counted_history, latest_engine_rows
from pdwatch.model.throughput import COUNTED


def _frame(rng: random.Random, n: int, interval: float) -> pd.DataFrame:
    t0 = datetime(2026, 5, 29, 14, 0, tzinfo=timezone.utc)
    rows = []
    for i in range(n):
        engine = rng.randrange(6)
        if engine == 5 and i > n // 3:
            engine = 4  # engine 5 stops printing: it must drop out of the latest rows
        rows.append({"ts": t0 + timedelta(seconds=interval * (i // 5) + rng.random()), "engine": engine,
                     **{f: rng.choice([np.nan, 0.0, 3.5, 1000.0 * rng.random()])
                        for f in ("prompt_tps", "gen_tps", "running", "waiting", "kv_usage_pct")}})
    frame = pd.DataFrame(rows)
    frame["ts"] = pd.to_datetime(frame["ts"], utc=True)
    return frame.sort_values("ts", kind="stable", ignore_index=True)


def _history_pandas(stats: pd.DataFrame, role: str, interval: float) -> tuple[float, ...]:
    fields = list(COUNTED.get(role, ("prompt_tps", "gen_tps")))
    recent = stats.iloc[-(HISTORY_POINTS * 16):]
    freq = f"{max(round(interval), 1)}s"
    keyed = recent.assign(bucket=recent["ts"].dt.floor(freq), counted=recent[fields].sum(axis=1, min_count=1))
    per = keyed.groupby(["bucket", "engine"])["counted"].last().groupby("bucket").sum()
    values = [float(v) for v in per.tolist()[-HISTORY_POINTS:]]
    return tuple(0.0 if v != v else v for v in values)


def _latest_pandas(stats: pd.DataFrame, interval: float) -> list[tuple]:
    horizon = stats["ts"].iloc[-1] - pd.Timedelta(seconds=STALE_INTERVALS * interval)
    out = []
    for engine, group in stats.groupby("engine", sort=True):
        last = group.iloc[-1]
        if last["ts"] >= horizon:
            out.append((int(engine), *(as_float(last[f]) for f in ("prompt_tps", "gen_tps", "running", "waiting",
                                                               "kv_usage_pct")), last["ts"].to_pydatetime()))
    return out


def test_numpy_rows_and_history_equal_the_pandas_way():
    rng = random.Random(11)
    # Intervals measured between /metrics scrapes carry nanoseconds the microsecond frame cannot hold.
    for n, interval in ((1, 2.0), (7, 10.0), (400, 2.0), (3000, 1.0), (900, 0.4), (300, 2.0000000013),
                        (60, 9.876543210987)):
        frame = _frame(rng, n, interval)
        for role in ("prefill", "decode", "aggregated", "frontend"):
            # Equal but for the last bit: numpy and pandas add the engines in another order.
            assert counted_history(frame, role, interval) == pytest.approx(_history_pandas(frame, role, interval), rel=1e-12)
        got = [(e.engine, e.prompt_tps, e.gen_tps, e.running, e.waiting, e.kv_usage_pct, e.last_ts)
               for e in latest_engine_rows(frame, interval)]
        assert got == _latest_pandas(frame, interval)
    assert 5 not in [e.engine for e in latest_engine_rows(_frame(rng, 3000, 2.0), 2.0)]
