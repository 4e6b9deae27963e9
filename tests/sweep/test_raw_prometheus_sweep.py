"""``pdwatch sweep`` on a real sweep whose ``/metrics`` were recorded as srt-slurm records them, ``logs/raw_prometheus.jsonl``
(tests/data/real/sweeps/dynamo-agg-kv48-c1-16-rawprom, README there: Dynamo 1.6.1 + vLLM 0.31 for CPU, one aggregated
worker with a 48-block KV cache, C = 1, 4, 16 as sa-bench runs them).

Expectations from the records and benchmark.out, read apart with ``json`` (not pdwatch): the worker's preemption counter
rises inside the C=16 window and not inside C=1's. Each point takes the scrapes of its own window; with the worker's log
gone (a job whose log was lost) the point is judged from its records alone and quotes ``raw_prometheus.jsonl:LINE``
from inside its window."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from pdwatch.sweep import find_jobs
from tests.conftest import DATA

SWEEP = DATA / "real" / "sweeps" / "dynamo-agg-kv48-c1-16-rawprom"
JOB = next(SWEEP.glob("*/logs")).parent
RAW = JOB / "logs" / "raw_prometheus.jsonl"


def _sweep(path: Path) -> dict[int, dict]:
    done = subprocess.run([sys.executable, "-m", "pdwatch", "sweep", str(path), "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return {p["concurrency"]: p for p in json.loads(done.stdout)["points"]}


def _preemptions_between(start: str, end: str) -> float:
    lo, hi = (datetime.fromisoformat(t).timestamp() * 1e9 for t in (start, end))
    counts = [sum(float(line.rsplit(" ", 1)[1]) for line in r["text"].splitlines()
                  if line.startswith("vllm:num_preemptions_total{"))
              for r in map(json.loads, RAW.read_text().splitlines()) if r["role"] == "agg" and lo <= r["timestamp_ns"] <= hi]
    return counts[-1] - counts[0] if counts else 0.0


@pytest.fixture(scope="module")
def points() -> dict[int, dict]:
    return _sweep(SWEEP)


def test_the_job_knows_its_raw_prometheus_jsonl():
    (job,) = find_jobs([SWEEP])
    assert job.prometheus == RAW


def test_each_point_judged_with_its_window_s_scrapes(points):
    assert sorted(points) == [1, 4, 16]
    assert all(p["valid"] for p in points.values()), {c: p["invalid_reasons"] for c, p in points.items()}
    high = points[16]
    assert _preemptions_between(high["window"]["start"], high["window"]["end"]) > 0
    assert high["verdict"]["rule"] == "kv_exhausted" and high["verdict"]["endpoint"] == "agg_w0"
    low = points[1]
    assert _preemptions_between(low["window"]["start"], low["window"]["end"]) == 0
    assert low["verdict"]["rule"] != "kv_exhausted"


def _without_worker_log(tmp_path: Path, gz: bool = False) -> Path:
    job = tmp_path / JOB.name
    shutil.copytree(JOB, job, ignore=shutil.ignore_patterns("*_agg_w0.out"))
    if gz:
        raw = job / "logs" / "raw_prometheus.jsonl"
        with open(raw, "rb") as src, gzip.open(raw.with_suffix(".jsonl.gz"), "wb") as dst:
            shutil.copyfileobj(src, dst)
        raw.unlink()
    return tmp_path


@pytest.mark.parametrize("gz", [False, True], ids=["jsonl", "jsonl.gz"])
def test_without_the_worker_log_its_records_judge_it_quoting_raw_prometheus_jsonl_lines(tmp_path, gz):
    points = _sweep(_without_worker_log(tmp_path, gz))
    name = "raw_prometheus.jsonl.gz" if gz else "raw_prometheus.jsonl"
    raw = tmp_path / JOB.name / "logs" / name
    lines = (gzip.decompress(raw.read_bytes()) if gz else raw.read_bytes()).decode().splitlines()
    high = points[16]
    assert high["verdict"]["rule"] == "kv_exhausted" and high["verdict"]["endpoint"] == "agg_w0"
    lo, hi = (datetime.fromisoformat(high["window"][k]).timestamp() * 1e9 for k in ("start", "end"))
    assert high["verdict"]["evidence"]
    for e in high["verdict"]["evidence"]:
        assert e["source"] == str(raw)
        record = json.loads(lines[e["line"] - 1])
        assert record["role"] == "agg" and lo <= record["timestamp_ns"] <= hi
