"""http(s):// /metrics URLs as live sources, against a real http.server on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pdwatch.cli import main
from pdwatch.model.deployment import DeploymentModel, name_from_file
from pdwatch.errors import UsageError
from pdwatch.events.stream import EventStream
from pdwatch.views.exporter import PdwatchExporter
from pdwatch.sources import ScrapeBlock, SourceSet
from pdwatch.model.store import Store
from pdwatch.model.topology_file import load_topology

from .helpers import notices, poll_until


class Counter:
    """A vLLM-like page whose prompt counter grows by 100 per scrape."""

    def __init__(self) -> None:
        self.scrapes = 0

    def body(self) -> str:
        self.scrapes += 1
        return ("# TYPE vllm:num_requests_running gauge\n"
                'vllm:num_requests_running{engine="0",model_name="m"} 3\n'
                "# TYPE vllm:kv_cache_usage_perc gauge\n"
                'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25\n'
                "# TYPE vllm:prompt_tokens_total counter\n"
                f'vllm:prompt_tokens_total{{engine="0",model_name="m"}} {100 * self.scrapes}\n')


@contextmanager
def metrics_server(page: Counter, port: int = 0):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            data = page.body().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def scrapes(items) -> list[ScrapeBlock]:
    return [it for it in items if isinstance(it, ScrapeBlock)]


def test_a_url_gives_stats_events_with_counter_rates():
    page = Counter()
    with metrics_server(page) as port:
        url = f"http://127.0.0.1:{port}/metrics"
        sources = SourceSet([f"http://127.0.0.1:{port}"], follow=True, scrape_interval=0.1)
        stream = EventStream(sources)
        try:
            items = poll_until(sources.poll, lambda it: len(scrapes(it)) >= 2, 15)
        finally:
            sources.close()
    assert sources.sources == [url] and sources.sources_up == {url: True}
    assert [n.kind for n in notices(items)] == ["opened"]
    events = [e for block in scrapes(items)[:2] for e in stream.events_of(block)]
    assert [(e.kind, e.source, e.engine, e.line_no) for e in events] == [("stats", url, 0, 1), ("stats", url, 0, 2)]
    assert events[0].values["running"] == 3 and events[0].values["kv_usage_pct"] == 25.0
    assert events[0].values["prompt_tps"] is None and events[1].values["prompt_tps"] > 0  # one rate per URL


def test_a_server_that_goes_down_and_comes_back_gives_one_notice_each_way():
    page = Counter()
    with metrics_server(page) as port:
        url = f"http://127.0.0.1:{port}/metrics"
        sources = SourceSet([url], follow=True, scrape_interval=0.1)
        items = poll_until(sources.poll, lambda it: scrapes(it), 15)
    try:
        items += poll_until(sources.poll, lambda it: notices(it, "down"), 15)
        assert sources.sources_up == {url: False}
        time.sleep(0.5)  # several failed scrapes: still one notice
        items += sources.poll()
        with metrics_server(page, port):
            items += poll_until(sources.poll, lambda it: notices(it, "up"), 15)
            time.sleep(0.3)
            items += sources.poll()
    finally:
        sources.close()
    # A scrape under way as the port closes may see its connection reset before the refusals:
    # another cause, told once too (tests/sources/test_scrape_failures.py has each cause).
    said = [n for n in notices(items) if "connection reset by the server" not in n.message]
    assert len(notices(items)) - len(said) <= 1
    assert [n.kind for n in said] == ["opened", "down", "up"]
    assert said[1].message == (f"{url}: scrape failed: connection refused by 127.0.0.1:{port} (no server listening "
                               f"on that port); retrying every 0.1 s")


def test_the_exporter_shows_whether_a_url_is_up():
    page = Counter()
    with metrics_server(page) as port:
        url = f"http://127.0.0.1:{port}/metrics"
        sources = SourceSet([url], follow=True, scrape_interval=0.1)
        try:
            poll_until(sources.poll, lambda it: scrapes(it), 15)
        finally:
            sources.close()
    exporter = PdwatchExporter()
    exporter.update(Store(DeploymentModel()), sources_up=sources.sources_up)
    assert f'pdwatch_source_up{{source="{url}"}} 1.0' in exporter.render()


@pytest.mark.parametrize("command", [["parse"], ["report"], ["replay", "--headless"]])
def test_replay_commands_refuse_a_url_in_one_line(command, capsys):
    assert main([*command, "logs/", "http://127.0.0.1:9/metrics"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (
        "pdwatch: error: http://127.0.0.1:9/metrics: a URL is a live source: use pdwatch watch URL or "
        "pdwatch parse --follow URL (pdwatch record URL --out DIR saves scrapes that report and replay read)\n")


def test_parse_follow_prints_stats_from_a_url():
    page = Counter()
    with metrics_server(page) as port:
        proc = subprocess.Popen([sys.executable, "-m", "pdwatch", "parse", "--follow", "--scrape-interval", "0.2",
                                 f"http://127.0.0.1:{port}/metrics"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            line = proc.stdout.readline()  # blocks until the first event (or the process ends)
        finally:
            proc.kill()
            proc.wait(10)
            proc.stdout.close()
            proc.stderr.close()
    assert b'"kind":"stats"' in line.replace(b" ", b"") and f"127.0.0.1:{port}".encode() in line


def test_a_bad_scrape_interval_is_a_usage_error():
    with pytest.raises(UsageError, match="--scrape-interval 0"):
        SourceSet(["http://127.0.0.1:9"], follow=True, scrape_interval=0)


def test_a_log_and_its_url_are_one_endpoint_via_the_topology_file(tmp_path):
    topology = tmp_path / "topology.yaml"
    topology.write_text("endpoints:\n"
                        "  - {name: decode_w0, role: decode, globs: ['logs/*_decode_w0.out'],"
                        " urls: ['http://node7:8000']}\n"
                        "  - {name: prefill_w0, role: prefill, globs: ['ssh://node3/logs/*_prefill_w0.out']}\n")
    model = DeploymentModel(load_topology(str(topology)))
    log = model.endpoint_of("logs/n7_decode_w0.out")
    assert model.endpoint_of("http://node7:8000/metrics") is log and log.name == "decode_w0"
    assert model.endpoint_of("node3:/logs/n3_prefill_w0.out").name == "prefill_w0"
    assert name_from_file("http://node8:8000/metrics") == ("node8:8000", None)  # no topology: host:port
    assert DeploymentModel().endpoint_of("https://node8/metrics").name == "node8:443"


def test_topology_urls_are_checked(tmp_path):
    topology = tmp_path / "bad.yaml"
    topology.write_text("endpoints:\n  - {name: d, role: decode, urls: ['ftp://x/metrics']}\n")
    with pytest.raises(UsageError, match=r"endpoints\[0\]: 'ftp://x/metrics': expected http://HOST:PORT/metrics"):
        load_topology(str(topology))


def test_watching_a_log_and_its_url_counts_the_endpoint_once(tmp_path):
    """The scrapes fill in until the endpoint's own stats lines come; then the lines win, as in report."""
    from pdwatch.session.live import LiveSession

    def eventually(check, timeout: float = 20.0) -> bool:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    page = Counter()
    log = tmp_path / "n7_decode_w0.out"
    log.write_text("")
    with metrics_server(page) as port:
        url = f"http://127.0.0.1:{port}/metrics"
        topology = tmp_path / "topology.yaml"
        topology.write_text(f"endpoints:\n  - {{name: decode_w0, role: decode, globs: ['{log}'], urls: ['{url}']}}\n")
        session = LiveSession([str(log), url], mode="watch", specs=load_topology(str(topology)),
                              sources=SourceSet([str(log), url], follow=True, scrape_interval=0.2))
        try:
            def stats_sources() -> set[str]:
                session.ingest()
                session.tick()
                return set(session.store.stats("decode_w0")["source"])

            assert eventually(lambda: stats_sources() == {url})
            endpoint = session.store.model.endpoints["decode_w0"]
            assert endpoint.facts.get("stats_from_metrics") is True
            line = ("(APIServer pid=9) INFO 11-29 09:01:{s:02d} [loggers.py:335] Engine 000: Avg prompt throughput: "
                    "5.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, "
                    "GPU KV cache usage: 25.0%, Prefix cache hit rate: 0.0%\n")
            with log.open("a") as f:
                f.write(line.format(s=38))
            assert eventually(lambda: str(log) in stats_sources())
            # The rows the scrapes filled in are gone with the first line: one source, one cadence.
            assert set(session.store.stats("decode_w0")["source"]) == {str(log)}
            scrapes_before = page.scrapes
            with log.open("a") as f:
                f.write("".join(line.format(s=s) for s in (39, 40, 41)))
            assert eventually(lambda: (session.ingest(), page.scrapes >= scrapes_before + 3)[1])
            assert eventually(lambda: len(session.store.stats("decode_w0")) == 4 if stats_sources() else False)
            stats = session.store.stats("decode_w0")
            assert set(stats["source"]) == {str(log)}  # the scrapes after the first stats line were not added
            assert endpoint.facts["stats_interval_s"] == 1.0  # the log's 1 s, not a mix with the 0.2 s scrapes
            assert "stats_from_metrics" not in endpoint.facts
        finally:
            session.close()
