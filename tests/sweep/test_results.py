"""Result files -> points: sa-bench names, vLLM's own files, the rollup, and damaged files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdwatch.sweep.jobs import read_job
from pdwatch.sweep.results import GpuCount, gpus_from_metadata, read_result_file, read_rollup
from tests.sweep.fixture_paths import AGG_RESULTS, DISAGG_RESULTS, LEGACY_JOB, ROLLUP_JOB


def test_an_sa_bench_file_gives_its_figures_and_the_gpus_in_its_name():
    path = DISAGG_RESULTS / "results_concurrency_8_gpus_2_ctx_1_gen_1.json"
    document = json.loads(path.read_text())
    result = read_result_file(path, {"resources": {"total_gpus_counted": 99}})  # the name wins
    assert result.gpus == GpuCount(2, prefill=1, decode=1, source="file name")
    assert (result.kind, result.concurrency, result.requested, result.completed, result.failed) == (
        "sa-bench", 8, document["num_prompts"], document["completed"], document["failed"])
    assert result.output_throughput == document["output_throughput"]
    assert result.total_token_throughput == document["total_token_throughput"]
    assert (result.tpot.mean_ms, result.tpot.median_ms, result.tpot.p99_ms) == (
        document["mean_tpot_ms"], document["median_tpot_ms"], document["p99_tpot_ms"])
    assert result.ttft.p99_ms == document["p99_ttft_ms"] and result.date == document["date"]
    assert result.read_error is None


def test_a_name_without_gpus_takes_them_from_the_legacy_metadata():
    job = read_job(LEGACY_JOB)
    (result,) = [read_result_file(path, job.metadata) for path in job.result_files]
    assert result.gpus == GpuCount(8, prefill=4, decode=4, source="job metadata (nodes × GPUs per node)")
    assert result.concurrency == 16  # from max_concurrency: the name has none
    assert result.kind == "vllm bench serve"


@pytest.mark.parametrize("metadata, expected", [
    ({"resources": {"gpus_per_node": 4, "prefill_nodes": 1, "decode_nodes": 2, "agg_nodes": None}},
     GpuCount(12, prefill=4, decode=8, source="job metadata (nodes × GPUs per node)")),
    ({"resources": {"gpus_per_node": 8, "prefill_nodes": None, "decode_nodes": None, "agg_nodes": 2}},
     GpuCount(16, source="job metadata (nodes × GPUs per node)")),
    ({"resources": {"gpus_per_node": 2, "prefill_nodes": 1, "decode_nodes": 1, "total_gpus_counted": 2}},
     GpuCount(2, source="job metadata (total GPUs)")),
    ({"resources": {"gpus_per_node": 8}}, None),
    ({}, None),
])
def test_gpus_from_metadata(metadata, expected):
    assert gpus_from_metadata(metadata) == expected


def test_a_truncated_file_is_a_point_with_the_reason_and_what_was_read_before():
    path = DISAGG_RESULTS / "results_concurrency_24_gpus_2_ctx_1_gen_1.json"
    result = read_result_file(path)
    assert result.read_error == f"{path.name}: truncated JSON at byte {path.stat().st_size}"
    assert result.concurrency == 24 and result.completed == 240  # these keys precede the cut
    assert result.tpot.mean_ms is None  # written after the arrays: lost


def test_old_key_names_and_percentile_lists(tmp_path: Path):
    path = tmp_path / "results_concurrency_4_gpus_8.json"
    path.write_text(json.dumps({"date": "20250901-121530", "num_prompts": 40, "max_concurrency": 4, "duration": 10.0,
                                "completed": 40, "total_input": 4000, "total_output": 2000, "output_throughput": 200.0,
                                "mean_ttft_ms": 50.0, "percentiles_ttft_ms": [[50, 45.0], [99, 90.5]]}))
    result = read_result_file(path)
    assert (result.total_input_tokens, result.total_output_tokens, result.ttft.p99_ms) == (4000, 2000, 90.5)


@pytest.mark.parametrize("content, reason", [
    ('{"config": {"model": "x"}}', "not a benchmark result (no 'completed' or 'duration' key)"),
    ('{"completed": 80, "duration": 40.0}\n{"completed": 160, "duration": 80.0}\n',
     "holds more than one result (vllm bench serve --append-result?): only one run per file is read"),
    ('{"completed": 80, "duration": 40.0, "output_throughput": }', "invalid JSON at byte 57: unexpected '}'"),
    ("", "truncated JSON at byte 0"),
])
def test_files_that_are_no_single_result_say_why(tmp_path: Path, content: str, reason: str):
    path = tmp_path / "results_concurrency_8_gpus_1.json"
    path.write_text(content)
    assert read_result_file(path).read_error == f"{path.name}: {reason}"


def test_an_unreadable_file_is_a_point_with_the_reason(tmp_path: Path):
    result = read_result_file(tmp_path / "results_concurrency_8_gpus_1.json")
    assert result.read_error == "results_concurrency_8_gpus_1.json: cannot read (No such file or directory)"


def test_the_rollup_reproduces_the_per_point_files_it_was_made_from():
    """Job 4242003's rollup holds job 4242001's runs: durations and token rates derived from the
    rollup's tokens and request rate match the per-point files to 0.1%."""
    rollup = ROLLUP_JOB / "logs" / "benchmark-rollup.json"
    points = read_rollup(rollup, read_job(ROLLUP_JOB).metadata)
    assert [point.concurrency for point in points] == [2, 8]
    for point in points:
        original = json.loads((AGG_RESULTS / f"results_concurrency_{point.concurrency}_gpus_1.json").read_text())
        assert point.kind == "rollup" and point.read_error is None
        assert point.gpus.total == 12  # 3 nodes × 4 GPUs in this job's metadata
        for mine, theirs in ((point.duration_s, original["duration"]),
                             (point.output_throughput, original["output_throughput"]),
                             (point.total_token_throughput, original["total_token_throughput"])):
            assert mine == pytest.approx(theirs, rel=1e-3)
        assert point.tpot.mean_ms == original["mean_tpot_ms"] and point.ttft.p99_ms == original["p99_ttft_ms"]


@pytest.mark.parametrize("content, reason", [
    ("{", "not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
    ('{"benchmark_type": "sa-bench"}', "no 'runs' list"),
])
def test_a_bad_rollup_is_one_point_with_the_reason(tmp_path: Path, content: str, reason: str):
    path = tmp_path / "benchmark-rollup.json"
    path.write_text(content)
    (point,) = read_rollup(path)
    assert point.read_error == f"benchmark-rollup.json: {reason}"
