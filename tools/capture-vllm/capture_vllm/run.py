"""Run one scenario: start its servers, send its phases, scrape, stop as it says, write it down."""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .load import LoadClient
from .record import ScrapeFile, iso, write_description, write_requests
from .scenarios import COMMON_ARGS, COMMON_ENV, Scenario, ServerSpec
from .server import Server

KIT = Path(__file__).resolve().parent.parent
MODEL = KIT / "models" / "tiny-qwen3"
VOCAB = 2048  # models/tiny-qwen3/config.json


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def say(msg: str) -> None:
    print(f"[capture {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Capture:
    def __init__(self, scenario: Scenario, venv: Path, out_dir: Path):
        self.scenario, self.venv, self.out_dir = scenario, venv, out_dir
        self.kvstore = Path(tempfile.mkdtemp(prefix="pdwatch-kvstore-"))
        self.ports = {spec.name: free_port() for spec in scenario.servers}
        self.servers = [self._server(spec) for spec in scenario.servers]
        self.scrapes = ScrapeFile(out_dir / "metrics.txt", scenario.name)
        self.ending = ""
        self.stop_event: dict | None = None

    # --- servers ------------------------------------------------------------------------------

    def _server(self, spec: ServerSpec) -> Server:
        port = self.ports[spec.name]
        if spec.proxy_for:
            prefill, decode = spec.proxy_for
            argv = [sys.executable, str(KIT / "capture_vllm" / "pd_proxy.py"), "--port", str(port),
                    "--prefill", str(self.ports[prefill]), "--decode", str(self.ports[decode])]
            return Server(spec.name, port, argv, {"PYTHONUNBUFFERED": "1"})
        kv_config = json.dumps({"kv_connector": "ExampleConnector", "kv_role": "kv_both",
                                "kv_connector_extra_config": {"shared_storage_path": str(self.kvstore)}},
                               separators=(",", ":"))
        args = [a.replace("{KV_CONFIG}", kv_config) for a in spec.args]
        argv = [str(self.venv / "bin" / "vllm"), "serve", str(MODEL), "--host", "127.0.0.1", "--port", str(port),
                *COMMON_ARGS, *args]
        env = {**COMMON_ENV, **dict(self.scenario.env), **dict(spec.env)}
        return Server(spec.name, port, argv, env)

    def vllm_servers(self) -> list[Server]:
        return [s for s, spec in zip(self.servers, self.scenario.servers) if not spec.proxy_for]

    def target(self) -> Server:
        return next(s for s in self.servers if s.name == self.scenario.target)

    # --- the run ------------------------------------------------------------------------------

    def run(self) -> Path:
        self.out_dir.mkdir(parents=True)
        client = LoadClient(self.target().port, str(MODEL), vocab=VOCAB)
        try:
            for server in self.servers:
                say(f"{self.scenario.name}: starting {server.name} on port {server.port}")
                server.start(self.out_dir)
            for server in self.servers:
                took = server.wait_ready()
                say(f"{server.name} ready after {took:.0f} s")
            self._phases(client)
            self._end(client)
        finally:
            for server in self.servers:
                server.kill_group()
            shutil.rmtree(self.kvstore, ignore_errors=True)
        write_requests(self.out_dir / "requests.csv", client.records)
        write_description(self.out_dir, self._description(), client.windows, client.records)
        say(f"{self.scenario.name}: written to {self.out_dir}")
        return self.out_dir

    def _phases(self, client: LoadClient) -> None:
        stop = self.scenario.stop
        for phase in self.scenario.phases:
            if self.stop_event is not None:
                break
            say(f"phase {phase.name} ({phase.kind}, {phase.seconds:.0f} s, concurrency {phase.concurrency})")
            done: set[str] = set()

            def tick(elapsed: float, phase=phase, done=done) -> None:
                if phase.kind != "idle" and "mid" not in done and elapsed >= phase.seconds / 2:
                    done.add("mid")
                    self._scrape_all(phase.name, f"mid-load-phase(+{elapsed:.1f}s, in_flight={client.in_flight})")
                if stop.phase == phase.name and "stop" not in done and elapsed >= stop.after_s:
                    done.add("stop")
                    self._stop_action(client, elapsed)

            client.run(phase, on_tick=tick)
            if self.stop_event is None and phase.kind == "idle":
                self._scrape_all(phase.name, "end-of-idle-phase")

    def _scrape_all(self, phase: str, what: str) -> None:
        for server in self.vllm_servers():
            if server.alive():
                self.scrapes.scrape(server.port, phase, what)

    def _stop_action(self, client: LoadClient, elapsed: float) -> None:
        stop = self.scenario.stop
        server = self.target() if self.scenario.target != "proxy" else self.vllm_servers()[-1]
        at = time.time()
        if stop.kind == "sigint_under_load":
            say(f"SIGINT to {server.name} (pid {server.proc.pid}), {client.in_flight} requests in flight")
            server.signal(signal.SIGINT)
            self.stop_event = {"kind": "sigint_under_load", "t": at, "pid": server.proc.pid,
                               "in_flight": client.in_flight}
        elif stop.kind == "kill_worker":
            workers = [(pid, title) for pid, title in server.descendants() if "Worker" in title]
            if not workers:
                raise RuntimeError(f"no worker process under {server.name}: {server.descendants()}")
            pid, title = workers[0]
            say(f"SIGKILL to {title!r} (pid {pid}), {client.in_flight} requests in flight")
            os.kill(pid, signal.SIGKILL)
            self.stop_event = {"kind": "kill_worker", "t": at, "pid": pid, "title": title,
                               "in_flight": client.in_flight}
        else:
            raise ValueError(f"unknown stop action {stop.kind!r}")
        self.stop_event["phase"], self.stop_event["after_s"] = stop.phase, round(elapsed, 3)
        # The client keeps sending for 5 s more (what a real benchmark client sees), then stops.
        client.stop_at(at + 5.0)

    def _end(self, client: LoadClient) -> None:
        kind = self.scenario.stop.kind
        if kind == "sigint":
            if self.scenario.phases[-1].kind != "idle":  # an idle phase was just scraped at its end
                self._scrape_all("end", "before-stop")
            for server in self.servers:
                code = server.stop()
                say(f"{server.name} stopped with SIGINT: exit {code}")
            self.ending = ("After the last phase every server got SIGINT (an operator's Ctrl-C) and stopped in "
                           "order.")
            return
        ev = self.stop_event or {}
        target = self.target() if self.scenario.target != "proxy" else self.vllm_servers()[-1]
        code = target.wait_exit(60.0)
        if kind == "sigint_under_load":
            self.ending = (f"SIGINT to the server {ev.get('after_s')} s into phase `{ev.get('phase')}` at "
                           f"{iso(ev.get('t', 0))} with {ev.get('in_flight')} requests in flight; it exited "
                           f"with {code}. An orderly stop the operator started, not a failure.")
        else:
            if code is None:
                code = target.stop()
                tail = f"it was still up 60 s later and was stopped with SIGINT (exit {code})"
            else:
                tail = f"the server shut itself down (exit {code})"
            self.ending = (f"SIGKILL to the model worker process `{ev.get('title')}` (pid {ev.get('pid')}) "
                           f"{ev.get('after_s')} s into phase `{ev.get('phase')}` at {iso(ev.get('t', 0))}, "
                           f"{ev.get('in_flight')} requests in flight: the engine died mid-run; {tail}.")
        for server in self.servers:
            server.stop()

    def _description(self) -> dict:
        sc = self.scenario
        servers = []
        for server in self.servers:
            env = " ".join(f"{k}={v}" for k, v in sorted(server.env.items()))
            servers.append({"name": server.name, "port": server.port, "env": server.env,
                            "argv": server.argv, "command": f"env {env} {' '.join(_quote(a) for a in server.argv)}"})
        return {"scenario": sc.name, "summary": sc.summary, "captured_at": iso(time.time()),
                "vllm_version": _venv_version(self.venv, "vllm"), "torch_version": _venv_version(self.venv, "torch"),
                "machine": _machine(), "model": str(MODEL), "servers": servers,
                "stop": {"kind": sc.stop.kind, "phase": sc.stop.phase, "after_s": sc.stop.after_s,
                         "event": self.stop_event},
                "ending": self.ending, "notes": list(sc.notes), "scrapes": self.scrapes.taken}


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def _venv_version(venv: Path, dist: str) -> str:
    out = subprocess.run([str(venv / "bin" / "python"), "-c",
                          f"import importlib.metadata as m; print(m.version({dist!r}))"],
                         capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def _machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({model}), {platform.machine()}, no GPU"
