"""A Dynamo deployment brought up and torn down without a scenario's load or mid-run actions,
for callers that drive it themselves (tests/live/test_live_dynamo.py).

The processes are the kit's own: ``DynamoCapture`` builds their commands, environment, ports
and model folder (file discovery, every plane on 127.0.0.1), so a deployment started here is
started exactly as a capture's is. What this adds is a bring-up under one deadline (a caller
with a time budget cannot wait the capture's 60 + 300 + 60 s) and a stop that removes the
scratch folder.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from capture_vllm.server import Server, get

from .run import SERVED, DynamoCapture
from .scenarios import FRONTEND, Proc, Scenario


class NotReady(RuntimeError):
    """A process exited, or the deployment was not serving by the deadline."""


class Deployment:
    """A frontend and ``workers`` (the kit's ``Proc``) whose logs go to ``out_dir/NAME.PROC.log``.

    ``servers`` maps each process's name to its ``capture_vllm.server.Server`` (``proc.pid`` is
    the ``python -m dynamo.*`` process; vLLM's engine core runs as its child, in its session)."""

    def __init__(self, venv: Path, out_dir: Path, workers: tuple[Proc, ...], name: str = "dynamo",
                 env: dict[str, str] | None = None):
        scenario = Scenario(name, "a deployment its caller drives", (FRONTEND, *workers), phases=(),
                            env=tuple((env or {}).items()))
        out_dir.mkdir(parents=True, exist_ok=True)
        self._kit = DynamoCapture(scenario, venv, out_dir)
        self.servers: dict[str, Server] = self._kit.servers
        self.http_port: int = self._kit.http_port
        self.model = SERVED  # the name requests give
        self.workers = [p.name for p in workers]

    @property
    def frontend(self) -> Server:
        return self.servers["frontend"]

    def system_port(self, worker: str) -> int:
        """The worker's status server (``/health``, ``/metrics``): DYN_SYSTEM_PORT."""
        return self._kit.system_ports[worker]

    def start(self, timeout_s: float, niced: bool = True) -> dict[str, float]:
        """Start the frontend, then the workers; return when every worker's ``/health`` answers 200
        and the frontend lists the model. Seconds from the start to each of those, per process.

        ``niced``: once ready, each worker's session gets a lower CPU priority
        (``Server.lower_priority``): vLLM for CPU under load takes every core it can, and on a small
        machine whatever watches the deployment would wait for one. Not before: niced, a start-up
        yields to any other work on the machine (on 2 cores shared with another test run it took
        181 s and more, against 70 s alone)."""
        deadline = time.time() + timeout_s
        begun = time.time()
        self._kit.write_model()
        self.frontend.start(self._kit.out_dir)
        self._wait(lambda: get(self.http_port, "/v1/models", timeout_s=2.0)[0] == 200, deadline, ["frontend"],
                   "the frontend's /v1/models")
        took = {"frontend": time.time() - begun}
        for name in self.workers:
            self.servers[name].start(self._kit.out_dir)
        for name in self.workers:
            self._wait(lambda name=name: self._kit.health(name), deadline, [name], f"{name}'s /health")
            took[name] = time.time() - begun
        self._wait(self._kit.model_listed, deadline, ["frontend"], f"the frontend listing {SERVED}")
        took["listed"] = time.time() - begun
        for name in self.workers if niced else ():
            self.servers[name].lower_priority()
        return took

    def _wait(self, ready, deadline: float, watched: list[str], what: str) -> None:
        while time.time() < deadline:
            for name in watched:
                server = self.servers[name]
                if not server.alive():
                    raise NotReady(f"{name} exited with {server.proc.returncode} before {what} was ready "
                                   f"(see {server.log_path})")
            if ready():
                return
            time.sleep(1.0)  # a probe's pace: each 503 a starting worker answers is an ERROR line in its log
        raise NotReady(f"{what} not ready by the deadline (logs in {self._kit.out_dir})")

    def stop(self, grace_s: float = 20.0) -> dict[str, int | None]:
        """Workers first, then the frontend, each with SIGINT then SIGTERM (``Server.stop``); whatever
        is left of each process group is killed, and the model folder removed. Exit codes by name."""
        codes: dict[str, int | None] = {}
        try:
            for name in [*self.workers, "frontend"]:
                server = self.servers[name]
                if server.proc is None:
                    continue
                codes[name] = server.proc.returncode if not server.alive() else server.stop(grace_s=grace_s)
                server.kill_group()  # a killed main process leaves its engine core behind
        finally:
            for server in self.servers.values():
                server.kill_group()
            shutil.rmtree(self._kit.scratch, ignore_errors=True)
        return codes
