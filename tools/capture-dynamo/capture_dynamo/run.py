"""Run one Dynamo scenario: start its processes, load it, scrape every process's /metrics, do what
the scenario does mid-run, stop it gracefully, and write down what happened."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from capture_vllm.freeze import Frozen, freeze, thaw
from capture_vllm.load import LoadClient
from capture_vllm.record import iso, write_requests
from capture_vllm.run import VOCAB, say
from capture_vllm.server import Server, get

from .facts import write_description
from .scenarios import COMMON_ENV, WORKER_ARGS, Proc, Scenario

KIT = Path(__file__).resolve().parent.parent
CONFIG = KIT.parent / "capture-vllm" / "models" / "tiny-qwen3" / "config.json"
SERVED = "tiny-qwen3"
SCRAPE_EVERY_S = 2.0


def free_low_port() -> int:
    """A free port below 32768: Dynamo 1.6 reads DYN_SYSTEM_PORT as a signed 16-bit number and
    refuses the worker's start-up above it ("expected i16 for key SYSTEM_PORT"), and the
    kernel's own free ports (the ephemeral range) are above it."""
    for port in random.Random(os.getpid() + time.time_ns()).sample(range(20000, 32000), 500):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port between 20000 and 32000")


class Timeline:
    """What the kit did and saw, with UTC times: the README's "What happened"."""

    def __init__(self) -> None:
        self.entries: list[dict] = []

    def add(self, what: str, **facts) -> None:
        entry = {"t": round(time.time(), 3), "what": what, **facts}
        self.entries.append(entry)
        say(what)


