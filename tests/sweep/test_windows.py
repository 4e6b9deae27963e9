"""Each point's measured window from benchmark.out, or from the result's date minus its duration."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from pdwatch.errors import UsageError
from pdwatch.sweep.results import read_result_file
from pdwatch.sweep.windows import measured_runs, parse_timezone, point_window
from tests.sweep.fixture_paths import AGG_JOB, AGG_RESULTS, DISAGG_JOB, DISAGG_RESULTS

UTC = timezone.utc


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_a_marker_glued_to_the_end_of_a_line_is_found():
    bench = AGG_JOB / "logs" / "benchmark.out"
    lines = _lines(bench)
    runs = measured_runs(bench)
    assert sorted(runs) == [2, 8]
    for run in runs.values():
        marker = lines[run.marker_line - 1]
        assert marker.startswith("See https://nanobind") and marker.endswith(
            f"Running benchmark with concurrency: {run.concurrency}")
        assert lines[run.start_line - 1] == run.start_text and lines[run.end_line - 1] == run.end_text
        assert lines[run.completed_line - 1] == f"Completed benchmark with concurrency: {run.concurrency}"


def test_the_window_is_the_measured_run_not_its_warm_up():
    """The warm-up's own summary (with the same "Maximum request concurrency") is printed before
    the marker: the window starts at the date line after the marker."""
    bench = AGG_JOB / "logs" / "benchmark.out"
    lines = _lines(bench)
    run = measured_runs(bench)[8]
    warm_up_lines = [n for n, line in enumerate(lines, 1) if line.startswith("Maximum request concurrency: 8")]
    assert len(warm_up_lines) == 2 and warm_up_lines[0] < run.marker_line < run.start_line < warm_up_lines[1]
    window = point_window(read_result_file(AGG_RESULTS / "results_concurrency_8_gpus_1.json"), {8: run})
    assert (window.start, window.end) == (datetime.fromisoformat(run.start_text).replace(tzinfo=UTC),
                                          datetime.fromisoformat(run.end_text).replace(tzinfo=UTC))
    assert window.source == f"benchmark.out:{run.start_line}-{run.end_line}" and window.timezone == "UTC"


def test_date_lines_around_a_warm_up_and_a_rerun_do_not_move_the_window(tmp_path: Path):
    bench = tmp_path / "benchmark.out"
    bench.write_text("\n".join([
        "2026-12-03 10:00:00", "Maximum request concurrency: 4", "2026-12-03 10:00:20",  # warm-up with dates
        "Running benchmark with concurrency: 4", "2026-12-03 10:00:21", "Maximum request concurrency: 4",
        "Traceback (most recent call last):",  # first try died: no Completed line
        "Running benchmark with concurrency: 4", "2026-12-03 10:02:00", "Maximum request concurrency: 4",
        "+ set +x", "2026-12-03 10:03:30", "Completed benchmark with concurrency: 4", "-" * 41, ""]))
    run = measured_runs(bench)[4]
    assert (run.start_text, run.end_text, run.marker_line) == ("2026-12-03 10:02:00", "2026-12-03 10:03:30", 8)


def test_a_run_without_completed_marker_falls_back_to_date_minus_duration():
    runs = measured_runs(DISAGG_JOB / "logs" / "benchmark.out")
    assert runs[24].completed_line is None and runs[24].end_text is None and runs[8].completed_line
    result = read_result_file(DISAGG_RESULTS / "results_concurrency_24_gpus_2_ctx_1_gen_1.json")
    window = point_window(result, runs)
    end = datetime.strptime(result.date, "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
    assert (window.start, window.end) == (end - timedelta(seconds=result.duration_s), end)
    assert window.source == "results_concurrency_24_gpus_2_ctx_1_gen_1.json: date − duration"


def test_the_window_states_the_time_zone_assumed():
    result = read_result_file(AGG_RESULTS / "results_concurrency_2_gpus_1.json")
    runs = measured_runs(AGG_JOB / "logs" / "benchmark.out")
    in_utc = point_window(result, runs)
    in_berlin = point_window(result, runs, "Europe/Berlin")  # CET in December: UTC+1
    assert in_berlin.timezone == "Europe/Berlin"
    assert in_utc.start - in_berlin.start == timedelta(hours=1) and in_berlin.seconds == in_utc.seconds
    assert point_window(result, runs, "-05:00").start - in_utc.start == timedelta(hours=5)


def test_no_markers_and_no_date_give_no_window(tmp_path: Path):
    path = tmp_path / "results_concurrency_2_gpus_1.json"
    path.write_text('{"completed": 20, "duration": 41.0, "max_concurrency": 2}')
    assert point_window(read_result_file(path), {}) is None


@pytest.mark.parametrize("name", ["Mars/Olympus", "+25:00", ""])
def test_an_unknown_time_zone_is_a_usage_error(name: str):
    with pytest.raises(UsageError, match="time zone|UTC offset"):
        parse_timezone(name)
