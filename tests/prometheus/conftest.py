"""One real Prometheus for the module's tests, scraping real HTTP servers that replay real vLLM scrapes.

``replayed`` starts, on 127.0.0.1, one ``PageServer`` per recorded vLLM server (kv_pressure:
one engine; data_parallel_2: two engines behind one /metrics; pd_pair: a prefill and a
decode server, labelled with their role in the scrape config), a ``LiveCounter`` that never
stops (for ``watch``), and a ``prometheus`` scraping all of them every 0.5 s; beside it a
second ``prometheus`` that refuses any query loading more than 5 samples (a server-side limit). It waits until
every recorded page was served (about 10 s of wall time, once per test session), then the
tests ask that Prometheus. Skipped, with the reason, when the ``prometheus`` binary is absent.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pdwatch.events.recorded import split_scrapes

from .prom_helpers import NEEDS_PROMETHEUS, PROMETHEUS, PageServer, PrometheusServer

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "real" / "captures"
SCRAPE = "500ms"


def recorded_pages(capture: str, port: int | None = None) -> list[str]:
    scrapes = split_scrapes((CAPTURES / capture / "metrics.txt").read_text())
    return [s.body for s in scrapes if port is None or s.port == port]


class LiveCounter:
    """A vLLM-like page that changes on every scrape, forever (a server still running)."""

    def __init__(self) -> None:
        self.scrapes = 0
        counter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                counter.scrapes += 1
                n = counter.scrapes
                data = ("# TYPE vllm:num_requests_running gauge\n"
                        f'vllm:num_requests_running{{engine="0",model_name="m"}} {n % 7}\n'
                        "# TYPE vllm:num_requests_waiting gauge\n"
                        'vllm:num_requests_waiting{engine="0",model_name="m"} 0\n'
                        "# TYPE vllm:generation_tokens_total counter\n"
                        f'vllm:generation_tokens_total{{engine="0",model_name="m"}} {100 * n}\n').encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Replayed:
    prom: PrometheusServer
    servers: dict[str, PageServer]
    live: LiveCounter
    limited: PrometheusServer  # scrapes the live page, answers no query over 5 samples
    roles: dict[str, str] = field(default_factory=dict)

    def selector(self, name: str) -> str:
        return f'{{instance="{self.servers[name].address}"}}'

    def source(self, name: str) -> str:
        return f"{self.prom.source}?match={self.selector(name)}"


@pytest.fixture(scope="session")
def replayed():
    if not PROMETHEUS:
        pytest.skip(NEEDS_PROMETHEUS)
    pd = split_scrapes((CAPTURES / "pd_pair" / "metrics.txt").read_text())
    prefill_port, decode_port = 34517, 54655  # pd_pair/README.md: prefill.log and decode.log's ports
    assert {s.port for s in pd} == {prefill_port, decode_port}
    servers = {
        # idle, low load, 10 scrapes of the high phase (a queue on a full cache), idle again
        "kv_pressure": PageServer(recorded_pages("kv_pressure"), [(0, 3), (1, 3), (2, 10), (3, 3)]),
        "data_parallel_2": PageServer(recorded_pages("data_parallel_2"), [(0, 2), (1, 2), (2, 8), (3, 2)]),
        "prefill": PageServer(recorded_pages("pd_pair", prefill_port), [(0, 2), (1, 3), (2, 6), (3, 2)]),
        "decode": PageServer(recorded_pages("pd_pair", decode_port), [(0, 2), (1, 3), (2, 6), (3, 2)]),
    }
    roles = {"prefill": "prefill", "decode": "decode"}
    live = LiveCounter()
    targets = [("vllm", s.address, {"role": roles[name]} if name in roles else {}) for name, s in servers.items()]
    targets.append(("live", live.address, {}))
    prom = PrometheusServer(targets, scrape_interval=SCRAPE)
    limited = PrometheusServer([("live", live.address, {})], scrape_interval=SCRAPE,
                               extra_args=("--query.max-samples=5",))
    try:
        deadline = time.monotonic() + 60
        for server in servers.values():
            assert server.done.wait(max(0.1, deadline - time.monotonic())), \
                f"the recorded pages were not all scraped in time: {prom.logs()}"
        time.sleep(1.0)  # the failed scrape after the last page marks its series stale
        yield Replayed(prom, servers, live, limited, roles)
    finally:
        prom.stop()
        limited.stop()
        for server in servers.values():
            server.close()
        live.close()
