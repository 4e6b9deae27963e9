"""pdwatch/events/raw_prometheus.py: a real ``logs/raw_prometheus.jsonl`` (the Dynamo capture kit's sweep,
``tests/data/real/sweeps/dynamo-agg-kv48-c1-16-rawprom``) read line by line into stats events, per endpoint;
the same file gzipped reads the same; a cut-off last line and garbage lines are skipped with a notice each."""

from __future__ import annotations

import gzip
import json
import shutil
from datetime import datetime, timedelta, timezone

import pytest

from pdwatch.events.raw_prometheus import MAX_TOLD, read_raw_prometheus
from pdwatch.events.recorded import read_scrape_file
from pdwatch.sources.discovery import evidence_source, split_source
from tests.conftest import DATA

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

JOB = next((DATA / "real" / "sweeps" / "dynamo-agg-kv48-c1-16-rawprom").glob("*/logs")).parent
RAW = JOB / "logs" / "raw_prometheus.jsonl"


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return [json.loads(line) for line in RAW.read_text().splitlines()]


@pytest.fixture(scope="module")
def read() -> tuple:
    return read_raw_prometheus(RAW)


def test_each_record_is_one_scrape_of_its_endpoint(read, records):
    events, notices, ports = read
    assert notices == []
    worker = [e for e in events if e.source == f"{RAW}#agg_w0"]
    frontend = [e for e in events if e.source == f"{RAW}#frontend_0"]
    assert len(worker) + len(frontend) == len(events)
    by_line = {no: r for no, r in enumerate(records, 1)}
    # one stats event per worker record (one engine), on the record's own line and at its own time
    assert [e.line_no for e in worker] == [no for no, r in by_line.items() if r["role"] == "agg"]
    assert all((e.ts - EPOCH) // timedelta(microseconds=1) == by_line[e.line_no]["timestamp_ns"] // 1000 for e in worker)
    assert {e.line_no for e in frontend} <= {no for no, r in by_line.items() if r["role"] == "frontend"}
    url_port = {r["role"]: int(r["endpoint_url"].rsplit(":", 1)[1].split("/")[0]) for r in records}
    assert ports == {f"{RAW}#agg_w0": url_port["agg"], f"{RAW}#frontend_0": url_port["frontend"]}


def test_the_worker_s_figures_are_those_its_records_hold(read, records):
    events, _, _ = read
    worker = {e.line_no: e for e in events if e.source.endswith("#agg_w0")}
    for no, record in enumerate(records, 1):
        if record["role"] != "agg":
            continue
        kv = next(float(line.rsplit(" ", 1)[1]) for line in record["text"].splitlines()
                  if line.startswith("vllm:kv_cache_usage_perc{"))
        assert worker[no].values["kv_usage_pct"] == pytest.approx(100 * kv)
    # vLLM's preemption counter: its increases between records, as a stats line would print them
    total = max(float(line.rsplit(" ", 1)[1]) for r in records if r["role"] == "agg"
                for line in r["text"].splitlines() if line.startswith("vllm:num_preemptions_total{"))
    assert total > 0
    assert sum(e.values.get("preemptions") or 0 for e in worker.values()) == pytest.approx(total)


def test_gz_reads_the_same_as_the_plain_file(read, tmp_path):
    gz = tmp_path / "raw_prometheus.jsonl.gz"
    with open(RAW, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    events, notices, ports = read_scrape_file(str(gz))
    plain, _, plain_ports = read
    assert notices == []
    assert [(e.source.replace(str(gz), "F"), e.line_no, e.ts, e.values) for e in events] == \
        [(e.source.replace(str(RAW), "F"), e.line_no, e.ts, e.values) for e in plain]
    assert {k.replace(str(gz), "F"): v for k, v in ports.items()} == \
        {k.replace(str(RAW), "F"): v for k, v in plain_ports.items()}


def test_a_cut_off_last_line_and_garbage_are_skipped_each_told_the_rest_read(read, tmp_path):
    lines = RAW.read_bytes().splitlines(keepends=True)
    bad = tmp_path / "raw_prometheus.jsonl"
    # line 3: garbage; line 6: a record whose exposition is broken; the last line cut off mid-record
    broken = json.loads(lines[4])
    broken["text"] = "vllm:num_requests_running{engine=\"0\" 3\n"
    body = lines[:2] + [b"\x00\x01garbage\n"] + lines[2:4] + [json.dumps(broken).encode() + b"\n"] + lines[5:]
    body[-1] = body[-1][: len(body[-1]) // 2]
    bad.write_bytes(b"".join(body))
    events, notices, _ = read_raw_prometheus(bad)
    assert notices[0] == f"{bad}:3: record skipped: not JSON (cut off?): Expecting value at column 1"
    assert notices[1].startswith(f"{bad}:6: record skipped: not a Prometheus exposition")
    assert notices[2].startswith(f"{bad}:{len(body)}: record skipped: not JSON (cut off?)")
    assert len(notices) == 3
    plain, _, _ = read
    # every other record is read: the same events, one line further down past the garbage
    kept = [(e.source.rsplit("#")[1], e.ts) for e in events]
    dropped = {json.loads(lines[4])["timestamp_ns"], json.loads(lines[-1])["timestamp_ns"]}
    expected = [(e.source.rsplit("#")[1], e.ts) for e in plain
                if round(e.ts.timestamp() * 1e9) // 1000 not in {d // 1000 for d in dropped}]
    assert kept == expected


def test_many_bad_lines_are_counted_not_told_one_by_one(tmp_path):
    bad = tmp_path / "raw_prometheus.jsonl"
    bad.write_bytes(b"not json\n" * (MAX_TOLD + 5) + RAW.read_bytes().splitlines(keepends=True)[0])
    events, notices, _ = read_raw_prometheus(bad)
    assert len(notices) == MAX_TOLD + 1
    assert notices[-1] == f"{bad}: 5 more record(s) skipped (not told one by one)"


def test_a_gz_cut_short_keeps_what_came_before_it(tmp_path):
    gz = tmp_path / "raw_prometheus.jsonl.gz"
    data = gzip.compress(RAW.read_bytes())
    gz.write_bytes(data[: len(data) // 2])
    events, notices, _ = read_raw_prometheus(gz)
    assert events and notices and "read stopped after line" in notices[-1]


def test_evidence_shows_the_file_and_its_line():
    assert split_source("logs/raw_prometheus.jsonl#decode_w0") == ("logs/raw_prometheus.jsonl", "decode_w0")
    assert evidence_source("logs/raw_prometheus.jsonl.gz#frontend_0") == "logs/raw_prometheus.jsonl.gz"
    assert evidence_source("x.metrics.txt#port=8421") == "x.metrics.txt#port=8421"  # not a raw_prometheus record
    assert evidence_source("logs/vm_agg_w0.out") == "logs/vm_agg_w0.out"


def test_a_line_longer_than_the_cap_is_skipped_its_rest_too_and_the_next_read(tmp_path, monkeypatch):
    from pdwatch.sources import jsonl
    lines = RAW.read_bytes().splitlines(keepends=True)
    short = min(range(len(lines)), key=lambda i: len(lines[i]))
    long = max(range(len(lines)), key=lambda i: len(lines[i]))
    cap = len(lines[short]) + 1
    assert len(lines[long]) > 3 * cap  # the cap falls inside it more than once
    path = tmp_path / "raw_prometheus.jsonl"
    path.write_bytes(lines[long] + lines[short])
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", cap)
    events, notices, _ = read_raw_prometheus(path)
    assert notices == [f"{path}:1: record skipped: longer than {cap} bytes (its rest skipped)"]
    assert {e.line_no for e in events} <= {2}
