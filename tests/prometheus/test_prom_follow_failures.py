"""A watched Prometheus behind a reverse proxy: the proxy's 502, then nothing listening, then the
server again. Each cause is told when it changes, and the recovery once (the real Prometheus of
the ``replayed`` fixture serves the answers the proxy passes on)."""

from __future__ import annotations

import time

from pdwatch.sources import PrometheusSource, SampleBlock, SourceNotice

from tests.sources.http_faults import Answer, FaultServer, Forward

INTERVAL = 0.2


def test_each_change_of_cause_is_told_and_recovery_once(replayed):
    proxy = FaultServer(Forward(replayed.prom.url))
    name = f"prom+http://127.0.0.1:{proxy.port}"
    source = PrometheusSource(f'{name}?match={{job="live"}}', follow=True, interval=INTERVAL, timeout=5)
    items: list = []

    def poll_until(done, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, items
            items.extend(source.poll())
            time.sleep(0.02)

    def told(kind: str) -> int:
        return sum(isinstance(it, SourceNotice) and it.kind == kind for it in items)

    try:
        poll_until(lambda: any(isinstance(it, SampleBlock) for it in items) and source.at_eof)
        asked = proxy.requests
        poll_until(lambda: proxy.requests >= asked + 4)  # instant queries now, every interval
        proxy.answer = Answer(502, b"<html><body>502 Bad Gateway</body></html>\n", content_type="text/html")
        poll_until(lambda: told("down") == 1)
        time.sleep(5 * INTERVAL)  # the same cause again and again: no new notice
        proxy.stop()
        poll_until(lambda: any(isinstance(it, SourceNotice) and "connection refused" in it.message for it in items))
        proxy.answer = Forward(replayed.prom.url)
        proxy.start()
        poll_until(lambda: told("up") == 1)
        time.sleep(3 * INTERVAL)
        items.extend(source.poll())
    finally:
        source.close()
        proxy.stop()
    said = [(it.kind, it.message) for it in items if isinstance(it, SourceNotice) and it.kind in ("down", "up")]
    # A query under way as the port closes may see its connection reset first: a cause of its own, told too.
    reset = [s for s in said if "connection reset by the server" in s[1]]
    assert len(reset) <= 1 and said.index(reset[0]) == 1 if reset else True, said
    said = [s for s in said if s not in reset]
    retrying = f"; retrying every {INTERVAL:g} s"
    assert said == [
        ("down", f"{name}: HTTP 502 Bad Gateway from http://127.0.0.1:{proxy.port}/api/v1/query: "
                 f"'<html><body>502 Bad Gateway</body></html>'{retrying}"),
        ("down", f"{name}: cannot reach the Prometheus server: connection refused by 127.0.0.1:{proxy.port} "
                 f"(no server listening on that port){retrying}"),
        ("up", f'{name}?match={{job="live"}}: reachable again'),
    ]
    assert source.up is True
