"""parsers/raw_prometheus.py on real records: the lines of srt-slurm's ``logs/raw_prometheus.jsonl`` written
by the Dynamo capture kit's sweep (``tests/data/real/sweeps/dynamo-agg-kv48-c1-16-rawprom``, README there), plus
the ways a real file goes wrong: its last line cut off by a job killed mid-write, and bytes that are not a record."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from pdwatch.parsers.exposition import events_from_exposition
from pdwatch.parsers.raw_prometheus import (RecordError, endpoint_name, header, parse_record, worker_identity,
                                            worker_index)
from tests.conftest import DATA

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

RAW = next((DATA / "real" / "sweeps" / "dynamo-agg-kv48-c1-16-rawprom").glob("*/logs/raw_prometheus.jsonl"))


@pytest.fixture(scope="module")
def lines() -> list[bytes]:
    return RAW.read_bytes().splitlines(keepends=True)


def test_every_real_line_is_a_record_of_the_frontend_or_the_worker(lines):
    records = [parse_record(line, no) for no, line in enumerate(lines, 1)]
    assert {(r.role, r.worker_index, r.endpoint) for r in records} == {("frontend", 0, "frontend_0"),
                                                                        ("agg", 0, "agg_w0")}
    first = json.loads(lines[0])
    r = records[0]
    assert r.line_no == 1 and r.ts.tzinfo is timezone.utc
    assert (r.ts - EPOCH) // timedelta(microseconds=1) == first["timestamp_ns"] // 1000  # exact to the µs
    assert r.endpoint_url == first["endpoint_url"] and r.port == int(first["endpoint_url"].rsplit(":", 1)[1].split("/")[0])
    assert r.text == first["text"]
    # each endpoint's records in time order; across endpoints not always (a record is stamped before its GET and
    # written after the answer: a slow answer puts it after a later-stamped one of the other process)
    for endpoint in ("frontend_0", "agg_w0"):
        own = [r.ts for r in records if r.endpoint == endpoint]
        assert own == sorted(own)
    assert any(later.ts < earlier.ts for earlier, later in zip(records, records[1:]))
    # the worker's records carry vLLM's series, the frontend's Dynamo's
    worker = next(r for r in records if r.role == "agg")
    assert "vllm:kv_cache_usage_perc" in worker.text and "vllm:num_preemptions_total" in worker.text
    frontend = next(r for r in records if r.role == "frontend")
    assert "dynamo_frontend_" in frontend.text


def test_a_worker_record_becomes_stats_events_whose_text_names_the_endpoint(lines):
    record = next(parse_record(line, no) for no, line in enumerate(lines, 1) if b'"role": "agg"' in line)
    events = events_from_exposition(record.text, source="x#agg_w0", ts=record.ts, line_no=record.line_no,
                                    header=header(record))
    assert [e.kind for e in events] == ["stats"] and events[0].line_no == record.line_no
    assert events[0].text.startswith(f"raw_prometheus agg_w0 t={record.ts.timestamp():.3f}")
    assert 0 <= events[0].values["kv_usage_pct"] <= 100


def test_a_cut_off_last_line_is_an_error_that_says_so(lines):
    cut = lines[-1][: len(lines[-1]) // 2]
    with pytest.raises(RecordError, match="not JSON \\(cut off\\?\\)"):
        parse_record(cut, len(lines))


@pytest.mark.parametrize("garbage, why", [
    (b"\x00\x00\x00\x00", "not JSON"),
    (b"nanobind: leaked 3 instances!\n", "not JSON"),
    (b"[1, 2]\n", "not a JSON object"),
    (b'{"timestamp_ns": "soon", "role": "agg", "worker_id": 0, "text": ""}', "no timestamp_ns"),
    (b'{"timestamp_ns": 1, "role": "router", "worker_id": 0, "text": ""}', "role 'router'"),
    (b'{"timestamp_ns": 1, "role": "decode", "text": ""}', "no worker_id"),
    (b'{"timestamp_ns": 1, "role": "decode", "worker_id": ["node1"], "text": ""}', "neither an index nor a node"),
    (b'{"timestamp_ns": 1, "role": "decode", "worker_id": true, "text": ""}', "neither an index nor a node"),
    (b'{"timestamp_ns": 1, "role": "decode", "worker_id": 0}', "no text"),
    (b"   \n", "empty line"),
])
def test_garbage_is_an_error_not_a_crash(garbage, why):
    with pytest.raises(RecordError, match=why.replace("(", "\\(").replace(")", "\\)")):
        parse_record(garbage, 7)


@pytest.mark.parametrize("worker_id, index", [(0, 0), (3, 3), ("0", 0), ("decode_w1", 1), ("frontend_0", 0),
                                               ("agg_w12", 12), ("w2", 2)])
def test_worker_id_as_an_index(worker_id, index):
    assert worker_index(worker_id) == index


def test_worker_id_as_srt_slurm_writes_it_the_node_and_null_for_the_frontend():
    # srtctl/analysis/metrics_scraper.py: "worker_id": process.node for workers (an agg worker's role "decode"),
    # None for the frontend; the URL is the node's address and the worker's system port
    worker = parse_record(b'{"timestamp_ns": 1796663645987273165, "endpoint_url": "http://10.0.0.7:8081/metrics", '
                          b'"role": "decode", "worker_id": "node9", "text": "x 1\\n"}', 4)
    assert (worker.worker_index, worker.node, worker.endpoint) == (None, "node9", "decode@node9:8081")
    assert worker_identity("gpu-node-01") == (None, "gpu-node-01")
    frontend = parse_record(b'{"timestamp_ns": 1796663645987273165, "endpoint_url": "http://10.0.0.7:8000/metrics", '
                            b'"role": "frontend", "worker_id": null, "text": ""}', 5)
    assert frontend.endpoint == "frontend_0"
    anonymous = parse_record(b'{"timestamp_ns": 1, "endpoint_url": "http://10.0.0.8:8082/metrics", '
                             b'"role": "prefill", "worker_id": null, "text": ""}', 6)
    assert anonymous.endpoint == "prefill@10.0.0.8:8082"


def test_endpoint_names_are_those_of_the_processes_logs():
    assert endpoint_name("decode", 1) == "decode_w1"  # <node>_decode_w1.out
    assert endpoint_name("prefill", 0) == "prefill_w0"
    assert endpoint_name("agg", 0) == "agg_w0"
    assert endpoint_name("frontend", 0) == "frontend_0"  # <node>_frontend_0.out
    record = parse_record(b'{"timestamp_ns": 1796400463465000000, "endpoint_url": "", "role": "aggregated", '
                          b'"worker_id": 0, "text": "", "error": "URLError: refused"}', 1)
    assert record.role == "agg" and record.error == "URLError: refused" and record.port is None
