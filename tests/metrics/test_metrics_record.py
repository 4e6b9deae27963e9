"""pdwatch record: scrapes of a local server saved in the recorded format read back as the same events."""

from __future__ import annotations

import argparse
import socket
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from metrics_server import serve  # noqa: E402

from pdwatch.commands import record  # noqa: E402
from pdwatch.errors import UsageError  # noqa: E402
from pdwatch.events.recorded import read_recorded, split_scrapes  # noqa: E402
from pdwatch.events.scraper import MetricsScraper  # noqa: E402

T0 = datetime(2026, 11, 29, 9, 0, 0, 123000, tzinfo=timezone.utc)


def body(prompt: float, gen: float, running: int) -> str:
    return (f'# TYPE vllm:num_requests_running gauge\n'
            f'vllm:num_requests_running{{engine="0",model_name="m"}} {running}\n'
            f'vllm:num_requests_running{{engine="1",model_name="m"}} {running + 1}\n'
            f'# TYPE vllm:prompt_tokens_total counter\n'
            f'vllm:prompt_tokens_total{{engine="0",model_name="m"}} {prompt}\n'
            f'vllm:prompt_tokens_total{{engine="1",model_name="m"}} {prompt * 2}\n'
            f'# TYPE vllm:generation_tokens_total counter\n'
            f'vllm:generation_tokens_total{{engine="0",model_name="m"}} {gen}\n'
            f'vllm:generation_tokens_total{{engine="1",model_name="m"}} {gen}\n')


def run_record(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    record.register(parser.add_subparsers())
    args = parser.parse_args(["record", *argv])
    return args.run(args)


def comparable(events):
    return [(e.ts, e.engine, e.values) for e in events]


def test_recorded_file_reads_back_as_the_live_events(tmp_path):
    bodies = [body(100 * i, 10 * i, i) for i in range(1, 5)] + [body(5, 1, 0)]  # ends with a reset
    clock_times = iter(T0 + timedelta(seconds=2 * i) for i in range(10))
    with serve(bodies) as (base, _):
        scraper = MetricsScraper([base], timeout=2, clock=lambda: next(clock_times))
        files = {scraper.urls[0]: tmp_path / record.file_name(scraper.urls[0])}
        live = [ev for _ in bodies for ev in record.record_once(scraper, files)]
    assert len(live) == 2 * len(bodies)
    path = next(iter(files.values()))
    back, errors = read_recorded(path)
    assert errors == []
    assert comparable(back) == comparable(live)
    assert back[-1].values["prompt_tps"] is None  # the reset survives the round trip
    headers = [line for line in path.read_text().splitlines() if line.startswith("# =====")]
    port = int(base.rsplit(":", 1)[1])
    assert headers[0] == f"# ===== record t={T0.timestamp():.3f} (2026-11-29T09:00:00.123Z) port={port} ====="
    assert len(headers) == 5


def test_record_command_against_local_server(tmp_path, capsys):
    with serve([body(100 * i, 10 * i, i) for i in range(1, 50)]) as (base, server):
        code = run_record([base.removeprefix("http://"), "--out", str(tmp_path / "rec"),
                           "--interval", "0.05", "--duration", "0.4"])
    assert code == 0
    (path,) = (tmp_path / "rec").iterdir()
    assert path.name == f"127.0.0.1_{base.rsplit(':', 1)[1]}.metrics.txt"
    scrapes = split_scrapes(path.read_text())
    assert 3 <= len(scrapes) == len(server.served)
    events, errors = read_recorded(path)
    assert errors == [] and len(events) == 2 * len(scrapes)
    assert events[0].values["prompt_tps"] is None
    assert all(e.values["prompt_tps"] > 0 for e in events[2:])
    assert f"{len(scrapes)} scrape(s)" in capsys.readouterr().err


def test_record_unreachable_url_exits_1_and_says_why(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = run_record([f"127.0.0.1:{port}", "--out", str(tmp_path), "--interval", "0.05", "--duration", "0.1",
                       "--timeout", "1"])
    assert code == 1
    err = capsys.readouterr().err
    assert f"127.0.0.1:{port}/metrics" in err and "0 scrape(s)" in err


def test_record_rejects_bad_urls_and_values(tmp_path):
    with pytest.raises(UsageError):
        run_record(["ftp://x/metrics", "--out", str(tmp_path)])
    with pytest.raises(UsageError):
        run_record(["127.0.0.1:1", "--out", str(tmp_path), "--interval", "0"])


def test_a_body_line_that_looks_like_a_header_cannot_split_a_scrape():
    text = body(1, 1, 1) + "# ===== fake t=1 (x) port=9 =====\n"
    block = record.scrape_block(T0, 8000, text).decode()
    assert len(split_scrapes(block)) == 1


def test_file_names():
    assert record.file_name("http://10.0.0.1:8000/metrics") == "10.0.0.1_8000.metrics.txt"
    assert record.file_name("https://host/vllm/metrics") == "host_443_vllm_metrics.metrics.txt"
