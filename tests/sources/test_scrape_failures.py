"""A /metrics URL that cannot be scraped says why, in one line naming the URL, against real servers on 127.0.0.1.

An operator who reads "unreachable" looks for a network problem; a server that answers HTTP 500
or serves a login page is up and broken. Each cause has its own words, a change of cause is told
again (the notice kind stays ``down``), and recovery once (``up``: "reachable again").
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import pytest

from pdwatch.sources import ScrapeBlock, SourceSet

from .helpers import notices, poll_until
from .http_faults import (HOSTILE_PAGE, Answer, FaultServer, TlsServer, banner_server, closed_port,
                          env_without_proxy, full_backlog, tls_context)

INTERVAL = 0.2  # a watch's scrape timeout is then 1 s (at least 1 s, at most the interval)


def first_failure(url: str, timeout: float = 15.0) -> str:
    """The first ``down`` notice of a live /metrics source on ``url``, as ``watch`` makes it."""
    sources = SourceSet([url], follow=True, scrape_interval=INTERVAL)
    try:
        items = poll_until(sources.poll, lambda it: notices(it, "down"), timeout)
        assert sources.sources_up == {url: False}
    finally:
        sources.close()
    assert not [it for it in items if isinstance(it, ScrapeBlock)]
    return notices(items, "down")[0].message


def failed(url: str, reason: str) -> str:
    return f"{url}: scrape failed: {reason}; retrying every {INTERVAL:g} s"


@pytest.mark.parametrize(("answer", "reason"), [
    (Answer(500, b"boom"), "HTTP 500 Internal Server Error"),
    (Answer(503, b""), "HTTP 503 Service Unavailable"),
    (Answer(404, b"404 page not found\n"), "HTTP 404 Not Found (is the path right? vLLM serves /metrics)"),
    (Answer(200, b""), "empty page (HTTP 200, no content)"),
    (Answer(200, b"\n \n"), "empty page (HTTP 200, only white space)"),
    (Answer(200, b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head></html>\n", content_type="text/html"),
     "not Prometheus exposition text (an HTML page): begins '<!DOCTYPE html>'"),
    (Answer(200, b'{"status": "ok"}\n', content_type="application/json"),
     "not Prometheus exposition text (JSON): begins '{\"status\": \"ok\"}'"),
    (Answer(200, b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xab\xae\x05\x00"),
     "not Prometheus exposition text (binary data): begins "
     "'\\x1f\\x8b\\x08\\x00\\x00\\x00\\x00\\x00\\x00\\x03\\xab\\xae\\x05\\x00'"),
    # the garbage is shown escaped: no escape sequence reaches a terminal, markup stays literal text
    (Answer(200, HOSTILE_PAGE), "not Prometheus exposition text: begins "
                                "'\\x1b[31mred\\x1b[0m [bold]x[/] \\x1b]0;title\\x07<b>oops</b>'"),
    # C1 controls and a right-to-left override (a line that reads backwards) are shown escaped too
    (Answer(200, "\u202eevil \x9b31mred\n".encode()), "not Prometheus exposition text: begins "
                                                       "'\\u202eevil \\x9b31mred'"),
    # a page that starts well and breaks further down names the line
    (Answer(200, b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n"
                 b'vllm:num_requests_waiting{engine="0" 1\n'),
     "not Prometheus exposition text: line 3 is 'vllm:num_requests_waiting{engine=\"0\" 1'"),
    (Answer(200, size=(64 << 20) + 1), "page larger than 64 MiB, the most pdwatch reads"),
    (Answer(200, size=(64 << 20) + 1, declare_size=False), "page larger than 64 MiB, the most pdwatch reads"),
    (Answer(200, delay=3.0),
     "timed out after 1 s waiting for the answer (connected, but the server did not answer in time)"),
], ids=["500", "503", "404", "empty", "blank", "html", "json", "binary", "hostile", "bidi", "broken-line", "too-large",
        "too-large-undeclared", "slow"])
def test_a_failure_is_named_by_its_cause(answer, reason):
    with FaultServer(answer) as server:
        message = first_failure(server.url)
    assert message == failed(server.url, reason)
    assert message.isprintable()  # one line, no escape sequence


def test_a_closed_port_is_connection_refused():
    port = closed_port()
    url = f"http://127.0.0.1:{port}/metrics"
    assert first_failure(url) == failed(url, f"connection refused by 127.0.0.1:{port} "
                                             f"(no server listening on that port)")


def test_no_answer_to_the_connection_is_a_connect_timeout():
    with full_backlog() as port:
        url = f"http://127.0.0.1:{port}/metrics"
        message = first_failure(url)
    assert message == failed(url, f"timed out after 1 s connecting to 127.0.0.1:{port} "
                                  f"(no answer: the host is down, or a firewall drops the packets)")


def test_a_port_that_does_not_speak_http():
    with banner_server(b"SSH-2.0-OpenSSH_9.6\r\n") as port:
        url = f"http://127.0.0.1:{port}/metrics"
        message = first_failure(url)
    assert message == failed(url, "not an HTTP answer: 'SSH-2.0-OpenSSH_9.6' (is it the right port?)")


def test_https_to_a_plain_http_port_is_a_tls_error():
    with FaultServer() as server:
        url = server.url.replace("http://", "https://")
        message = first_failure(url)
    assert message.startswith(f"{url}: scrape failed: TLS handshake failed: ")
    assert message.endswith(" (does the port speak plain HTTP? then use http://); retrying every 0.2 s")


def test_a_self_signed_certificate_and_plain_http_to_a_tls_port(tmp_path):
    context = tls_context(tmp_path)
    if context is None:
        pytest.skip("needs the openssl command to make a certificate")
    with TlsServer(context) as server:
        tls_url = server.url
        plain_url = tls_url.replace("https://", "http://")
        assert first_failure(tls_url) == failed(tls_url, "TLS certificate not accepted: self-signed certificate")
        assert first_failure(plain_url) == failed(
            plain_url, "connection reset by the server before it answered (if the port speaks TLS, use https://)")


def _resolution_fails_fast(host: str) -> str | None:
    """None when ``host`` fails to resolve within 3 s; else why the test cannot run here."""
    outcome: list[BaseException | None] = []

    def resolve() -> None:
        try:
            socket.getaddrinfo(host, 80)
            outcome.append(None)
        except OSError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=resolve, daemon=True)
    thread.start()
    thread.join(3)
    if not outcome:
        return "this machine's resolver takes more than 3 s to fail a .invalid name"
    if outcome[0] is None:
        return "this machine's resolver answers for a .invalid name"
    return None


def test_a_host_name_that_does_not_resolve():
    host = "pdwatch-test.invalid"  # RFC 6761: never resolves; the local resolver says so without the network
    why = _resolution_fails_fast(host)
    if why:
        pytest.skip(why)
    url = f"http://{host}:8000/metrics"
    message = first_failure(url)
    assert message.startswith(f"{url}: scrape failed: DNS name not resolved: {host} (")
    assert message.endswith("); retrying every 0.2 s")


def test_each_change_of_cause_is_told_and_recovery_once():
    """500, then a login page (twice, changing), then nothing listening, then healthy: three
    ``down`` notices, one per cause, and one ``up``."""
    server = FaultServer(Answer(500, b"boom"))
    url = server.url
    sources = SourceSet([url], follow=True, scrape_interval=INTERVAL)
    try:
        def seen(kind: str, count: int):
            return lambda items: len(notices(items, kind)) >= count

        items = poll_until(sources.poll, seen("down", 1), 15)
        time.sleep(4 * INTERVAL)  # the same cause again and again: no new notice
        server.answer = Answer(200, b"<html><body>Sign in (request 1)</body></html>\n")
        items += poll_until(sources.poll, lambda it: seen("down", 2)(items + it), 15)
        requests = server.requests
        server.answer = Answer(200, b"<html><body>Sign in (request 2)</body></html>\n")  # same cause, other bytes
        while server.requests < requests + 4:
            time.sleep(INTERVAL / 2)
        items += sources.poll()
        server.stop()
        items += poll_until(sources.poll, lambda it: any("connection refused" in n.message for n in notices(it)), 15)
        server.answer = Answer()
        server.start()
        items += poll_until(sources.poll, lambda it: seen("up", 1)(items + it), 15)
        time.sleep(2 * INTERVAL)
        items += sources.poll()
    finally:
        sources.close()
        server.stop()
    port = url.split(":")[2].split("/")[0]
    said = [(n.kind, n.message) for n in notices(items)]
    # A scrape under way as the port closes may see its connection reset first: a cause of its own, told too.
    reset = [s for s in said if "connection reset by the server" in s[1]]
    assert len(reset) <= 1 and said.index(reset[0]) == 2 if reset else True, said
    assert [s for s in said if s not in reset] == [
        ("down", failed(url, "HTTP 500 Internal Server Error")),
        ("down", failed(url, "not Prometheus exposition text (an HTML page): "
                             "begins '<html><body>Sign in (request 1)</body></html>'")),
        ("down", failed(url, f"connection refused by 127.0.0.1:{port} (no server listening on that port)")),
        ("up", f"{url}: reachable again"),
    ]
    assert {n.source for n in notices(items)} == {url} and sources.sources_up == {url: True}
    assert [it for it in items if isinstance(it, ScrapeBlock)]


def test_watch_headless_prints_each_cause_escaped():
    """The real command: ``pdwatch watch --headless URL`` tells each cause on stderr, once per
    change, with the page's bytes escaped; then that the URL is back."""
    server = FaultServer(Answer(200, HOSTILE_PAGE))
    proc = subprocess.Popen([sys.executable, "-m", "pdwatch", "watch", "--headless", "--scrape-interval",
                             str(INTERVAL), "--refresh", "0.2", server.url],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env_without_proxy())
    lines: list[bytes] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def wait_for(text: bytes, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in lines):
            assert proc.poll() is None and time.monotonic() < deadline, b"".join(lines).decode(errors="replace")
            time.sleep(0.05)

    try:
        wait_for(b"not Prometheus exposition text")
        server.answer = Answer(500, b"boom")
        wait_for(b"HTTP 500")
        server.answer = Answer()
        wait_for(b"reachable again")
    finally:
        proc.terminate()
        proc.wait(20)
        reader.join(5)
        server.stop()
    err = b"".join(lines)
    assert b"\x1b" not in err and b"\x07" not in err  # shown escaped, never sent
    url = server.url
    said = [line.decode().rstrip("\n") for line in lines if url.encode() in line]
    assert said == [
        "pdwatch: " + failed(url, "not Prometheus exposition text: begins "
                                  "'\\x1b[31mred\\x1b[0m [bold]x[/] \\x1b]0;title\\x07<b>oops</b>'"),
        "pdwatch: " + failed(url, "HTTP 500 Internal Server Error"),
        f"pdwatch: {url}: reachable again",
    ]

