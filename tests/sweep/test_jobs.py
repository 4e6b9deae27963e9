"""Finding srt-slurm jobs: both layouts, a folder of jobs, and paths with nothing to read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pdwatch.errors import UsageError
from pdwatch.sweep.jobs import find_jobs, read_job
from tests.sweep.fixture_paths import AGG_JOB, DISAGG_JOB, LEGACY_JOB, ROLLUP_JOB, SWEEP

NO_RESULTS = "no sweep results (results_concurrency_*.json, vllm bench serve results or benchmark-rollup.json) under it"


def test_current_layout_job_has_its_logs_metadata_and_results():
    job = read_job(AGG_JOB)
    assert (job.job_id, job.layout, job.logs_folder) == ("4242001", "srt-slurm", AGG_JOB / "logs")
    assert [(log.node, log.role, log.index) for log in job.worker_logs] == [("cpunode1", "agg", 0)]
    assert job.frontend_logs == (AGG_JOB / "logs" / "cpunode1_frontend_0.out",)
    assert job.benchmark_out == AGG_JOB / "logs" / "benchmark.out"
    assert job.prometheus == AGG_JOB / "logs" / "raw_prometheus.jsonl.gz"
    assert job.metadata["job_name"] == "cpu-tiny-qwen3-agg-sa-bench" and job.metadata_path == AGG_JOB / "4242001.json"
    assert [path.name for path in job.result_files] == ["results_concurrency_2_gpus_1.json",
                                                        "results_concurrency_8_gpus_1.json"]


def test_disaggregated_job_lists_prefill_and_decode_workers():
    job = read_job(DISAGG_JOB)
    assert sorted(log.role for log in job.worker_logs) == ["decode", "prefill"]
    assert len(job.result_files) == 2


def test_legacy_layout_takes_the_job_id_from_the_folder_name_and_skips_the_pytorch_copy():
    job = read_job(LEGACY_JOB)
    assert (job.job_id, job.layout, job.logs_folder) == ("3100", "srt-slurm legacy", LEGACY_JOB)
    assert [path.name for path in job.result_files] == ["concurrency_16.json"]
    assert [(log.node, log.role, log.path.suffix) for log in job.worker_logs] == [
        ("gpu-02", "decode", ".out"), ("gpu-01", "prefill", ".err"), ("gpu-01", "prefill", ".out")]
    assert job.metadata["run_metadata"]["gpus_per_node"] == 4


def test_a_folder_of_jobs_gives_every_job_once_in_name_order():
    jobs = find_jobs([SWEEP, SWEEP / "srt-slurm"])  # the second path's jobs were already found
    assert [job.job_id for job in jobs] == ["3100", "4242003", "4242001", "4242002"]
    rollup_job = jobs[1]
    assert rollup_job.result_files == () and rollup_job.rollup == ROLLUP_JOB / "logs" / "benchmark-rollup.json"


def test_the_logs_folder_given_is_read_as_its_job():
    job = read_job(AGG_JOB / "logs")
    assert (job.job_id, job.folder, job.metadata_path) == ("4242001", AGG_JOB, AGG_JOB / "4242001.json")


def test_metadata_copied_into_logs_is_found_and_bad_metadata_is_reported(tmp_path: Path):
    job_folder = tmp_path / "outputs" / "777"
    shutil.copytree(AGG_JOB / "logs", job_folder / "logs")
    shutil.copy(AGG_JOB / "4242001.json", job_folder / "logs" / "777.json")
    assert read_job(job_folder).metadata["resources"]["agg_workers"] == 1
    (job_folder / "777.json").write_text('{"resources": ')
    job = read_job(job_folder)
    assert job.metadata == {} and job.metadata_error.startswith("777.json: ")


@pytest.mark.parametrize("make, message", [
    (lambda root: root, NO_RESULTS),
    (lambda root: (root / "logs").mkdir() or root, NO_RESULTS),
])
def test_a_folder_without_results_is_a_usage_error(tmp_path: Path, make, message):
    path = make(tmp_path)
    with pytest.raises(UsageError) as error:
        find_jobs([path])
    assert str(error.value) == f"{path}: {message}"


def test_a_job_that_only_has_a_benchmark_out_is_no_sweep(tmp_path: Path):
    job_folder = tmp_path / "outputs" / "900"
    (job_folder / "logs").mkdir(parents=True)
    shutil.copy(AGG_JOB / "logs" / "benchmark.out", job_folder / "logs")
    assert read_job(job_folder).has_results is False
    with pytest.raises(UsageError, match=r"no sweep results \(results_concurrency_\*\.json"):
        find_jobs([tmp_path / "outputs"])


def test_a_missing_path_and_a_file_are_usage_errors(tmp_path: Path):
    with pytest.raises(UsageError, match=r"nope: no such file or directory$"):
        find_jobs([tmp_path / "nope"])
    with pytest.raises(UsageError, match="not a folder"):
        find_jobs([AGG_JOB / "4242001.json"])


def test_vllm_default_result_names_are_results_anywhere_in_a_job(tmp_path: Path):
    logs = tmp_path / "9001" / "logs"
    logs.mkdir(parents=True)
    name = "openai-infqps-concurrency8-tiny-qwen3-20261203-105650.json"
    shutil.copy(AGG_JOB / "logs" / "sa-bench_isl_256_osl_128" / "results_concurrency_8_gpus_1.json", logs / name)
    (logs / "cpunode1_config.json").write_text("{}")  # an engine config dump: not a result
    (jobs,) = [find_jobs([tmp_path])]
    assert [path.name for path in jobs[0].result_files] == [name]
