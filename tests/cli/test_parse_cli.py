"""``pdwatch parse`` end to end, as a user runs it: a real process, real files, real pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pdwatch.cli import build_parser
from tests.conftest import CPU_LOGS

STATS = (b"(APIServer pid=9) INFO 11-29 09:01:38 [loggers.py:335] Engine 001: Avg prompt throughput: 2444.7 tokens/s, "
         b"Avg generation throughput: 2194.7 tokens/s, Running: 4 reqs, Waiting: 44 reqs, GPU KV cache usage: 0.2%, "
         b"Prefix cache hit rate: 0.0%\n")


def pdwatch(*args: str, stdin: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdwatch", *args], input=stdin, capture_output=True, timeout=timeout)


def jsonl(out: bytes) -> list[dict]:
    return [json.loads(line) for line in out.decode().splitlines()]


def test_version_and_help_on_every_subcommand():
    assert pdwatch("--version").stdout.decode().startswith("pdwatch ")
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert "parse" in sub.choices
    for name in sub.choices:
        result = pdwatch(name, "--help")
        assert result.returncode == 0 and b"usage: pdwatch " + name.encode() in result.stdout


def test_json_contract_on_a_real_log():
    path = str(CPU_LOGS / "s2_seqs4.log")
    result = pdwatch("parse", path, "--year", "2026")
    assert result.returncode == 0, result.stderr
    events = jsonl(result.stdout)
    for event in events:
        assert list(event)[:6] == ["kind", "source", "line_no", "ts", "engine", "level"]
        assert event["source"] == path
    stats = [e for e in events if e["kind"] == "stats"]
    assert len(stats) == 16
    high = next(e for e in stats if e["waiting"] == 44)
    assert high == {"kind": "stats", "source": path, "line_no": 144,
                        "ts": "2026-11-29T09:01:38+00:00", "engine": 0, "level": "INFO", "prompt_tps": 2444.7,
                        "gen_tps": 2194.7, "running": 4, "waiting": 44, "prefix_hit_pct": 0.0, "kv_usage_pct": 0.2}
    traceback = [e for e in events if e["kind"] == "traceback"][-1]
    assert traceback["end_line_no"] > traceback["line_no"]


def test_directory_sets_metrics_scrapes_aside_and_table_format():
    result = pdwatch("parse", str(CPU_LOGS), "--format", "table", "--year", "2026")
    assert result.returncode == 0
    lines = result.stdout.decode().splitlines()
    assert lines[0].split()[:4] == ["TIME", "SOURCE:LINE", "ENG", "KIND"]
    assert sum(" stats " in line for line in lines) == 16 + 12 + 8 + 19 + 17 + 18
    assert b"recorded /metrics scrape" in result.stderr and b"s2_seqs4.metrics.txt" in result.stderr


def test_missing_file_is_one_clear_line_and_the_rest_is_still_read(tmp_path: Path):
    good = tmp_path / "decode_w0.out"
    good.write_bytes(STATS)
    result = pdwatch("parse", str(tmp_path / "nope.out"), str(good))
    assert result.returncode == 2
    assert result.stderr.decode().strip() == f"pdwatch: {tmp_path / 'nope.out'}: no such file"
    assert [e["kind"] for e in jsonl(result.stdout)] == ["stats"]


def test_bad_options_exit_2_with_one_line():
    result = pdwatch("parse", "--tz", "Mars/Olympus", "x.log")
    assert result.returncode == 2 and result.stderr.decode().count("\n") == 1
    assert pdwatch("parse", "--year", "99", "x.log").returncode == 2
    assert pdwatch("parse", "--format", "xml", "x.log").returncode == 2


def test_stdin_and_garbage_around_a_valid_line():
    junk = os.urandom(20000).replace(b"\n", b"") + b"\n"
    result = pdwatch("parse", "-", stdin=junk + b"\x00\x00 half a line\r\n" + STATS + junk + STATS.rstrip(b"\n"))
    assert result.returncode == 0, result.stderr
    events = jsonl(result.stdout)
    assert [(e["kind"], e["source"], e["engine"], e["line_no"]) for e in events] == \
        [("stats", "-", 1, 3), ("stats", "-", 1, 5)]  # the last line had no newline: delivered at EOF


def test_hostile_text_reaches_no_terminal(tmp_path: Path):
    evil = (b"(APIServer pid=1) ERROR 11-29 09:00:00 [x.py:1] vllm.v1.engine.exceptions.EngineDeadError: "
            b"\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;owned\x07\x1b[2J[bold red]boom[/] <script>alert(1)</script>\n")
    path = tmp_path / "evil.log"
    path.write_bytes(evil)
    for fmt in ("jsonl", "table"):
        out = pdwatch("parse", str(path), "--format", fmt).stdout
        assert b"\x1b" not in out and b"\x07" not in out
        assert b"[bold red]boom[/] <script>alert(1)</script>" in out


def _read_until(proc: subprocess.Popen, lines: list[dict], want, deadline: float) -> bool:
    import selectors
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    buffer = b""
    while time.monotonic() < deadline:
        if want(lines):
            return True
        if sel.select(timeout=0.1):
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            lines.extend(json.loads(c) for c in complete if c)
    return want(lines)


def test_follow_a_directory_as_a_writer_appends_truncates_and_rotates(tmp_path: Path):
    proc = subprocess.Popen([sys.executable, "-m", "pdwatch", "parse", "--follow", str(tmp_path), "--year", "2026"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        lines: list[dict] = []
        log = tmp_path / "node1_decode_w0.out"  # created after pdwatch started
        with open(log, "ab", buffering=0) as w:
            w.write(STATS[:60])  # half a line: nothing may come out yet
            time.sleep(0.8)
            assert not _read_until(proc, lines, lambda ls: ls, time.monotonic() + 0.3)
            w.write(STATS[60:])
            assert _read_until(proc, lines, lambda ls: len(ls) == 1, time.monotonic() + 10)
            w.write(STATS * 2)
            assert _read_until(proc, lines, lambda ls: len(ls) == 3, time.monotonic() + 10)
        assert [e["line_no"] for e in lines] == [1, 2, 3]
        os.truncate(log, 0)  # copytruncate
        time.sleep(0.5)
        with open(log, "ab", buffering=0) as w:
            w.write(STATS)
        assert _read_until(proc, lines, lambda ls: len(ls) == 4, time.monotonic() + 10)
        assert lines[3]["line_no"] == 1
        os.rename(log, tmp_path / "node1_decode_w0.out.1")  # rotation: the new file starts at line 1
        log.write_bytes(STATS.replace(b"Engine 001", b"Engine 002"))
        assert _read_until(proc, lines, lambda ls: any(e["engine"] == 2 for e in ls), time.monotonic() + 10)
        assert [e for e in lines if e["engine"] == 2][0]["line_no"] == 1
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("args", [["--version"], ["--help"], []])
def test_the_quick_answers_import_no_pandas_numpy_or_textual(args):
    # pdwatch --version / --help answer in a blink: no command module (pandas, numpy, Textual) is loaded
    probe = ("import runpy, sys\n"
             f"sys.argv = ['pdwatch'] + {args!r}\n"
             "try:\n    runpy.run_module('pdwatch', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('pandas', 'numpy', 'textual') if m in sys.modules), file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.stderr.strip().splitlines()[-1] == "[]", out.stderr
