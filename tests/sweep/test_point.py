"""Sweep points: the named axes reproduce a job's own numbers; invalid points say why."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from pdwatch.sweep import AXES, read_sweep
from pdwatch.sweep.point import make_point
from pdwatch.sweep.results import GpuCount, read_result_file
from tests.sweep.fixture_paths import AGG_RESULTS, DISAGG_RESULTS, SWEEP


@pytest.mark.parametrize("path, gpus", [
    (AGG_RESULTS / "results_concurrency_2_gpus_1.json", 1),
    (AGG_RESULTS / "results_concurrency_8_gpus_1.json", 1),
    (DISAGG_RESULTS / "results_concurrency_8_gpus_2_ctx_1_gen_1.json", 2),
])
def test_figures_reproduce_the_jobs_own_numbers(path: Path, gpus: int):
    document = json.loads(path.read_text())
    point = make_point("job", read_result_file(path))
    assert point.output_tokens_per_s_per_gpu == pytest.approx(document["output_throughput"] / gpus, rel=1e-3)
    assert point.total_tokens_per_s_per_gpu == pytest.approx(document["total_token_throughput"] / gpus, rel=1e-3)
    assert point.tokens_per_s_per_user == pytest.approx(1000 / document["mean_tpot_ms"], rel=1e-3)


def test_every_figure_has_a_named_axis_with_its_definition():
    point = make_point("job", read_result_file(AGG_RESULTS / "results_concurrency_2_gpus_1.json"))
    for key, axis in AXES.items():
        assert getattr(point, key) is not None and axis.key == key
    assert "srt-slurm" in AXES["tokens_per_s_per_user"].definition and "TPOT" in AXES["tokens_per_s_per_user"].definition
    assert "InferenceX" in AXES["total_tokens_per_s_per_gpu"].definition


def _result(tmp_path: Path, **changes):
    document = json.loads((AGG_RESULTS / "results_concurrency_8_gpus_1.json").read_text()) | changes
    path = tmp_path / "results_concurrency_8_gpus_1.json"
    path.write_text(json.dumps(document))
    return read_result_file(path)


def test_a_complete_run_is_valid(tmp_path: Path):
    assert make_point("job", _result(tmp_path)).valid


@pytest.mark.parametrize("changes, reasons", [
    ({"completed": 79, "failed": 1}, ["completed 79 of 80 requests"]),  # 1.25% failed: under the gate
    ({"completed": 70, "failed": 10}, ["completed 70 of 80 requests", "10 of 80 requests failed (12%, over 5%)"]),
    ({"completed": 70, "failed": None}, ["completed 70 of 80 requests", "10 of 80 requests failed (12%, over 5%)"]),
    ({"total_output_tokens": 0, "output_throughput": 0.0, "mean_tpot_ms": 0.0}, ["no output tokens"]),
    ({"mean_tpot_ms": None}, ["no mean TPOT in the result (tokens/s per user unknown)"]),
])
def test_invalid_points_say_why(tmp_path: Path, changes, reasons):
    point = make_point("job", _result(tmp_path, **changes))
    assert list(point.invalid_reasons) == reasons and not point.valid


def test_unknown_gpus_and_a_corrupt_file_make_a_point_invalid(tmp_path: Path):
    no_gpus = replace(_result(tmp_path), gpus=None)
    point = make_point("job", no_gpus)
    assert point.invalid_reasons == ("GPU count unknown (not in the file name nor in the job's metadata)",)
    assert point.output_tokens_per_s_per_gpu is None
    truncated = DISAGG_RESULTS / "results_concurrency_24_gpus_2_ctx_1_gen_1.json"
    assert make_point("job", read_result_file(truncated)).invalid_reasons == (
        f"{truncated.name}: truncated JSON at byte {truncated.stat().st_size}",)
    assert make_point("job", replace(_result(tmp_path), gpus=GpuCount(0))).output_tokens_per_s_per_gpu is None


def test_read_sweep_gives_every_point_of_every_job_with_its_window():
    points = read_sweep([SWEEP])
    assert [(point.job_id, point.concurrency, point.valid) for point in points] == [
        ("3100", 16, True), ("4242003", 2, True), ("4242003", 8, True),
        ("4242001", 2, True), ("4242001", 8, True), ("4242002", 8, False), ("4242002", 24, False)]
    windows = {(point.job_id, point.concurrency): point.window for point in points}
    assert windows[("4242001", 8)].source.startswith("benchmark.out:")
    assert windows[("4242002", 24)].source.endswith("date − duration")
    assert windows[("4242003", 2)] is None  # rollup only: no benchmark.out, no date
    assert {point.window.timezone for point in read_sweep([SWEEP], tz="Asia/Tokyo") if point.window} == {"Asia/Tokyo"}
