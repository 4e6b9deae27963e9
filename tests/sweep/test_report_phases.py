"""``pdwatch report`` on a sweep job's logs (issue 33): a row per measured point, each with its own
steady state (after its ramp) and verdict, instead of one headline blended over the whole sweep.
The job is the simulator's srt-slurm sweep (decode KV cache exhausted from C=512; its result files
agree with its logs, tests/sim/test_sweep.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pdwatch.sim.sweep import write_sweep_job

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sweep")
    return write_sweep_job(out).logs


def report(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "pdwatch", "report", *args], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def test_each_point_is_a_phase_with_its_own_steady_headline_and_verdict(logs):
    data = json.loads(report(str(logs), "--format", "json"))
    phases = {p["concurrency"]: p for p in data["phases"]}
    assert sorted(phases) == [64, 128, 256, 512, 1024]
    results = {json.loads(f.read_text())["max_concurrency"]: json.loads(f.read_text())
               for f in logs.rglob("results_concurrency_*.json")}
    for c, p in phases.items():
        assert p["window"]["start"] < p["steady"]["start"] <= p["steady"]["end"] <= p["window"]["end"]
        # the steady part leaves the ramp out: at least the run's average, never far above it
        measured = results[c]["output_throughput"]
        assert 0.98 * measured <= p["gen_tps"] <= 1.2 * measured, (c, p["gen_tps"], measured)
    assert [phases[c]["verdict"]["rule"] for c in (64, 128, 256, 512, 1024)] == \
        [None, None, "capacity", "kv_exhausted", "kv_exhausted"]
    md = report(str(logs))
    assert "## Phases: the sweep's measured points" in md and "| 512 |" in md


def test_a_run_that_is_not_a_sweep_has_no_phases():
    data = json.loads(report(str(REPO / "samples" / "kv-exhausted"), "--format", "json"))
    assert data["phases"] == []
    assert "## Phases" not in report(str(REPO / "samples" / "kv-exhausted"))


def test_without_benchmark_out_the_loads_between_idle_gaps_are_the_phases(tmp_path):
    """The same sweep's worker logs alone (no benchmark.out, no results): each measured run is found
    from the requests in flight (between the idle gaps a client's start leaves), judged on its own."""
    import shutil
    job = write_sweep_job(tmp_path / "job")
    logs = tmp_path / "logs"
    logs.mkdir()
    for path in job.log_paths:
        shutil.copy(path, logs / Path(path).name)
    data = json.loads(report(str(logs), "--format", "json"))
    phases = data["phases"]
    assert phases and all(p["concurrency"] is None and p["label"].startswith("load ") for p in phases)
    expected = {64: None, 128: None, 256: "capacity", 512: "kv_exhausted", 1024: "kv_exhausted"}
    import pandas as pd

    def overlap(p, start, end) -> float:
        lo, hi = max(start, pd.Timestamp(p["window"]["start"])), min(end, pd.Timestamp(p["window"]["end"]))
        return max(0.0, (hi - lo).total_seconds()) / (end - start).total_seconds()
    for point in job.points:  # the simulator's own record of when each measured run ran
        start, end = pd.Timestamp(point.start), pd.Timestamp(point.end)
        # a stats interval's resolution at each edge: the phase holds nearly all of the run
        covering = [p for p in phases if overlap(p, start, end) >= 0.85]
        assert len(covering) == 1, (point.concurrency, start, end, [p["window"] for p in phases])
        assert covering[0]["verdict"]["rule"] == expected[point.concurrency], (point.concurrency, covering[0])


def test_a_real_run_with_one_load_has_no_phases():
    data = json.loads(report(str(REPO / "tests" / "data" / "real" / "dynamo" / "agg_kv_pressure"), "--format", "json"))
    assert data["phases"] == []
