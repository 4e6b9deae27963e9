"""The simulator's sweep job: srt-slurm's layout, sa-bench's result files, and results that agree with the logs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pdwatch.parsers import Event, LogScanner
from pdwatch.session.analysis import analyse
from pdwatch.sim.sweep import DEFAULT_CONCURRENCIES, SweepJob, write_sweep_job

from .helpers import REPO, integrate

INTERVAL = 2.0
RESULT_KEYS = {"date", "backend", "model_id", "tokenizer_id", "num_prompts", "request_rate", "burstiness",
               "max_concurrency", "duration", "completed", "total_input_tokens", "total_output_tokens",
               "request_throughput", "output_throughput", "total_token_throughput", "input_lens", "output_lens",
               "ttfts", "itls", "generated_texts", "errors",
               *(f"{stat}_{metric}_ms" for stat in ("mean", "median", "std", "p99")
                 for metric in ("ttft", "tpot", "itl", "e2el"))}


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> SweepJob:
    return write_sweep_job(tmp_path_factory.mktemp("sweep"), interval=INTERVAL)


@pytest.fixture(scope="module")
def results(job) -> dict[int, dict]:
    """Each result file as a reader finds it: concurrency from the content, not the name."""
    out = {}
    for path in job.logs.glob("sa-bench_*/*.json"):
        data = json.loads(path.read_text())
        out[data["max_concurrency"]] = data
    return dict(sorted(out.items()))


@pytest.fixture(scope="module")
def decode_stats(job) -> list[Event]:
    return _stats(next(job.logs.glob("*_decode_w0.out")))


@pytest.fixture(scope="module")
def prefill_stats(job) -> list[Event]:
    return _stats(next(job.logs.glob("*_prefill_w0.out")))


def _stats(path: Path) -> list[Event]:
    scanner = LogScanner(path.name, year=2026)
    events = scanner.feed(path.read_bytes(), 1) + scanner.finish()
    return [e for e in events if e.kind == "stats"]


def _window(result: dict) -> tuple[datetime, datetime]:
    """The point's window as a reader gets it from the file alone: date - duration to date."""
    end = datetime.strptime(result["date"], "%Y%m%d-%H%M%S").replace(tzinfo=timezone.utc)
    return datetime.fromtimestamp(end.timestamp() - result["duration"], timezone.utc), end


def _bursts(events: list[Event], t0: datetime, t1: datetime) -> dict[datetime, list[Event]]:
    """The stats lines in [t0, t1], grouped by the burst (one line per engine) they were printed in."""
    out: dict[datetime, list[Event]] = {}
    for e in events:
        if t0 <= e.ts <= t1:
            out.setdefault(e.ts.replace(microsecond=0), []).append(e)
    return out


def test_the_job_has_srt_slurm_layout_and_names(job, results):
    root = job.root
    assert root.parent.name == "outputs" and root.name == job.job_id
    assert {p.name for p in root.iterdir()} == {f"{job.job_id}.json", "config.yaml", "README.md", "logs"}
    names = sorted(p.name for p in job.logs.iterdir())
    total, prefill, decode = job.gpus
    result_dir = job.logs / "sa-bench_isl_1024_osl_256"
    assert names == sorted(["benchmark.out", "gb200-n001_frontend_0.out", "gb200-n001_prefill_w0.out",
                            "gb200-n002_decode_w0.out", result_dir.name])
    assert (total, prefill, decode) == (8, 4, 4)  # 1xDEP4-1xDEP4
    assert sorted(p.name for p in result_dir.iterdir()) == sorted(
        f"results_concurrency_{c}_gpus_8_ctx_4_gen_4.json" for c in DEFAULT_CONCURRENCIES)
    assert list(results) == list(DEFAULT_CONCURRENCIES)
    meta = json.loads((root / f"{job.job_id}.json").read_text())
    assert meta["version"] == "2.0" and meta["job_id"] == job.job_id
    assert meta["resources"]["prefill_workers"] == 1 and meta["resources"]["gpus_per_decode"] == 4
    assert meta["benchmark"] == {"type": "sa-bench", "isl": 1024, "osl": 256}
    assert "benchmark:\n  type: sa-bench" in (root / "config.yaml").read_text()
    assert "concurrencies: 64x128x256x512x1024" in (root / "config.yaml").read_text()
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    assert size < 5 * 2**20, size  # small enough for tests


