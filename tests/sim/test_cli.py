"""``pdwatch simulate`` and ``pdwatch demo`` as a user runs them (real subprocesses)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import REPO

_NAME = re.compile(r"^gb200-n\d{3}_(?:(?:prefill|decode|agg)_w\d+|frontend_0)\.out$")


def pdwatch(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdwatch", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=timeout)


def test_simulate_writes_srt_slurm_named_files(tmp_path):
    out = tmp_path / "run"
    proc = pdwatch("simulate", "--out", str(out), "--duration", "2m")
    assert proc.returncode == 0, proc.stderr
    names = sorted(p.name for p in out.iterdir())
    assert all(_NAME.match(n) for n in names), names
    roles = [re.sub(r"^gb200-n\d{3}_", "", n) for n in names]
    assert sorted(roles) == ["decode_w0.out", "frontend_0.out", "prefill_w0.out", "prefill_w1.out",
                             "prefill_w2.out", "prefill_w3.out"]  # the default 4xDEP2-1xDEP8
    assert "TPS/GPU" in proc.stdout
    decode = next(out.glob("*_decode_w0.out")).read_bytes()
    assert decode.count(b"Engine 007: Avg prompt throughput") >= 10  # 8 engines, a line every 10 s


def test_simulate_aggregated_and_options(tmp_path):
    out = tmp_path / "agg"
    proc = pdwatch("simulate", "--out", str(out), "--topology", "1xDEP4", "--cc", "64", "--isl", "2048",
                   "--osl", "256", "--duration", "40s", "--style", "vllm-0.14", "--noise", "quiet",
                   "--interval", "5", "--metrics-interval", "20")
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in out.glob("*.out")] == ["gb200-n001_agg_w0.out"]
    text = (out / "gb200-n001_agg_w0.out").read_text()
    assert "vLLM API server version 0.14.0" in text
    assert len(re.findall(r"Engine 003: Avg prompt throughput", text)) >= 6
    assert sorted(p.name for p in (out / "metrics").iterdir()) == ["gb200-n001_agg_w0.metrics.txt"]


def test_simulate_refuses_a_folder_with_logs(tmp_path):
    (tmp_path / "old_decode_w0.out").write_text("x\n")
    proc = pdwatch("simulate", "--out", str(tmp_path), "--duration", "10s")
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("pdwatch: error:") and "\n" not in proc.stderr.strip()


@pytest.mark.parametrize("args", [
    ["--topology", "4xDEP2-1xFOO8"], ["--topology", "banana"], ["--cc", "0"], ["--duration", "soon"],
    ["--duration", "0s"], ["--isl", "-5"], ["--interval", "0"],
])
def test_bad_options_exit_2_with_one_line(tmp_path, args):
    proc = pdwatch("simulate", "--out", str(tmp_path / "x"), *args)
    assert proc.returncode == 2, proc.stdout
    err = proc.stderr.strip()
    assert err.startswith("pdwatch: error:") and "\n" not in err and "Traceback" not in err
    assert not (tmp_path / "x").exists()


def test_realtime_appends_over_time(tmp_path):
    out = tmp_path / "live"
    proc = subprocess.Popen([sys.executable, "-m", "pdwatch", "simulate", "--out", str(out), "--realtime",
                             "--topology", "1xDEP2-1xDEP2", "--cc", "64", "--duration", "4s", "--interval", "1",
                             "--noise", "quiet"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sizes: list[int] = []
    began = time.monotonic()
    try:
        while proc.poll() is None and time.monotonic() - began < 30:
            decode = list(out.glob("*_decode_w0.out")) if out.exists() else []
            if decode:
                sizes.append(decode[0].stat().st_size)
            time.sleep(0.25)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert time.monotonic() - began >= 4.0  # paced by the wall clock, not fast-forwarded
    growth = [b for a, b in zip(sizes, sizes[1:]) if b > a]
    assert len(growth) >= 3, sizes  # the file grew in several steps while the run was live
    text = next(out.glob("*_decode_w0.out")).read_text()
    assert text.count("Engine 001: Avg prompt throughput") >= 3


def test_demo_runs_by_itself_and_keeps_the_folder():
    proc = pdwatch("demo", "--duration", "3s", "--interval", "1", "--topology", "1xDEP2-1xDEP2", "--cc", "32",
                   timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("TIME") and "KIND" in lines[0]
    assert sum(1 for line in lines if " stats " in line) >= 4
    folder = re.search(r"logs are in (\S+)", proc.stderr).group(1)
    assert Path(folder).is_dir() and list(Path(folder).glob("*.out"))
    # it says it is a simulation, where its logs are and what to run on them afterwards (issue 17)
    assert "SIMULATION" in proc.stderr.splitlines()[0]
    assert f"pdwatch replay {folder}" in proc.stderr and f"pdwatch report {folder}" in proc.stderr
    shutil.rmtree(folder)  # the demo keeps it for the user; the test cleans up after itself


def test_demo_help_says_it_is_a_simulation_on_the_dashboard():
    proc = pdwatch("demo", "--help", timeout=60)
    text = " ".join(proc.stdout.split())
    assert proc.returncode == 0
    assert "A simulation, no cluster or GPU needed" in text and "opens the live dashboard" in text
    assert "`pdwatch replay DIR`" in text and "`pdwatch report DIR`" in text


@pytest.mark.skipif(os.name != "posix", reason="SIGINT delivery")
def test_demo_stops_cleanly_on_ctrl_c():
    proc = subprocess.Popen([sys.executable, "-m", "pdwatch", "demo", "--duration", "10m", "--interval", "1",
                             "--topology", "1xDEP2-1xDEP2", "--cc", "32"], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        assert first.startswith("TIME")
        deadline = time.monotonic() + 20
        seen_stats = False
        while time.monotonic() < deadline and not seen_stats:
            seen_stats = " stats " in proc.stdout.readline()
        assert seen_stats
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert "Traceback" not in stderr
    folder = re.search(r"logs are in (\S+)", stderr).group(1)
    assert list(Path(folder).glob("*.out"))
    shutil.rmtree(folder)
