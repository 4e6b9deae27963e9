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
import threading
import time
from pathlib import Path

from . import hang_facts
from .freeze import Frozen, freeze, thaw
from .load import LoadClient
from .record import ScrapeFile, iso, write_description, write_requests
from .scenarios import COMMON_ARGS, COMMON_ENV, Scenario, ServerSpec
from .server import Server, get

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
        self.phase = "start-up"
        self.signals: list[dict] = []  # every signal the kit sent, in order (the README's table)
        self.frozen: Frozen | None = None
        self.health: dict[str, list[tuple[float, int | None]]] = {}  # port -> (t, /health status)

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
        client = LoadClient(self.target().port, str(MODEL), vocab=VOCAB, timeout_s=self.scenario.client_timeout_s)
        periodic = threading.Event()
        try:
            for server in self.servers:
                say(f"{self.scenario.name}: starting {server.name} on port {server.port}")
                server.start(self.out_dir)
            for server in self.servers:
                took = server.wait_ready()
                say(f"{server.name} ready after {took:.0f} s")
            if self.scenario.scrape_every_s:
                threading.Thread(target=self._scrape_every, args=(client, periodic), daemon=True).start()
            self._phases(client)
            self._end(client, periodic)
        finally:
            periodic.set()
            for server in self.servers:
                server.kill_group()
            shutil.rmtree(self.kvstore, ignore_errors=True)
        write_requests(self.out_dir / "requests.csv", client.records)
        description = self._description()
        if self.frozen is not None:
            description["freeze"] = self._freeze_facts(client)
        write_description(self.out_dir, description, client.windows, client.records)
        say(f"{self.scenario.name}: written to {self.out_dir}")
        return self.out_dir

    def _phases(self, client: LoadClient) -> None:
        stop = self.scenario.stop
        every = self.scenario.scrape_every_s
        for phase in self.scenario.phases:
            if self.stop_event is not None and stop.kind != "freeze":
                break
            self.phase = phase.name
            say(f"phase {phase.name} ({phase.kind}, {phase.seconds:.0f} s, concurrency {phase.concurrency})")
            done: set[str] = set()

            def tick(elapsed: float, phase=phase, done=done) -> None:
                if not every and phase.kind != "idle" and "mid" not in done and elapsed >= phase.seconds / 2:
                    done.add("mid")
                    self._scrape_all(phase.name, f"mid-load-phase(+{elapsed:.1f}s, in_flight={client.in_flight})")
                if stop.phase == phase.name and "stop" not in done and elapsed >= stop.after_s:
                    done.add("stop")
                    self._stop_action(client, elapsed)

            client.run(phase, on_tick=tick)
            if not every and self.stop_event is None and phase.kind == "idle":
                self._scrape_all(phase.name, "end-of-idle-phase")
        self.phase = "stop"

    def _scrape_every(self, client: LoadClient, done: threading.Event) -> None:
        """Every ``scrape_every_s``: each vLLM server's /health, then its /metrics, the health
        status and the requests in flight in the scrape's header."""
        every = self.scenario.scrape_every_s
        next_at = time.time()
        while not done.is_set():
            for server in self.vllm_servers():
                status = get(server.port, "/health", timeout_s=2.0)[0]
                self.health.setdefault(str(server.port), []).append((round(time.time(), 3), status))
                self.scrapes.scrape(server.port, self.phase,
                                    f"every-{every:g}s(in_flight={client.in_flight}, health={status})")
            next_at += every
            done.wait(max(0.0, next_at - time.time()))

    def _signal(self, sig: signal.Signals, pids: list[tuple[int, str]], client: LoadClient, why: str,
                t: float | None = None, **facts) -> None:
        """Write down a signal the kit sent at ``t`` (default: now): the README's table of signals."""
        t = time.time() if t is None else t
        self.signals.append({"t": round(t, 3), "utc": iso(t), "signal": sig.name, "why": why,
                             "pids": [pid for pid, _ in pids], "titles": [title[:80] for _, title in pids],
                             "in_flight": client.in_flight, "phase": self.phase, **facts})

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
        elif stop.kind == "freeze":
            self.frozen = freeze(server, stop.target)
            self._signal(signal.SIGSTOP, self.frozen.pids, client, f"freeze {stop.target}", t=self.frozen.stopped_at,
                         states=self.frozen.states)
            say(f"SIGSTOP to {self.frozen.describe()}, {client.in_flight} requests in flight "
                f"(states {self.frozen.states})")
            self.stop_event = {"kind": "freeze", "t": self.frozen.stopped_at, "target": stop.target,
                               "pids": [p for p, _ in self.frozen.pids], "titles": [t for _, t in self.frozen.pids],
                               "states": self.frozen.states, "in_flight": client.in_flight}
            self.stop_event["phase"], self.stop_event["after_s"] = stop.phase, round(elapsed, 3)
            return  # the clients keep sending to the end of the phases
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

    def _end(self, client: LoadClient, periodic: threading.Event) -> None:
        kind = self.scenario.stop.kind
        if kind == "freeze":
            self._end_freeze(client, periodic)
            return
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

    def _end_freeze(self, client: LoadClient, periodic: threading.Event) -> None:
        """After the last phase: the last scrape, SIGCONT to what was frozen, SIGINT to every server."""
        ev = self.stop_event or {}
        if self.scenario.scrape_every_s:
            time.sleep(self.scenario.scrape_every_s)
        periodic.set()
        if self.frozen is None:
            raise RuntimeError("the freeze never happened (its phase or after_s was never reached)")
        thaw(self.frozen)
        self._signal(signal.SIGCONT, self.frozen.pids, client, "thaw before the graceful stop",
                     t=self.frozen.continued_at)
        say(f"SIGCONT to {self.frozen.describe()} after {self.frozen.continued_at - self.frozen.stopped_at:.1f} s")
        codes = {}
        for server in self.servers:
            self._signal(signal.SIGINT, [(server.proc.pid, server.name)], client, "graceful stop")
            codes[server.name] = server.stop()
            say(f"{server.name} stopped with SIGINT: exit {codes[server.name]}")
        self.ending = (f"SIGSTOP to {ev.get('target')} ({', '.join(map(str, ev.get('pids', [])))}) "
                       f"{ev.get('after_s')} s into phase `{ev.get('phase')}` at {iso(ev.get('t', 0))}, "
                       f"{ev.get('in_flight')} requests in flight; held "
                       f"{self.frozen.continued_at - self.frozen.stopped_at:.1f} s while the clients kept "
                       f"sending, then SIGCONT at {iso(self.frozen.continued_at)} and SIGINT to every server "
                       f"(exit codes {codes}).")

    def _freeze_facts(self, client: LoadClient) -> dict:
        start, end = self.frozen.stopped_at, self.frozen.continued_at or time.time()
        watched = ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:generation_tokens_total",
                   "vllm:prompt_tokens_total", "vllm:kv_cache_usage_perc", "vllm:request_success_total",
                   "vllm:num_preemptions_total")
        logs = [self.out_dir / f"{s.name}.log" for s in self.servers]
        metrics = self.out_dir / "metrics.txt"
        return {"window": {"from": iso(start), "to": iso(end), "seconds": round(end - start, 3)},
                "frozen": [{"process": self.scenario.target, "target": self.frozen.target,
                            "pids": [f"{pid} {title[:60]!r}" for pid, title in self.frozen.pids],
                            "states": self.frozen.states}],
                "requests": hang_facts.request_facts(client.records, start, end),
                "logs": [hang_facts.log_facts(p, start, end) for p in logs if p.exists()],
                "metrics": [hang_facts.scrape_facts(metrics, start, end, watched)] if metrics.exists() else [],
                "health": {f"port {port}": facts for port, facts
                           in hang_facts.health_facts(self.health, start, end).items()}}

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
                         "target": sc.stop.target, "event": self.stop_event},
                "signals": self.signals, "health": self.health,
                "client_timeout_s": sc.client_timeout_s,
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