def test_each_result_file_has_sa_bench_keys_and_consistent_numbers(results):
    for c, r in results.items():
        assert RESULT_KEYS <= set(r), RESULT_KEYS - set(r)
        assert r["num_prompts"] == 10 * c and r["completed"] == r["num_prompts"]
        assert all(len(r[k]) == r["num_prompts"] for k in ("input_lens", "output_lens", "ttfts", "itls", "errors"))
        assert sum(r["input_lens"]) == r["total_input_tokens"] and sum(r["output_lens"]) == r["total_output_tokens"]
        assert all(819 <= n <= 1024 for n in r["input_lens"]) and all(204 <= n <= 256 for n in r["output_lens"])
        assert r["output_throughput"] == pytest.approx(r["total_output_tokens"] / r["duration"])
        assert r["request_throughput"] == pytest.approx(r["completed"] / r["duration"])
        assert r["total_token_throughput"] == pytest.approx(
            (r["total_input_tokens"] + r["total_output_tokens"]) / r["duration"])
        ttfts = sorted(r["ttfts"])
        assert r["median_ttft_ms"] == pytest.approx(1000 * (ttfts[len(ttfts) // 2 - 1] + ttfts[len(ttfts) // 2]) / 2,
                                                    rel=1e-4)
        assert r["mean_ttft_ms"] <= r["p99_ttft_ms"] and r["mean_e2el_ms"] > r["mean_ttft_ms"]
    # the head of a file holds the throughput, its tail the latencies (srtctl monitor reads only those)
    text = json.dumps(results[64])
    assert '"output_throughput"' in text[:700] and '"p99_e2el_ms"' in text[-600:]


def test_benchmark_out_marks_every_point_around_its_result(job, results):
    text = job.benchmark_out.read_text()
    marks = re.findall(r"Running benchmark with concurrency: (\d+)\n(\S+ \S+)\n(.*?)\n(\S+ \S+)\n"
                       r"Completed benchmark with concurrency: (\d+)\n-+\n", text, flags=re.S)
    assert [int(m[0]) for m in marks] == list(results) == [int(m[4]) for m in marks]
    for (c, begun, body, ended, _), result in zip(marks, results.values()):
        first, last = (datetime.strptime(x, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc) for x in (begun, ended))
        t0, t1 = _window(result)
        assert first <= t0 and t1 <= last  # the run lies between its dates
        assert (t0 - first).total_seconds() < 12  # the client's start-up and its test prompt
        assert f"Successful requests:                     {result['completed']}" in body
        assert f"--result-filename results_concurrency_{c}_gpus_8_ctx_4_gen_4.json" in body
        assert re.search(rf"Output token throughput \(tok/s\):\s+{result['output_throughput']:.2f}", body)
    for c in results:  # the warm-up prints the line too, before the markers
        announced = re.findall(rf"^Maximum request concurrency:\s+{c}\s*$", text, flags=re.M)
        assert len(announced) == 4  # at the start and in the result block, of the warm-up and of the measured run


def test_output_tokens_agree_with_the_decode_stats_over_each_window(results, decode_stats):
    for c, r in results.items():
        t0, t1 = _window(r)
        logged = integrate(decode_stats, "gen_tps", t0, t1, INTERVAL)
        assert logged == pytest.approx(r["total_output_tokens"], rel=0.03), c


def test_tpot_and_ttft_follow_the_queues_in_the_logs(results, decode_stats, prefill_stats):
    for c, r in results.items():
        t0, t1 = _window(r)
        steady = [e for e in decode_stats if t0.timestamp() + 4 < e.ts.timestamp() <= t1.timestamp() - 2
                  and e.values["running"]]
        # a running request gets one token per decode step: tokens/s per running request is 1 / TPOT
        per_request = sum(e.values["gen_tps"] / e.values["running"] for e in steady) / len(steady)
        assert 1000 / per_request == pytest.approx(r["median_tpot_ms"], rel=0.05), c
        # Little's law: requests not yet decoding (prefill queue and batch, decode queue) = throughput x TTFT
        decode = _bursts(decode_stats, t0, t1)
        prefill = _bursts(prefill_stats, t0, t1)
        queued = sum(e.values["waiting"] for burst in decode.values() for e in burst) / len(decode) + sum(
            e.values["waiting"] + e.values["running"] for burst in prefill.values() for e in burst) / len(prefill)
        if queued >= 50:
            assert 1000 * queued / r["request_throughput"] == pytest.approx(r["mean_ttft_ms"], rel=0.2), c
        else:
            assert r["mean_ttft_ms"] < 500, c
    ttft = [r["median_ttft_ms"] for r in results.values()]
    assert ttft[-1] > 10 * ttft[0]


def test_the_load_drops_between_points(results, decode_stats):
    windows = [_window(r) for r in results.values()]
    for (_, end), (start, _) in zip(windows, windows[1:]):
        between = _bursts(decode_stats, end, start)
        assert between, (end, start)
        assert min(sum(e.values["running"] for e in burst) for burst in between.values()) <= 1


def test_report_finds_the_decode_kv_cache_exhausted_only_at_the_high_concurrencies(job, results):
    analysis = analyse([str(job.logs)], year=2026)
    episodes = [(f.start, f.end or job.end) for f in analysis.findings
                if f.rule == "kv_exhausted" and f.endpoint == "decode_w0"]
    assert episodes
    hit = [c for c, r in results.items()
           if any(start < _window(r)[1] and _window(r)[0] < end for start, end in episodes)]
    assert hit == [c for c in results if c >= hit[0]] and hit[0] > min(results)  # the high ones, all of them
    low_end = max(_window(r)[1] for c, r in results.items() if c < hit[0])
    assert all(start > low_end for start, _ in episodes)  # nothing of it during the low points
    assert hit[0] == job.kv_exhausted_from  # the simulator's own view (it preempted) agrees
    assert f"runs out from **C={hit[0]}** on" in (job.root / "README.md").read_text()


def _pdwatch(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdwatch", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=120)


def test_simulate_sweep_command_writes_a_job_and_never_overwrites_one(tmp_path):
    proc = _pdwatch("simulate", "--sweep", "16x32", "--out", str(tmp_path), "--job-id", "77")
    assert proc.returncode == 0, proc.stderr
    assert "wrote sweep job 77" in proc.stdout and "2 points (concurrency 16, 32)" in proc.stdout
    files = sorted(p.name for p in (tmp_path / "outputs/77/logs/sa-bench_isl_1024_osl_256").iterdir())
    assert files == ["results_concurrency_16_gpus_8_ctx_4_gen_4.json", "results_concurrency_32_gpus_8_ctx_4_gen_4.json"]
    before = (tmp_path / "outputs/77/logs/benchmark.out").read_bytes()
    again = _pdwatch("simulate", "--sweep", "16", "--out", str(tmp_path), "--job-id", "77")
    assert again.returncode == 2 and "exists there already" in again.stderr
    assert (tmp_path / "outputs/77/logs/benchmark.out").read_bytes() == before


@pytest.mark.parametrize("args", [["--sweep", "64,sixty"], ["--sweep", "64,0"], ["--sweep", "64,64"],
                                  ["--sweep", "64", "--cc", "8"], ["--sweep", "64", "--topology", "1xDEP8"],
                                  ["--sweep", "64", "--job-id", "abc"], ["--sweep", "64", "--isl", "200000"]])
def test_simulate_sweep_bad_options_are_one_line_errors(tmp_path, args):
    proc = _pdwatch("simulate", "--out", str(tmp_path / "x"), *args)
    err = proc.stderr.strip()
    assert proc.returncode == 2, proc.stdout
    assert err.startswith("pdwatch: error:") and "\n" not in err and "Traceback" not in err
    assert not (tmp_path / "x").exists()
