"""``pdwatch parse``'s JSON line is ``Event.to_json_dict`` written by orjson, whatever shortcut
the renderer takes (a UTC stamp left to orjson, bytes end to end)."""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import orjson
import pytest

from pdwatch.parsers import Event
from pdwatch.commands import parse

_STAMPS = [
    None,
    datetime(2026, 3, 31, 18, 0, 1, tzinfo=timezone.utc),
    datetime(2026, 3, 31, 18, 0, 1, 5, tzinfo=timezone.utc),
    datetime.fromisoformat("2026-03-31T18:01:11.356277Z"),
    datetime(1, 1, 1, tzinfo=timezone.utc),
    datetime(2026, 3, 31, 18, 0, 1, 120000, tzinfo=ZoneInfo("Europe/Paris")),
    datetime(2026, 3, 31, 18, 0, 1, tzinfo=timezone(timedelta(hours=5, minutes=30, seconds=15))),
]


def _reference(event: Event) -> bytes:
    return orjson.dumps(event.to_json_dict(), option=orjson.OPT_APPEND_NEWLINE)


@pytest.mark.parametrize("ts", _STAMPS)
@pytest.mark.parametrize("end_line_no", [None, 12])
def test_a_line_is_to_json_dict_as_orjson_writes_it(ts, end_line_no):
    event = Event("stats", "a.log", 10, ts, 0, "INFO", {"running": 3, "kv_usage_pct": float("nan"), "model": "ü"},
                  end_line_no, "text")
    assert parse._jsonl_bytes(event) == _reference(event)
    assert parse._jsonl_line(event) == _reference(event).decode()


def test_an_event_orjson_cannot_write_falls_back_to_json():
    event = Event("args", "a.log", 1, datetime(2026, 1, 1, tzinfo=timezone.utc), None, "INFO",
                  {"args": {"seed": 1 << 70, "ratio": float("inf")}})
    line = parse._jsonl_bytes(event)
    assert json.loads(line) == {**json.loads(json.dumps(event.to_json_dict(), default=str).replace("Infinity", "null")),
                                "args": {"seed": 1 << 70, "ratio": None}}
    assert json.loads(line)["ts"] == "2026-01-01T00:00:00+00:00"


def test_rendered_bytes_go_to_the_binary_stream_after_pending_text():
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", write_through=False)
    out.write("before\n")
    write = parse._chunk_writer(out)
    write(b'{"a":1}\n')
    write("table line\n")
    out.flush()
    assert raw.getvalue() == b'before\n{"a":1}\ntable line\n'
    text = io.StringIO()
    parse._chunk_writer(text)(b'{"b":"\xc3\xbc"}\n')
    assert text.getvalue() == '{"b":"ü"}\n'
