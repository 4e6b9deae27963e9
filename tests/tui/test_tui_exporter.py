"""watch/replay --metrics-port: pdwatch's view scraped with prometheus-client's parser, on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import regex
from prometheus_client.parser import text_string_to_metric_families

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "prefill-bound"


def _scrape(url: str) -> dict[str, list]:
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_replay_serves_metrics_and_findings_on_loopback():
    proc = subprocess.Popen([sys.executable, "-m", "pdwatch", "replay", str(SAMPLE), "--speed", "10x",
                             "--start", "2026-05-29T14:01:15Z", "--headless", "--metrics-port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        m = regex.search(r"serving metrics on (http://(127\.0\.0\.1):(\d+)/metrics)", line)
        assert m, line
        url = m[1]
        deadline, families = time.monotonic() + 40, {}
        while time.monotonic() < deadline:
            families = _scrape(url)
            if any(s.labels.get("rule") == "prefill_bound" and s.value == 1
                   for s in families.get("pdwatch_finding_active", [])):
                break
            time.sleep(0.3)
        running = families["pdwatch_engine_running"]
        assert {s.labels["endpoint"] for s in running} >= {"prefill_w0", "decode_w0"}
        assert {s.labels["role"] for s in running} == {"prefill", "decode"}
        assert all(0 <= s.value <= 1 for s in families["pdwatch_engine_kv_usage_ratio"])
        kinds = {s.labels["kind"] for s in families["pdwatch_endpoint_tokens_per_second"]}
        assert kinds == {"prompt", "generation"}
        firing = {s.labels["endpoint"] for s in families["pdwatch_finding_active"]
                  if s.labels["rule"] == "prefill_bound" and s.value == 1}
        assert firing == {"prefill_w0", "prefill_w1", "prefill_w2", "prefill_w3"}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_taken_port_is_a_one_line_error():
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "pdwatch", "replay", str(SAMPLE), "--speed", "max",
                                 "--headless", "--metrics-port", str(port)], capture_output=True, timeout=60)
    assert result.returncode == 2 and result.stderr.decode().count("\n") == 1
