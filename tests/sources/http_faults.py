"""Real servers on 127.0.0.1 that fail the way a /metrics endpoint or a Prometheus server fails in the field.

- ``FaultServer``: an HTTP server whose answer (status, body, delay, size) can be switched while it
  runs, stopped (the port then refuses) and started again on the same port.
- ``banner_server``: a TCP port that answers with bytes that are not HTTP (an SSH banner, say).
- ``closed_port``: a port nobody listens on; ``full_backlog``: one whose connection queue is full,
  so a connection attempt gets no answer at all (a host down, or a firewall dropping packets).
- ``tls_context``: a self-signed certificate made with the ``openssl`` command, for a TLS port.
"""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import threading
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

# A vLLM-like page (what a healthy server answers).
VLLM_PAGE = (b"# TYPE vllm:num_requests_running gauge\n"
             b'vllm:num_requests_running{engine="0",model_name="m"} 3\n'
             b"# TYPE vllm:kv_cache_usage_perc gauge\n"
             b'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25\n')

# A page that must never reach a terminal as it is: an ANSI colour, a title-setting escape and Rich markup.
HOSTILE_PAGE = b"\x1b[31mred\x1b[0m [bold]x[/] \x1b]0;title\x07<b>oops</b>\n"


@dataclass
class Answer:
    status: int = 200
    body: bytes = VLLM_PAGE
    delay: float = 0.0  # seconds before answering (a hung server)
    size: int | None = None  # stream this many bytes of comment lines instead of ``body``
    declare_size: bool = True  # send a Content-Length with ``size``
    content_type: str = "text/plain; version=0.0.4"


@dataclass
class Forward:
    """Pass each request on to ``upstream`` (``http://host:port``) and its answer back: a reverse proxy."""

    upstream: str


class FaultServer:
    """An HTTP server on 127.0.0.1 answering every request with ``self.answer``."""

    def __init__(self, answer: Answer | Forward | None = None) -> None:
        self.answer = answer or Answer()
        self.requests = 0
        self.port = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/metrics"

    def start(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                owner._answer(self, None)

            def do_POST(self):  # noqa: N802 (the Prometheus API is asked by POST)
                owner._answer(self, self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def log_message(self, *args):
                pass

        self._closing.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._prepare(self._server)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _prepare(self, server: ThreadingHTTPServer) -> None:
        """Before serving: a subclass wraps the socket."""

    def stop(self) -> None:
        """Close the port: connections are refused until ``start()``."""
        if self._server is not None:
            self._closing.set()  # a delayed answer ends now
            self._server.shutdown()
            self._server.server_close()
            assert self._thread is not None
            self._thread.join(5)
            self._server = None

    def __enter__(self) -> FaultServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _answer(self, handler: BaseHTTPRequestHandler, posted: bytes | None) -> None:
        answer = self.answer
        self.requests += 1
        if isinstance(answer, Forward):
            answer = _forwarded(answer.upstream + handler.path, handler, posted)
        if answer.delay and self._closing.wait(answer.delay):
            return
        try:
            handler.send_response(answer.status)
            handler.send_header("Content-Type", answer.content_type)
            if answer.size is None:
                handler.send_header("Content-Length", str(len(answer.body)))
                handler.end_headers()
                handler.wfile.write(answer.body)
                return
            if answer.declare_size:
                handler.send_header("Content-Length", str(answer.size))
            handler.end_headers()
            line = b"# " + b"x" * 1021 + b"\n"
            left = answer.size
            while left > 0:
                handler.wfile.write(line[:left])
                left -= len(line)
        except OSError:
            pass  # the client stopped reading (a page too large): nothing to answer to
        handler.close_connection = True


def _forwarded(url: str, handler: BaseHTTPRequestHandler, posted: bytes | None) -> Answer:
    headers = {k: v for k, v in handler.headers.items() if k.lower() in ("content-type", "accept", "authorization")}
    request = urllib.request.Request(url, data=posted, headers=headers, method=handler.command)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (127.0.0.1)
            return Answer(response.status, response.read(), content_type=response.headers.get("Content-Type", ""))
    except urllib.error.HTTPError as exc:
        return Answer(exc.code, exc.read(), content_type=exc.headers.get("Content-Type", ""))


@contextmanager
def banner_server(banner: bytes) -> Iterator[int]:
    """A TCP port that reads the request and answers ``banner``, then closes; yields the port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(4096)
                    conn.sendall(banner)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()
        thread.join(5)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def full_backlog() -> Iterator[int]:
    """A listening port that never accepts, its queue filled: a new connection attempt gets no answer."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        try:
            filler.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(filler)
    try:
        yield port
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


def tls_context(folder: Path) -> ssl.SSLContext | None:
    """A server context with a self-signed certificate for localhost; None without ``openssl``."""
    openssl = shutil.which("openssl")
    if openssl is None:
        return None
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True, timeout=60)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


class TlsServer(FaultServer):
    """``FaultServer`` behind TLS (a self-signed certificate)."""

    def __init__(self, context: ssl.SSLContext, answer: Answer | None = None) -> None:
        self._context = context
        super().__init__(answer)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/metrics"

    def _prepare(self, server: ThreadingHTTPServer) -> None:
        server.socket = self._context.wrap_socket(server.socket, server_side=True)


def env_without_proxy() -> dict[str, str]:
    """Subprocesses talk to 127.0.0.1 only: no proxy in between."""
    env = dict(os.environ)
    for key in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        env.pop(key, None)
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env
