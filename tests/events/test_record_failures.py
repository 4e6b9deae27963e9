"""``pdwatch record`` says why a URL gives no scrape, once per cause, against real servers on 127.0.0.1."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from pdwatch.events.recorded import read_recorded

from tests.sources.http_faults import HOSTILE_PAGE, Answer, FaultServer, banner_server, env_without_proxy


def record(urls: list[str], out, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pdwatch", "record", *urls, "--out", str(out), "--interval", "0.1",
                             "--timeout", "1", *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env_without_proxy())


def wait_requests(server: FaultServer, count: int, proc: subprocess.Popen, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while server.requests < count:
        assert proc.poll() is None and time.monotonic() < deadline, "pdwatch record stopped scraping"
        time.sleep(0.02)


def test_each_change_of_cause_is_said_once_and_the_recovery(tmp_path):
    server = FaultServer(Answer(500, b"boom"))
    url, port = server.url, server.port
    proc = record([url], tmp_path / "rec")
    try:
        wait_requests(server, 4, proc)  # the same cause four times: said once
        server.stop()
        time.sleep(0.5)  # a few refused connections
        server.answer = Answer()
        server.start()
        wait_requests(server, 3, proc)
        time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
        server.stop()
    assert proc.returncode == 0, err.decode()
    lines = err.decode().splitlines()
    # A scrape under way as the port closes may see its connection reset first: a cause of its own, told too.
    reset = [line for line in lines if "connection reset by the server" in line]
    assert len(reset) <= 1 and lines.index(reset[0]) == 1 if reset else True, lines
    lines = [line for line in lines if line not in reset]
    assert lines[:3] == [
        f"pdwatch record: {url}: scrape failed: HTTP 500 Internal Server Error; retrying every 0.1 s",
        f"pdwatch record: {url}: scrape failed: connection refused by 127.0.0.1:{port} "
        f"(no server listening on that port); retrying every 0.1 s",
        f"pdwatch record: {url}: reachable again",
    ]
    (path,) = (tmp_path / "rec").iterdir()
    events, errors = read_recorded(path)
    assert errors == [] and events  # only the healthy scrapes were saved
    assert lines[3:] == [f"{path}: {len(events)} scrape(s) of {url}"]


def test_garbage_is_shown_escaped_and_a_port_without_http_does_not_stop_the_recorder(tmp_path):
    with FaultServer(Answer(200, HOSTILE_PAGE)) as hostile, banner_server(b"SSH-2.0-OpenSSH_9.6\r\n") as port:
        banner = f"http://127.0.0.1:{port}/metrics"
        proc = record([hostile.url, banner], tmp_path / "rec", "--duration", "1")
        _, err = proc.communicate(timeout=30)
    assert b"\x1b" not in err and b"\x07" not in err and b"Traceback" not in err, err.decode()
    assert proc.returncode == 1  # nothing saved
    lines = err.decode().splitlines()
    assert lines[:2] == [
        f"pdwatch record: {hostile.url}: scrape failed: not Prometheus exposition text: begins "
        "'\\x1b[31mred\\x1b[0m [bold]x[/] \\x1b]0;title\\x07<b>oops</b>'; retrying every 0.1 s",
        f"pdwatch record: {banner}: scrape failed: not an HTTP answer: 'SSH-2.0-OpenSSH_9.6' "
        "(is it the right port?); retrying every 0.1 s",
    ]
    assert [line.split(": ", 1)[1] for line in lines[2:]] == [f"0 scrape(s) of {hostile.url}",
                                                              f"0 scrape(s) of {banner}"]
