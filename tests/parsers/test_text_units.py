"""Cleaning, envelopes, time resolution and repr reading on hand-made edge cases."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pdwatch.parsers.cleaning import clean_line, clean_raw
from pdwatch.parsers.envelope import engine_from_proc, split_envelope
from pdwatch.parsers.pyrepr import ReprError, parse_args_dict, parse_repr
from pdwatch.parsers.timeinfo import TimeResolver, zone
from tests.conftest import scan


@pytest.mark.parametrize("raw,want", [
    ("\x1b[1;36m(APIServer pid=1)\x1b[0;0m INFO", "(APIServer pid=1) INFO"),
    ("title\x1b]0;pwned\x07 after", "title after"),
    ("clip\x1b]52;c;ZWNobyBoaQ==\x1b\\ done", "clip done"),
    ("move\x1b[2J\x1b[H\x1b[10;20Hhere", "movehere"),
    ("torn \x1b[3", "torn 3"),  # an escape cut by a torn write: no ESC survives
    ("bar 10%\rbar 50%\rbar 100%", "bar 100%"),
    ("line with crlf\r", "line with crlf"),
    ("nul\x00 bell\x07 del\x7f", "nul bell del"),
    ("tab\tkept", "tab\tkept"),
])
def test_clean_line(raw, want):
    assert clean_line(raw) == want


def test_invalid_utf8_is_replaced_not_fatal():
    assert clean_raw(b"ok \xff\xfe bytes") == "ok \ufffd\ufffd bytes"


@pytest.mark.parametrize("proc,engine", [
    ("EngineCore_DP3", 3), ("EngineCore_0", 0), ("Worker_DP1_TP3_EP11", 1), ("EngineCore", None),
    ("APIServer", None), ("VllmWorker-0", None), (None, None),
])
def test_engine_from_process_name(proc, engine):
    assert engine_from_proc(proc) == engine


def test_envelopes():
    env = split_envelope("(EngineCore_DP2 pid=7) WARNING 10-12 09:45:02 [nixl_connector.py:1125] hello")
    assert (env.style, env.proc, env.pid, env.level, env.month_day, env.clock, env.msg) == \
        ("vllm", "EngineCore_DP2", 7, "WARNING", "10-12", "09:45:02", "hello")
    env = split_envelope("(EngineCore_0 pid=1159) (RayWorkerWrapper pid=345, ip=10.42.9.225) INFO 09-10 23:27:16 "
                         "[__init__.py:241] detected cuda. [repeated 2x across cluster] (Ray deduplicates logs)")
    assert env.proc == "EngineCore_0" and env.msg == "detected cuda."
    env = split_envelope("INFO 02-05 08:00:00 loggers.py:78] Avg prompt")
    assert env.style == "vllm" and env.msg == "Avg prompt"
    env = split_envelope("VLLMPFX INFO 02-05 08:00:00 [a.py:1] prefixed")
    assert env.style == "vllm" and env.msg == "prefixed"
    env = split_envelope("2026-03-31T18:25:00.000001Z  WARN dynamo_llm::kv_router::jetstream: Failed to delete")
    assert (env.style, env.level, env.target, env.msg) == ("dynamo", "WARNING", "dynamo_llm::kv_router::jetstream",
                                                          "Failed to delete")
    env = split_envelope("2026-03-31T18:25:00.123456789Z (APIServer pid=3) INFO 03-31 18:25:00 [x.py:1] behind docker")
    assert env.style == "vllm" and env.iso.startswith("2026-03-31T18:25:00") and env.msg == "behind docker"
    env = split_envelope('INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 200 OK')
    assert env.style == "uvicorn" and env.level == "INFO"
    env = split_envelope("just text: no header")
    assert env.style == "bare" and env.level is None and env.msg == "just text: no header"


def test_year_from_a_dated_line_in_the_same_file():
    data = (b"INFO 12-31 23:59:50 [a.py:1] Running: 1 reqs, Waiting: 0 reqs\n"
            b"2027-01-01T00:00:05.000000Z  INFO dynamo_llm::x: new year\n"
            b"INFO 01-01 00:00:10 [a.py:1] Running: 2 reqs, Waiting: 0 reqs\n")
    stats = [e for e in scan(data, year=None) if e.kind == "stats"]
    assert [e.ts.isoformat() for e in stats] == ["2026-12-31T23:59:50+00:00", "2027-01-01T00:00:10+00:00"]


def test_year_rolls_forward_never_back():
    times = TimeResolver(year=2025)
    assert times.vllm("12-31", "23:59:59").year == 2025
    assert times.vllm("01-01", "00:00:01").year == 2026
    assert times.vllm("01-01", "00:00:02").year == 2026


def test_year_from_mtime_and_its_month():
    jan = datetime(2027, 1, 5, tzinfo=timezone.utc).timestamp()
    assert TimeResolver(mtime=jan).vllm("12-30", "10:00:00").year == 2026  # the log can't be newer than its mtime
    assert TimeResolver(mtime=jan).vllm("01-02", "10:00:00").year == 2027


def test_time_zone_applies_to_vllm_local_time():
    ts = TimeResolver(year=2026, tz=zone("Europe/Berlin")).vllm("07-01", "12:00:00")
    assert ts.isoformat() == "2026-07-01T12:00:00+02:00"
    with pytest.raises(ValueError):
        zone("Not/AZone")


def test_impossible_date_gives_no_timestamp():
    assert TimeResolver(year=2026).vllm("02-30", "10:00:00") is None


def test_repr_reader_never_evaluates():
    assert parse_repr("{'a': [1, 2.5, None, True], 'b': Cfg(x='y', z=-3), 'c': <Mode.FULL: 2>}") == \
        {"a": [1, 2.5, None, True], "b": {"x": "y", "z": -3}, "c": "Mode.FULL"}
    with pytest.raises(ReprError):
        parse_repr("{'a': __import__('os').system('echo pwned')")  # unbalanced: fails, never runs
    assert parse_repr("__import__('os').system('x')") == ["x"]  # a call is read as data, not run
    assert parse_args_dict("{'max_num_seqs': 8, 'api_server_count': 4, 'kv_transfer_config': KVTransferConfig("
                           "kv_role='kv_consumer'") == {"max_num_seqs": 8, "api_server_count": 4,
                                                        "kv_transfer_config": {"kv_role": "kv_consumer"}}


def test_deeply_nested_repr_is_an_error_not_a_crash():
    try:
        parse_repr("[" * 100000 + "]" * 100000)
    except ReprError:
        pass
