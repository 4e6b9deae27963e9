"""The job log (``pdwatch.events.job_log``): a job's files interleaved by time, read around a
position in bounded memory. On the real Dynamo capture agg_kv_pressure (a frontend and a worker
whose log mixes Dynamo's coloured Rust/Python lines, vLLM's lines and bare stderr lines)."""

from __future__ import annotations

import re
import tracemalloc
from datetime import datetime, timezone
from pathlib import Path

from pdwatch.events.job_log import JobLog, level_passes
from pdwatch.sources.line_reader import MAX_LINE_BYTES, LineReader
from tests.conftest import REPO

CAPTURE = REPO / "tests" / "data" / "real" / "dynamo" / "agg_kv_pressure"
FRONTEND = str(CAPTURE / "agg_kv_pressure.frontend.log")
WORKER = str(CAPTURE / "agg_kv_pressure.worker.log")
ENDPOINTS = {FRONTEND: "agg_kv_pressure.frontend", WORKER: "agg_kv_pressure.worker"}
_COLOURED_LEVEL = re.compile(rb"^\x1b\[2m\S+Z\x1b\[0m \x1b\[\d+m *(INFO|WARN|WARNING|ERROR|DEBUG)\x1b")


def _job() -> JobLog:
    return JobLog([FRONTEND, WORKER], ENDPOINTS)


def _raw_lines(path: str) -> list[bytes]:
    return Path(path).read_bytes().split(b"\n")[:-1]


def test_every_line_once_each_file_in_its_order_and_the_files_merged_by_time():
    lines = list(_job().lines())
    for path in (FRONTEND, WORKER):
        numbers = [line.line_no for line in lines if line.source == path]
        assert numbers == list(range(1, len(_raw_lines(path)) + 1))
    switches = 0
    for a, b in zip(lines, lines[1:]):
        if a.source != b.source:  # when a was taken, b was its file's next line: the merge took the earlier
            switches += 1
            assert a.key <= b.key, (a, b)
    assert switches > 100  # the two logs really interleave (requests go frontend -> worker -> frontend)
    first_worker = next(i for i, line in enumerate(lines) if line.source == WORKER)
    assert all(line.source == FRONTEND for line in lines[:first_worker])
    assert lines[first_worker - 1].ts < datetime(2026, 12, 3, 16, 19, 3, 568770, tzinfo=timezone.utc)


def test_text_is_ansi_free_and_time_and_level_are_read_from_each_format():
    lines = {(line.source, line.line_no): line for line in _job().lines()}
    first = lines[(FRONTEND, 1)]
    assert first.text.startswith("2026-12-03T16:18:51.983109Z  INFO router_args.log_rejection_thresholds: busy-worker")
    assert first.ts == datetime(2026, 12, 3, 16, 18, 51, 983109, tzinfo=timezone.utc)
    assert first.endpoint == "agg_kv_pressure.frontend" and first.level == "INFO"
    assert not any("\x1b" in line.text for line in lines.values())
    for path in (FRONTEND, WORKER):  # Dynamo's coloured levels, as the raw bytes print them
        for n, raw in enumerate(_raw_lines(path), 1):
            m = _COLOURED_LEVEL.match(raw)
            if m:
                assert lines[(path, n)].level == {"WARN": "WARNING"}.get(m[1].decode(), m[1].decode())
    # vLLM's own format inside the worker's log: the year from the file's Dynamo stamps
    vllm = next(line for line in lines.values() if "[model.py:699] Resolved architecture" in line.text)
    assert vllm.level == "INFO" and vllm.ts == datetime(2026, 12, 3, 16, 19, 18, tzinfo=timezone.utc)


def test_lines_without_a_timestamp_follow_the_previous_line_of_their_file():
    lines = list(_job().lines())
    bare = [i for i, line in enumerate(lines) if line.ts is None and line.line_no > 1]
    assert len(bare) > 5  # "Triton is installed, ...", FutureWarning lines, their source lines
    for i in bare:
        line = lines[i]
        previous = next(x for x in reversed(lines[:i]) if x.source == line.source)
        assert previous.line_no == line.line_no - 1 and line.key == previous.key
        assert line.level is None and line.record_level == previous.record_level
    head = next(line for line in lines if line.source == WORKER)  # the worker's first line: no stamp yet
    assert head.line_no == 1 and head.ts is None and head.text.startswith("Triton is installed")
    assert head.key == next(line for line in lines if line.source == WORKER and line.ts is not None).key


