"""A real Prometheus (Debian's ``prometheus`` package) scraping real HTTP servers on 127.0.0.1.

``PageServer`` replays recorded ``/metrics`` pages of a real vLLM server phase by phase: a
schedule says how many scrapes each page is served for; after the last one it answers 503
(the target is down and Prometheus marks its series stale), so what the Prometheus holds is
exactly what was served. It logs every page it served with the time it answered, and can
write those scrapes as a recorded file (the ``# ===== ... t=EPOCH (ISO) port=N =====`` form
``pdwatch record`` writes), which pdwatch reads directly for comparison.

``PrometheusServer`` starts ``prometheus`` with a temporary config and storage on a free
port, waits until it is ready, and stops it on exit. Nothing here needs the network.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
NEEDS_PROMETHEUS = "needs Debian's prometheus package (apt-get install prometheus; .ci/run installs it)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Served:
    at: float  # epoch seconds when the page was answered
    page: int
    body: str


@dataclass
class PageServer:
    """Serve ``pages[i]`` for ``schedule[k] = (i, n)``: page i for the next n scrapes, in order."""

    pages: list[str]
    schedule: list[tuple[int, int]]
    served: list[Served] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._plan = [i for i, n in self.schedule for _ in range(n)]
        self._lock = threading.Lock()
        self.done = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404)
                    return
                with owner._lock:
                    k = len(owner.served)
                    if k >= len(owner._plan):
                        owner.done.set()
                        self.send_error(503, "the recorded run is over")
                        return
                    page = owner._plan[k]
                    owner.served.append(Served(time.time(), page, owner.pages[page]))
                data = owner.pages[page].encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def write_recording(self, path: Path, scenario: str = "replayed") -> Path:
        """The scrapes served, as pdwatch's recorder writes them."""
        out = []
        for s in self.served:
            when = datetime.fromtimestamp(s.at, tz=timezone.utc)
            iso = when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
            out.append(f"# ===== scenario={scenario} page={s.page} t={s.at:.3f} ({iso}) port={self.port} =====")
            out.append(s.body.rstrip("\n"))
        path.write_text("\n".join(out) + "\n")
        return path

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class PrometheusServer:
    """``prometheus`` on 127.0.0.1:PORT scraping ``targets``: [(job, "host:port", {label: value})]."""

    def __init__(self, targets: list[tuple[str, str, dict[str, str]]], *, scrape_interval: str = "1s",
                 storage: str | None = None, extra_args: tuple[str, ...] = ()) -> None:
        assert PROMETHEUS, NEEDS_PROMETHEUS
        self.dir = Path(tempfile.mkdtemp(prefix="pdwatch-prom-"))
        self.port = free_port()
        jobs: dict[str, list[dict]] = {}
        for job, address, labels in targets:
            jobs.setdefault(job, []).append({"targets": [address], "labels": dict(labels)})
        config = {"global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval,
                             "scrape_timeout": scrape_interval},
                  "scrape_configs": [{"job_name": job, "static_configs": configs} for job, configs in jobs.items()]}
        (self.dir / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.storage = storage or str(self.dir / "data")
        self.log = open(self.dir / "prometheus.log", "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={self.dir / 'prometheus.yml'}", f"--storage.tsdb.path={self.storage}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=30d",
             "--log.level=warn", *extra_args],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.wait_ready()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def source(self) -> str:
        return f"prom+http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited {self.proc.returncode}: {self.logs()}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"prometheus not ready after {timeout} s: {self.logs()}")

    def logs(self) -> str:
        self.log.flush()
        return (self.dir / "prometheus.log").read_text()[-3000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "PrometheusServer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def wait_until(condition, timeout: float, step: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


def env_without_proxy() -> dict[str, str]:
    """The test's subprocesses talk to 127.0.0.1 only: no proxy in between."""
    env = dict(os.environ)
    for key in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        env.pop(key, None)
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env
