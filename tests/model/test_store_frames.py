"""The store's column-wise frames and numpy interval give what the plain pandas way gives."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from statistics import median

import numpy as np
import pandas as pd

from pdwatch.parsers import Event
from pdwatch.model.line_book import text_crc
from pdwatch.model.partial import StatsColumns
from pdwatch.model.store import Store, _stats_frame
from pdwatch.rules.model import STATS_FIELDS

_COLUMNS = ("ts", "engine", *STATS_FIELDS, "source", "line_no", "text", "crc")


def _records_way(rows: list[tuple]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(rows, columns=_COLUMNS)
    frame["ts"] = pd.to_datetime(frame["ts"], utc=True)
    frame["engine"] = frame["engine"].astype("int64")
    frame["line_no"] = frame["line_no"].astype("int64")
    frame["crc"] = frame["crc"].astype("int64")
    frame["text"] = pd.Series([r[-2] for r in rows], dtype=object)  # None where the line is read back
    for name in STATS_FIELDS:
        frame[name] = frame[name].astype("float64")
    return frame.dropna(subset=["ts"]).reset_index(drop=True)


def _rows(n: int, rng: random.Random) -> list[tuple]:
    t0 = datetime(2026, 5, 29, 14, 0, tzinfo=timezone.utc)
    rows = []
    for i in range(n):
        ts = None if rng.random() < 0.05 else t0 + timedelta(seconds=rng.choice([0, 1, 2, 2, 10]) * i / 3)
        values = [rng.choice([np.nan, 0.0, 1.5, float("inf"), 1e9]) for _ in STATS_FIELDS]
        rows.append((ts, rng.randrange(4), *values, f"w{i % 2}.log", i + 1,
                     *((f"line {i} [bold]", -1) if i % 3 else (None, rng.randrange(1 << 32)))))
    return rows


def _columns(rows: list[tuple]) -> StatsColumns:
    n = len(STATS_FIELDS)
    return StatsColumns([r[2 + n] for r in rows], [r[0] for r in rows], [r[1] for r in rows],
                        [list(r[2:2 + n]) for r in rows], [r[3 + n] for r in rows], [r[4 + n] for r in rows],
                        [r[5 + n] for r in rows])


def test_column_frame_equals_the_records_frame():
    rng = random.Random(7)
    for n in (1, 2, 17, 300):
        rows = _rows(n, rng)
        pd.testing.assert_frame_equal(_stats_frame([_columns(rows)]).reset_index(drop=True), _records_way(rows))
        cut = rng.randrange(n + 1)  # merged runs are joined in order
        pd.testing.assert_frame_equal(_stats_frame([_columns(rows[:cut]), _columns(rows[cut:])]), _records_way(rows))
    assert _stats_frame([]).empty


def test_a_value_numpy_cannot_take_is_nan():
    """The parsers give a stats field a number or None; anything else reads as unknown (NaN)."""
    odd = [[1.5] * len(STATS_FIELDS), [2] * len(STATS_FIELDS)]
    odd[1][3] = object()
    columns = StatsColumns(["a", "a"], [None, None], [0, 0], odd, [1, 2], ["x", "y"], [-1, -1]).seal()
    assert columns.values.shape == (2, len(STATS_FIELDS))
    assert np.isnan(columns.values[1, 3]) and columns.values[1, 2] == 2.0 and (columns.values[0] == 1.5).all()


def _stats_event(i: int, ts: datetime, engine: int) -> Event:
    return Event("stats", "n1_decode_w0.log", i, ts, engine, "INFO",
                 {"prompt_tps": float(i), "gen_tps": 1.0, "running": 1, "waiting": 0, "kv_usage_pct": 5.0}, None, "x")


def test_flushes_in_any_order_give_the_sorted_frame_and_the_median_interval():
    rng = random.Random(3)
    t0 = datetime(2026, 5, 29, 14, 0, tzinfo=timezone.utc)
    events = [_stats_event(i, t0 + timedelta(seconds=2 * (i // 4) + rng.choice([0, 0, 1])), i % 4) for i in range(400)]
    late = events[150:160]  # a file read later whose lines are older
    store = Store()
    for start in range(0, 400, 37):
        store.add([e for e in events[start:start + 37] if e not in late])
        store.flush()
    store.add(late)
    store.flush()
    frame = store.stats("decode_w0")
    expected = _records_way([(e.ts, e.engine, *[float(e.values.get(f, np.nan)) for f in STATS_FIELDS],
                              e.source, e.line_no, e.text, text_crc(e.text)) for e in events if e not in late]
                            + [(e.ts, e.engine, *[float(e.values.get(f, np.nan)) for f in STATS_FIELDS],
                                e.source, e.line_no, e.text, text_crc(e.text)) for e in late])
    expected = expected.sort_values("ts", kind="stable", ignore_index=True)
    pd.testing.assert_frame_equal(frame, expected)
    diffs = expected.groupby("engine", sort=False)["ts"].diff().dt.total_seconds().dropna()
    assert store.model.endpoints["decode_w0"].facts["stats_interval_s"] == float(median([d for d in diffs if d > 0]))


def test_sealed_times_are_the_microseconds_pandas_reads():
    """A worker ships each row's time as int64 microseconds (``StatsColumns.seal``): for times in any
    zone, naive ones (taken as UTC) and ones before the epoch, the frame holds what pandas would make
    of the datetimes themselves."""
    zones = [timezone.utc, timezone(timedelta(hours=7)), timezone(timedelta(hours=-5, minutes=-30)), None]
    rng = random.Random(11)
    rows = []
    for i in range(60):
        base = datetime(1969, 12, 31, 23, 59, 59, 999_999) if i % 10 == 0 else datetime(2026, 12, 7, 22, 0)
        when = (base + timedelta(microseconds=rng.randrange(10**12))).replace(tzinfo=zones[i % 4])
        rows.append((when, 0, *([1.0] * len(STATS_FIELDS)), "w.log", i + 1, None, 7))
    sealed = _columns(rows).seal()
    assert sealed.ts.dtype == np.int64 and sealed.line_no.dtype == np.int64
    pd.testing.assert_frame_equal(_stats_frame([sealed]), _records_way(rows))