def test_window_at_a_line_holds_it_and_both_files_in_time_order():
    job = _job()
    window = job.window_at_line(WORKER, 347, before=20, after=20)
    assert window.problems == []
    target = window.lines[window.anchor]
    assert (target.source, target.line_no) == (WORKER, 347)
    assert "CPU KV cache usage: 89.7%" in target.text
    assert {line.source for line in window.lines} == {FRONTEND, WORKER}
    assert 20 <= len(window.lines) <= 41
    whole = [(line.source, line.line_no) for line in job.lines()]
    at = whole.index((WORKER, 347))
    shown = [(line.source, line.line_no) for line in window.lines]
    assert shown == whole[at - window.anchor: at - window.anchor + len(shown)]  # the same order as the whole merge
    assert not window.at_start and not window.at_end


def test_filters_by_endpoint_and_by_level():
    job = _job()
    worker_only = job.window_at_time(datetime(2026, 12, 3, 16, 20, 50, tzinfo=timezone.utc), before=50, after=50,
                                     endpoint="agg_kv_pressure.worker")
    assert worker_only.lines and {line.endpoint for line in worker_only.lines} == {"agg_kv_pressure.worker"}
    warnings = list(job.lines(min_level="WARNING"))
    assert warnings and all(line.record_level in ("WARNING", "ERROR") for line in warnings)
    assert sum(1 for line in job.lines() if level_passes(line, "WARNING")) == len(warnings)
    assert any("Failed to load CuPy" in line.text for line in warnings)
    window = job.window_at_time(float("-inf"), before=0, after=30, min_level="ERROR")
    assert len(window.lines) == 30 and all(line.record_level == "ERROR" for line in window.lines)
    assert window.lines[0].text.split()[1] == "ERROR"


def test_the_start_and_the_end_of_the_job():
    job = _job()
    start = job.window_at_time(float("-inf"), before=10, after=10)
    assert start.at_start and start.anchor == 0 and (start.lines[0].source, start.lines[0].line_no) == (FRONTEND, 1)
    end = job.window_at_time(None, before=10, after=10)
    assert end.at_end and len(end.lines) == 10
    whole = [(line.source, line.line_no) for line in job.lines()]
    assert [(line.source, line.line_no) for line in end.lines] == whole[-10:]


def test_reads_stay_bounded_on_a_big_log(tmp_path):
    """Two 20 MB logs: a window in the middle keeps a few hundred lines, never the files."""
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    with open(a, "w") as fa, open(b, "w") as fb:
        for i in range(200_000):
            second = f"{i // 1000 // 60 % 60:02d}:{i // 1000 % 60:02d}.{i % 1000:03d}"
            fa.write(f"2026-01-02T03:{second}000Z  INFO a::main: request {i} " + "x" * 60 + "\n")
            fb.write(f"2026-01-02T03:{second}500Z  WARN b::main: request {i} " + "y" * 60 + "\n")
    job = JobLog([str(a), str(b)], {str(a): "a", str(b): "b"})
    tracemalloc.start()
    window = job.window_at_time(datetime(2026, 1, 2, 3, 1, 40, tzinfo=timezone.utc), before=100, after=100)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 4 << 20, peak  # the files are 40 MB
    assert len(window.lines) == 200
    anchor = window.lines[window.anchor]
    assert anchor.source == str(a) and anchor.line_no == 100_001 and "request 100000 " in anchor.text
    assert [line.source for line in window.lines[100:104]] == [str(a), str(b), str(a), str(b)]
    around = job.window_at_line(str(b), 150_000, before=1, after=1)  # b's line is half a millisecond after a's
    assert [(x.source, x.line_no) for x in around.lines] == [(str(a), 150_000), (str(b), 150_000)]
    assert around.anchor == 1


def test_line_reader_cuts_over_long_lines_and_reads_both_ways(tmp_path):
    path = tmp_path / "long.log"
    path.write_bytes(b"one\n" + b"z" * (MAX_LINE_BYTES * 3) + b"\nthree\nfour\npartial")
    reader = LineReader(str(path))
    lines = reader.forward(0, 1, 10)
    assert [len(x.data) for x in lines] == [3, MAX_LINE_BYTES, 5, 4]  # the last one is still being written
    assert [x.line_no for x in lines] == [1, 2, 3, 4]
    assert reader.offset_of_line(3) == lines[2].offset == 4 + MAX_LINE_BYTES * 3 + 1
    back = reader.backward(lines[3].offset, 4, 2)
    assert [(x.line_no, x.data[:5]) for x in back] == [(2, b"zzzzz"), (3, b"three")]
    assert reader.line_no_at(lines[3].offset) == 4 and reader.line_start(lines[2].offset + 2) == lines[2].offset
    assert reader.offset_of_line(6) is None