class Scraper(threading.Thread):
    """Every ``SCRAPE_EVERY_S`` each process's /metrics appended to ``SCENARIO.PROC.metrics.txt``
    after a ``# ===== ... t=EPOCH (ISO) port=N =====`` header, as ``pdwatch record`` writes them;
    a failed scrape is counted, not written. Each process is read by a thread of its own, so that
    one that does not answer (a frozen worker: 3 s to time out) does not slow the others' pace.
    Beside each scrape a GET /health (2 s timeout), its status kept in ``health`` (None: no answer)."""

    def __init__(self, scenario: str, out_dir: Path, targets: dict[str, int], phase_of,
                 raw_jsonl: Path | None = None, metrics_txt: bool = True) -> None:
        """``raw_jsonl``: also (or, ``metrics_txt=False``, only) append each scrape there as srt-slurm's
        metrics scraper writes ``logs/raw_prometheus.jsonl``: one JSON object a line, ``{"timestamp_ns",
        "endpoint_url", "role", "worker_id", "text"}``, a failed scrape with ``"text": ""`` and ``"error"``
        (role and worker_id from the target's name: ``frontend``, ``agg_w0``, ``decode_w1``, ...)."""
        super().__init__(daemon=True)
        self.scenario, self.out_dir, self.targets, self.phase_of = scenario, out_dir, targets, phase_of
        self.raw_jsonl, self.metrics_txt = raw_jsonl, metrics_txt
        self._raw_lock = threading.Lock()
        self.done = threading.Event()
        self.taken: dict[str, int] = {name: 0 for name in targets}
        self.failed: dict[str, list[float]] = {name: [] for name in targets}
        self.health: dict[str, list[tuple[float, int | None]]] = {name: [] for name in targets}

    def run(self) -> None:
        threads = [threading.Thread(target=self._follow, args=(name, port), daemon=True)
                   for name, port in self.targets.items()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def _follow(self, name: str, port: int) -> None:
        next_at = time.time()
        while not self.done.is_set():
            self.health[name].append((round(time.time(), 3), get(port, "/health", timeout_s=2.0)[0]))
            t_ns = time.time_ns()  # srt-slurm's scraper stamps a record just before its GET
            status, body = get(port, "/metrics", timeout_s=3.0)
            t = time.time()
            if self.raw_jsonl is not None:
                self._raw_record(name, port, t_ns, status, body)
            if status != 200:
                self.failed[name].append(round(t, 3))
            elif not self.metrics_txt:
                self.taken[name] += 1
            else:
                header = (f"# ===== scenario={self.scenario} target={name} phase={self.phase_of()} "
                          f"t={t:.3f} ({iso(t)}) port={port} =====\n")
                with open(self.out_dir / f"{self.scenario}.{name}.metrics.txt", "a", encoding="utf-8") as f:
                    f.write(header + body.decode("utf-8", "replace"))
                self.taken[name] += 1
            next_at += SCRAPE_EVERY_S
            if next_at < time.time():  # a scrape that timed out: the next one now, not a burst of missed ones
                next_at = time.time()
            self.done.wait(max(0.0, next_at - time.time()))


    def _raw_record(self, name: str, port: int, t_ns: int, status: int | None, body: bytes) -> None:
        role, _, index = name.rpartition("_w") if "_w" in name else (name, "", "0")
        record = {"timestamp_ns": t_ns, "endpoint_url": f"http://127.0.0.1:{port}/metrics", "role": role,
                  "worker_id": int(index) if index.isdigit() else index}
        if status == 200:
            record["text"] = body.decode("utf-8", "replace")
        else:
            record["text"] = ""
            record["error"] = f"HTTP {status}" if status is not None else "no answer"
        line = json.dumps(record) + "\n"
        with self._raw_lock, open(self.raw_jsonl, "a", encoding="utf-8") as f:
            f.write(line)  # one write a record: the two scraping threads never interleave lines


class DynamoCapture:
    def __init__(self, scenario: Scenario, venv: Path, out_dir: Path):
        self.scenario, self.venv, self.out_dir = scenario, venv, out_dir
        self.scratch = Path(tempfile.mkdtemp(prefix="pdwatch-dynamo-"))
        self.model = self.scratch / SERVED
        self.http_port = free_low_port()
        self.system_ports = {p.name: (self.http_port if p.system_port == "frontend" else free_low_port())
                             for p in scenario.procs if p.kind == "worker"}
        self.nixl_ports = {p.name: free_low_port() for p in scenario.procs if p.kind == "worker"}
        for p in scenario.procs:
            if p.nixl_port_of:
                self.nixl_ports[p.name] = self.nixl_ports[p.nixl_port_of]
        self.servers = {p.name: self._server(p) for p in scenario.procs}
        self.timeline = Timeline()
        self.phase = "start-up"
        self.restarts: list[tuple[float, str]] = []  # (when, process) still to start again
        self.exits: dict[str, int | None] = {}
        self.frozen: list[tuple[str, Frozen]] = []  # (process, what was stopped), thawed before the stop

    # --- processes ----------------------------------------------------------------------------

    def _env(self, proc: Proc) -> dict[str, str]:
        env = {**COMMON_ENV, **dict(self.scenario.env),
               # no etcd or NATS: discovery through files, every plane on loopback
               "DYN_DISCOVERY_BACKEND": "file", "DYN_FILE_KV": str(self.scratch / "discovery"),
               "DYN_TCP_RPC_HOST": "127.0.0.1", "DYN_TCP_RESPONSE_STREAM_HOST": "127.0.0.1",
               "DYN_EVENT_PLANE_HOST": "127.0.0.1", "VLLM_HOST_IP": "127.0.0.1"}
        if proc.kind == "worker":
            env.update({"DYN_SYSTEM_HOST": "127.0.0.1", "DYN_SYSTEM_PORT": str(self.system_ports[proc.name]),
                        "VLLM_NIXL_SIDE_CHANNEL_PORT": str(self.nixl_ports[proc.name])})
            if proc.cpu is not None:
                env["VLLM_CPU_OMP_THREADS_BIND"] = proc.cpu
        env.update(dict(proc.env))
        return env

    def _server(self, proc: Proc) -> Server:
        python = str(self.venv / "bin" / "python")
        if proc.kind == "frontend":
            argv = [python, "-m", "dynamo.frontend", "--http-host", "127.0.0.1", "--http-port", str(self.http_port),
                    "--discovery-backend", "file", *proc.args]
            port = self.http_port
        else:
            argv = [python, "-m", "dynamo.vllm", "--model", str(self.model), "--served-model-name", SERVED,
                    "--discovery-backend", "file", *WORKER_ARGS, *proc.args]
            port = self.system_ports[proc.name]
        return Server(f"{self.scenario.name}.{proc.name}", port, argv, self._env(proc))

    def _start(self, name: str, append: bool = False) -> None:
        server = self.servers[name]
        server.start(self.out_dir, append=append)
        self.timeline.add(f"{'restarted' if append else 'started'} {name} (pid {server.proc.pid})",
                          process=name, pid=server.proc.pid, event="restart" if append else "start")

    def write_model(self) -> None:
        self.model.mkdir(parents=True)
        shutil.copy(CONFIG, self.model / "config.json")
        subprocess.run([str(self.venv / "bin" / "python"), str(Path(__file__).with_name("word_tokenizer.py")),
                        str(self.model)], check=True)

    # --- readiness ----------------------------------------------------------------------------

    def _wait(self, test, timeout_s: float, watch: list[str]) -> str:
        """"ready", "exited:NAME" (a watched process ended first) or "timeout"."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            for name in watch:
                if not self.servers[name].alive():
                    return f"exited:{name}"
            if test():
                return "ready"
            time.sleep(1.0)  # a readiness probe's pace; each 503 it gets is an ERROR line in the worker's log
        return "timeout"

    def model_listed(self) -> bool:
        status, body = get(self.http_port, "/v1/models", timeout_s=2.0)
        return status == 200 and SERVED.encode() in body

    def health(self, name: str) -> bool:
        return get(self.system_ports[name], "/health", timeout_s=2.0)[0] == 200

    def _bring_up(self) -> bool:
        """True when every worker that must be ready is, and the frontend lists the model."""
        workers = [p for p in self.scenario.procs if p.kind == "worker"]
        self._start("frontend")
        got = self._wait(lambda: get(self.http_port, "/v1/models", timeout_s=2.0)[0] == 200, 60, ["frontend"])
        if got != "ready":
            raise RuntimeError(f"the frontend did not come up ({got}); see {self.servers['frontend'].log_path}")
        for proc in workers:
            self._start(proc.name)
        ready = True
        for proc in workers:
            if proc.must_be_ready:
                got = self._wait(lambda name=proc.name: self.health(name), 300, [proc.name])
                if got != "ready":
                    raise RuntimeError(f"{proc.name} never became ready ({got})")
                self.timeline.add(f"{proc.name} /health answers 200", process=proc.name, event="healthy")
            else:
                # A worker expected to fail: given 2 minutes to come up or go (its /health may be no
                # worker's at all when its port is taken, so the model being listed is the test).
                shares_port = self.system_ports[proc.name] == self.http_port
                test = self.model_listed if shares_port else (lambda name=proc.name: self.health(name))
                got = self._wait(test, 120, [proc.name])
                code = self.servers[proc.name].proc.poll()
                said = {"ready": "came up anyway (" + ("the model listed" if shares_port else "/health 200") + ")",
                        "timeout": "did not come up within 120 s"}.get(got, "exited before it came up")
                self.timeline.add(f"{proc.name} {said}" + (f", exit code {code}" if code is not None
                                                           else ", still running"),
                                  process=proc.name, event="not_ready", outcome=got, code=code)
                ready = ready and got == "ready"
        if ready or any(p.kind == "worker" and p.must_be_ready for p in self.scenario.procs):
            got = self._wait(self.model_listed, 60, ["frontend"])
            if got != "ready":
                raise RuntimeError(f"the frontend never listed {SERVED} ({got})")
            if len(workers) > 1:
                time.sleep(5)  # the frontend finds the prefill workers through discovery too
            self.timeline.add(f"ready: the frontend lists {SERVED}", event="ready")
        return ready

    # --- mid-run actions ----------------------------------------------------------------------

    def _act(self, phase: str, elapsed: float, client: LoadClient, done: set) -> None:
        for i, action in enumerate(self.scenario.actions):
            if action.phase == phase and i not in done and elapsed >= action.after_s:
                done.add(i)
                server = self.servers[action.proc]
                if action.kind == "freeze":
                    frozen = freeze(server, action.target)
                    self.frozen.append((action.proc, frozen))
                    self.timeline.add(f"SIGSTOP to {action.proc} {action.target} ({frozen.describe()}; states "
                                      f"{frozen.states}), {client.in_flight} requests in flight, {elapsed:.1f} s "
                                      f"into {phase}", process=action.proc, event="sigstop", target=action.target,
                                      pids=[pid for pid, _ in frozen.pids], states=frozen.states,
                                      in_flight=client.in_flight, t_signal=round(frozen.stopped_at, 3))
                    continue
                children = [pid for pid, _ in server.descendants()]
                os.kill(server.proc.pid, signal.SIGKILL)
                self.timeline.add(f"SIGKILL to {action.proc} (pid {server.proc.pid}; its children {children} left "
                                  f"to react), {client.in_flight} requests in flight, {elapsed:.1f} s into {phase}",
                                  process=action.proc, pid=server.proc.pid, event="sigkill",
                                  in_flight=client.in_flight)
                server.proc.wait(10)
                if action.kind == "restart":
                    self.restarts.append((time.time() + action.down_s, action.proc))
        for when, name in list(self.restarts):
            if time.time() >= when:
                self.restarts.remove((when, name))
                self.servers[name].kill_group()  # what is left of the old one
                self._start(name, append=True)

    # --- the run ------------------------------------------------------------------------------

    def run(self) -> Path:
        self.out_dir.mkdir(parents=True)
        client = LoadClient(self.http_port, SERVED, vocab=VOCAB, words=True, timeout_s=self.scenario.client_timeout_s)
        scraper = Scraper(self.scenario.name, self.out_dir,
                          {"frontend": self.http_port,
                           **{n: p for n, p in self.system_ports.items() if p != self.http_port}},
                          lambda: self.phase)
        try:
            self.write_model()
            ready = self._bring_up()
            scraper.start()
            done: set = set()
            for phase in self.scenario.phases:
                self.phase = phase.name
                self.timeline.add(f"phase {phase.name} ({phase.kind}, {phase.seconds:.0f} s, "
                                  f"concurrency {phase.concurrency})", event="phase", phase=phase.name)
                client.run(phase, on_tick=lambda el, name=phase.name: self._act(name, el, client, done))
            while self.restarts:
                self._act("", 0.0, client, done)
                time.sleep(0.25)
            self.phase = "stop"
            time.sleep(SCRAPE_EVERY_S)
            scraper.done.set()
            scraper.join(10)
            self._thaw(client)
            self._stop()
        finally:
            scraper.done.set()
            for server in self.servers.values():
                server.kill_group()
            shutil.rmtree(self.scratch, ignore_errors=True)
        write_requests(self.out_dir / f"{self.scenario.name}.requests.csv", client.records)
        write_description(self, client, scraper, ready)
        say(f"{self.scenario.name}: written to {self.out_dir}")
        return self.out_dir

    def _thaw(self, client: LoadClient) -> None:
        """SIGCONT to whatever was frozen, before the graceful stop."""
        for name, frozen in self.frozen:
            thaw(frozen)
            self.timeline.add(f"SIGCONT to {name} {frozen.target} ({', '.join(str(p) for p, _ in frozen.pids)}) after "
                              f"{frozen.continued_at - frozen.stopped_at:.1f} s stopped, {client.in_flight} requests "
                              f"in flight", process=name, event="sigcont", target=frozen.target,
                              pids=[pid for pid, _ in frozen.pids], in_flight=client.in_flight,
                              t_signal=round(frozen.continued_at, 3))

    def _stop(self) -> None:
        """Workers first, then the frontend, each with SIGINT (an operator's Ctrl-C, what a
        graceful Dynamo shutdown starts from), then SIGTERM and SIGKILL if it hangs."""
        order = [p.name for p in self.scenario.procs if p.kind == "worker"] + ["frontend"]
        for name in order:
            server = self.servers[name]
            if not server.alive():
                self.exits[name] = server.proc.returncode
                continue
            self.timeline.add(f"SIGINT to {name} (pid {server.proc.pid})", process=name, event="sigint")
            code = server.stop(grace_s=40.0)
            self.exits[name] = code
            self.timeline.add(f"{name} exited with {code}", process=name, event="exit", code=code)

    def command_lines(self) -> list[dict]:
        out = []
        for proc in self.scenario.procs:
            server = self.servers[proc.name]
            env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(server.env.items()))
            argv = ["python", *server.argv[1:]]
            out.append({"name": proc.name, "log": f"{server.name}.log", "env": server.env, "argv": server.argv,
                        "command": f"env {env} {' '.join(shlex.quote(a) for a in argv)}"})
        return out
