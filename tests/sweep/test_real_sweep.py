"""``pdwatch sweep`` on a real sweep: Dynamo 1.6.1 + vLLM 0.31 for CPU, one aggregated worker whose KV cache
(48 blocks) is the limit from some concurrency on, loaded by ``vllm bench serve`` at C = 1, 2, 4, 8, 16, 32 as
srt-slurm's sa-bench runs it (tools/capture-dynamo/capture_sweep.py; tests/data/real/sweeps/dynamo-agg-kv48-c1-32/
README.md says how and what happened).

The expectations are the README's measured facts, read off the logs with plain regular expressions, not pdwatch's
output: at C = 1, 2, 4 no stats line has a request waiting and the cache peaks at 19-60%; at C = 16 and 32 the cache
is at 90% or more with a queue on 29 of 42 and 21 of 28 stats lines. At C = 8 the cache is full on a few lines (3 in
a row at most with a queue) and the worker's /metrics counts 14 preemptions in the window (vLLM 0.31's stats line
prints none): KV exhausted too, seen by reading the recorded /metrics beside the log, as report does.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA

SWEEP = DATA / "real" / "sweeps" / "dynamo-agg-kv48-c1-32"
JOB = SWEEP / "2612041606"
LOGS = JOB / "logs"
RESULTS = LOGS / "sa-bench_isl_512_osl_256"
WORKER_LOG = LOGS / "vm_agg_w0.out"
# The measured windows: benchmark.out's date lines (UTC) around each measured run (README, "What happened").
WINDOWS = {1: ("16:07:58", "16:08:14"), 2: ("16:08:24", "16:08:42"), 4: ("16:08:54", "16:09:12"),
           8: ("16:09:23", "16:09:55"), 16: ("16:10:09", "16:11:41"), 32: ("16:12:03", "16:13:04")}
LOW, HIGH = (1, 2, 4), (16, 32)
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@pytest.fixture(scope="module")
def data() -> dict:
    done = subprocess.run([sys.executable, "-m", "pdwatch", "sweep", str(SWEEP), "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def points(data) -> dict[int, dict]:
    return {p["concurrency"]: p for p in data["points"]}


def test_the_data_is_what_its_readme_says():
    assert sorted(p.name for p in RESULTS.glob("*.json")) == sorted(
        f"results_concurrency_{c}_gpus_1.json" for c in WINDOWS)
    meta = json.loads((JOB / "2612041606.json").read_text())
    assert meta["version"] == "2.0" and meta["resources"]["agg_workers"] == 1 and meta["resources"]["gpus_per_agg"] == 1
    bench = (LOGS / "benchmark.out").read_text()
    # the real quirk: markers glued to the end of the client's nanobind block (no trailing newline)
    assert "refleaks.htmlRunning benchmark with concurrency: 2" in bench
    total = sum(f.stat().st_size for f in SWEEP.rglob("*") if f.is_file())
    assert total < 5.5e6, total


def test_one_valid_point_per_concurrency_with_its_results_own_numbers(points):
    assert sorted(points) == sorted(WINDOWS)
    for c, p in points.items():
        result = json.loads((RESULTS / f"results_concurrency_{c}_gpus_1.json").read_text())
        assert result["max_concurrency"] == c and result["completed"] == result["num_prompts"] == 10 * c
        assert p["valid"] and p["invalid_reasons"] == [], (c, p["invalid_reasons"])
        assert p["gpus"] == 1
        assert p["output_throughput"] == pytest.approx(result["output_throughput"], rel=1e-3)
        assert p["total_token_throughput"] == pytest.approx(result["total_token_throughput"], rel=1e-3)
        assert p["mean_tpot_ms"] == pytest.approx(result["mean_tpot_ms"], rel=1e-3)
        assert p["mean_ttft_ms"] == pytest.approx(result["mean_ttft_ms"], rel=1e-3)
        assert p["tps_per_gpu"] == pytest.approx(result["output_throughput"] / 1, rel=1e-3)
        assert p["tps_per_user"] == pytest.approx(1000 / result["mean_tpot_ms"], rel=1e-3)


def test_each_window_is_its_measured_run_from_benchmark_out(points, data):
    assert data["timezone"] == "UTC"
    for c, (start, end) in WINDOWS.items():
        w = points[c]["window"]
        assert w["start"][:10] == "2026-12-04" and w["start"][11:19] == start and w["end"][11:19] == end, (c, w)
        assert "benchmark.out" in w["source"], w


def _stamp(source: str, line: int) -> str:
    text = ANSI.sub("", Path(source).read_text(errors="replace").splitlines()[line - 1])
    return re.search(r"\b(\d\d:\d\d:\d\d)\b", text).group(1)


def test_kv_exhausted_at_the_high_concurrencies_with_evidence_inside_the_window(points):
    for c in HIGH:
        v = points[c]["verdict"]
        assert v is not None and v["rule"] == "kv_exhausted" and v["severity"] == "critical", (c, v)
        assert v["evidence"], (c, v)
        for ev in v["evidence"]:
            assert Path(ev["source"]).name == WORKER_LOG.name, ev
            text = ANSI.sub("", Path(ev["source"]).read_text(errors="replace").splitlines()[ev["line"] - 1])
            assert "KV cache usage" in text, text
            assert WINDOWS[c][0] <= _stamp(ev["source"], ev["line"]) <= WINDOWS[c][1], (c, ev)


def test_no_kv_exhausted_where_nothing_waited(points):
    for c in LOW:
        v = points[c]["verdict"]
        assert v is not None, c  # judged: the job has logs and a window
        assert v["rule"] != "kv_exhausted" and v["severity"] != "critical", (c, v)
    for c in (1, 2):  # the cache at 19% and 28% at most, 1 and 2 running: nothing near a limit
        assert points[c]["verdict"]["rule"] is None, points[c]["verdict"]


def test_c8_is_kv_exhausted_by_the_preemptions_its_metrics_counted(points):
    # The cache full on a few lines (3 in a row at 87% or more with a queue) and 14 preemptions in /metrics:
    # from the log alone it reads as near capacity; with the worker's scrapes read beside it, exhausted.
    v = points[8]["verdict"]
    assert points[8]["valid"] and v["rule"] == "kv_exhausted" and v["severity"] == "critical", v
    (ev, *_) = v["evidence"]
    assert Path(ev["source"]).name == WORKER_LOG.name
    assert WINDOWS[8][0] <= _stamp(ev["source"], ev["line"]) <= WINDOWS[8][1], ev


def test_the_frontier_is_the_results_own_and_ends_kv_exhausted(data):
    figures = {}
    for c in WINDOWS:
        result = json.loads((RESULTS / f"results_concurrency_{c}_gpus_1.json").read_text())
        figures[c] = (1000 / result["mean_tpot_ms"], result["output_throughput"])
    dominated = {c for c, (x, y) in figures.items()
                 if any(x2 >= x and y2 >= y and (x2, y2) != (x, y) for x2, y2 in figures.values())}
    (front,) = data["frontiers"]
    assert {q["concurrency"] for q in front["points"]} == set(WINDOWS) - dominated
    first = front["limits"].split(";")[0]
    assert first.startswith("up to C=") and first.endswith("no bottleneck found"), front["limits"]
    assert front["limits"].endswith("(kv_exhausted)"), front["limits"]
