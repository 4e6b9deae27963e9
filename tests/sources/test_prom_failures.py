"""A ``prom+http://`` source whose server fails says why in one line: cannot reach it (refused), no
answer in time, an HTTP error status (a Prometheus still starting answers 503; a proxy 502), or
a server that is no Prometheus API. Real servers on 127.0.0.1; no Prometheus needed (the
follow-mode changes of cause against a real one are in tests/prometheus/)."""

from __future__ import annotations

import pytest

from pdwatch.cli import main
from pdwatch.sources import PromOptions, PrometheusSource
from pdwatch.sources.prom_api import PromError

from .http_faults import Answer, FaultServer, closed_port


def report_error(source: str, capsys) -> str:
    """``pdwatch report SOURCE --since 5m``: exit 2 and one line; the line."""
    code = main(["report", source, "--since", "5m"])
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("pdwatch: error: "), (code, out, err)
    return lines[0].removeprefix("pdwatch: error: ")


def test_a_refused_connection(capsys):
    port = closed_port()
    assert report_error(f"prom+http://127.0.0.1:{port}", capsys) == (
        f"prom+http://127.0.0.1:{port}: cannot reach the Prometheus server: connection refused by "
        f"127.0.0.1:{port} (no server listening on that port)")


@pytest.mark.parametrize(("answer", "said"), [
    # what a Prometheus answers while it replays its write-ahead log: up, not ready
    (Answer(503, b"Service Unavailable", content_type="text/plain; charset=utf-8"),
     "HTTP 503 Service Unavailable from {base}/api/v1/series: 'Service Unavailable'"),
    (Answer(502, b"<html><body><h1>502 Bad Gateway</h1></body></html>\n", content_type="text/html"),
     "HTTP 502 Bad Gateway from {base}/api/v1/series: '<html><body><h1>502 Bad Gateway</h1></body></html>'"),
    # what Prometheus answers for a path it does not serve: a wrong prefix
    (Answer(404, b"404 page not found\n", content_type="text/plain; charset=utf-8"),
     "HTTP 404 Not Found from {base}/api/v1/series (no Prometheus API there: a wrong address or path prefix?): "
     "'404 page not found'"),
    (Answer(200, b"<!DOCTYPE html>\n<html><title>Grafana</title></html>\n", content_type="text/html"),
     "not a Prometheus HTTP API at {base} (HTTP 200, text/html): begins '<!DOCTYPE html>'"),
    (Answer(200, b"", content_type=""),
     "not a Prometheus HTTP API at {base} (HTTP 200, no content type): an empty answer"),
], ids=["503", "502", "404", "html", "empty"])
def test_an_http_error_is_not_taken_for_a_missing_api(answer, said, capsys):
    with FaultServer(answer) as server:
        base = f"http://127.0.0.1:{server.port}"
        line = report_error(f"prom+{base}", capsys)
    assert line == f"prom+{base}: " + said.format(base=base)


def test_an_error_text_from_the_server_is_shown_escaped(capsys):
    page = b'{"status":"error","errorType":"bad_data","error":"\\u001b[31mno\\u001b[0m [bold]x[/]"}'
    with FaultServer(Answer(400, page, content_type="application/json")) as server:
        line = report_error(f"prom+http://127.0.0.1:{server.port}", capsys)
    assert line == f"prom+http://127.0.0.1:{server.port}: bad selector (none): \\x1b[31mno\\x1b[0m [bold]x[/]"


def test_a_server_that_does_not_answer_in_time():
    with FaultServer(Answer(200, b"{}", delay=3.0)) as server:
        with pytest.raises(PromError) as caught:
            PrometheusSource(f"prom+http://127.0.0.1:{server.port}", follow=False, options=PromOptions(since="5m"),
                             timeout=0.5)
    assert str(caught.value) == (f"prom+http://127.0.0.1:{server.port}: timed out after 0.5 s waiting for the "
                                 f"answer (connected, but the server did not answer in time)")
