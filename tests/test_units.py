"""pdwatch.units: the one parser of durations and the one home of number, size and time formats."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pdwatch import units


@pytest.mark.parametrize("text, seconds", [
    ("30s", 30.0), ("1m30s", 90.0), ("250ms", 0.25), ("1.5m", 90.0), (".5s", 0.5), ("2h", 7200.0),
    ("1d", 86400.0), ("1w", 604800.0), (" 5m ", 300.0), ("1h30m", 5400.0),
])
def test_a_duration_is_prometheus_style_number_unit_pairs(text, seconds):
    assert units.parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "30", "5 m", "m5", "1y", "-5s", "1h 30m", "5sec"])
def test_what_is_not_a_duration_is_none(text):
    assert units.parse_duration(text) is None


def test_the_rule_grammar_the_sources_and_the_simulator_read_durations_alike():
    from pdwatch.commands.simulate import parse_duration as simulate_duration
    from pdwatch.rules import parse_span
    from pdwatch.sources.prometheus import parse_when
    for text in ("90s", "1m30s", "2h", "1d"):
        seconds = units.parse_duration(text)
        assert parse_span(text).seconds == seconds
        assert simulate_duration(text) == seconds
        assert parse_when(text, now=100_000.0, what="--since") == 100_000.0 - seconds
    assert simulate_duration("120") == 120.0  # the simulator also takes plain seconds


def test_durations_written_for_readers_for_columns_and_for_promql():
    assert [units.fmt_duration(s) for s in (0.4, 45, 300, 303, 7200, 7500)] == [
        "0 s", "45 s", "5 min", "5 min 3 s", "2 h", "2 h 5 min"]
    assert [units.fmt_span(s) for s in (2.0123, 1200, 5400)] == ["2.01 s", "20 min", "1.5 h"]
    assert [units.fmt_age(s) for s in (None, 59.9, 125, 7300)] == ["", "59s", "2m05s", "2:01:40"]
    assert [units.fmt_compact_duration(s) for s in (5400, 59.999, 0.0001)] == ["1h30m", "59s999ms", "1ms"]


def test_numbers_shortened_the_way_each_place_needs():
    values = (850, 1234, 42_262, 1_234_567)
    assert [units.fmt_short(v, "line") for v in values] == ["850", "1.2k", "42k", "1.2M"]
    assert [units.fmt_short(v, "column") for v in values] == ["850", "1,234", "42.3k", "1.23M"]
    assert [units.fmt_short(v, "tick") for v in (2.5, 850, 1234, 42_262, 1_234_567)] == [
        "2.5", "850", "1,234", "42.3k", "1.23M"]
    assert units.fmt_short(None) == "?"


def test_report_figures_counts_and_percentages():
    assert [units.fmt_num(v) for v in (None, True, 3, 1234.5, 42.25, 3.14159, "n/a")] == [
        "?", "True", "3", "1,234", "42.2", "3.14", "n/a"]
    assert [units.fmt_count(v) for v in (None, 1234.4)] == ["?", "1,234"]
    assert [units.fmt_pct(v) for v in (0, 3.46, 42.4, 99.4, 99.97, 100)] == ["0%", "3.5%", "42%", "99%", "99.9%", "100%"]
    assert units.fmt_precise(float("inf")) == "infinite"


def test_engine_numbers_said_short():
    assert units.engine_ranges([3, 0, 1, 2, 5, 7, 8]) == "0-3, 5, 7-8"
    assert units.engine_ranges([0, 1, 3], dash="–", sep=",", shortest_run=3) == "0,1,3"
    assert units.engine_ranges([0, 1, 2, 3], dash="–", sep=",", shortest_run=3) == "0–3"
    assert units.engine_ranges(None) == units.engine_ranges([]) == "-"


def test_times_of_day_dates_and_report_times():
    moment = datetime(2026, 12, 3, 14, 3, 7, tzinfo=timezone.utc)
    assert units.fmt_clock(moment) == "14:03:07" and units.fmt_clock(None) == "?"
    assert units.fmt_datetime(moment) == "2026-12-03 14:03:07"
    assert units.fmt_datetime(None, unknown="--:--:--") == "--:--:--"
    assert units.fmt_iso(moment.isoformat()) == "2026-12-03 14:03:07 UTC"
    assert units.fmt_iso("not a time") == "not a time" and units.fmt_iso(None) == "?"
