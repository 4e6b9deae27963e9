"""Start and stop one ``vllm serve`` (or the PD proxy), its stdout and stderr in one log file.

Each server runs in its own session (process group), so stopping it reaches every process
vLLM started (API servers, engine cores, workers) and nothing is left behind.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path


class ServerFailed(RuntimeError):
    """The server exited or never answered /health."""


@dataclass
class Server:
    name: str  # the log file's stem: server, prefill, decode, proxy
    port: int
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    log_path: Path | None = None
    proc: subprocess.Popen | None = None
    started_at: float = 0.0

    def start(self, out_dir: Path, append: bool = False) -> None:
        """``append``: a restart, whose output goes on in the same log (as a supervisor loop's would)."""
        self.log_path = out_dir / f"{self.name}.log"
        env = {**os.environ, **self.env}
        log = open(self.log_path, "ab" if append else "wb")
        self.started_at = time.time()
        self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env, start_new_session=True)
        log.close()

    def lower_priority(self, nice: int = 10) -> bool:
        """Give the server's whole session a lower CPU priority than the processes that watch it.

        ``nice`` on the command line is not enough: with the kernel's autogroup scheduling
        (``/proc/sys/kernel/sched_autogroup_enabled``), a process's nice value only ranks it within
        its own session, and the server runs in a session of its own; sessions share the CPUs
        equally. Under load a niced vLLM for CPU kept a watcher at nice 0 waiting up to 1.9 s
        for a core to run 10 ms of work. The session's own nice (``/proc/PID/autogroup``) is
        what ranks it against other sessions. False when the kernel has no autogroup."""
        try:
            Path(f"/proc/{self.proc.pid}/autogroup").write_text(str(nice))
        except OSError:
            return False
        return True

    def wait_ready(self, timeout_s: float = 300.0, path: str = "/health") -> float:
        """Seconds until GET ``path`` answers 200; ServerFailed if the process exits first."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise ServerFailed(f"{self.name} exited with {self.proc.returncode} before it was ready "
                                   f"(see {self.log_path})")
            if get(self.port, path, timeout_s=2.0)[0] == 200:
                return time.time() - self.started_at
            time.sleep(0.5)
        raise ServerFailed(f"{self.name} not ready after {timeout_s:.0f} s (see {self.log_path})")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def descendants(self) -> list[tuple[int, str]]:
        """(pid, process title) of every process under the server, parents first."""
        if self.proc is None:
            return []
        children: dict[int, list[int]] = {}
        titles: dict[int, str] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").strip()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
            titles[int(entry)] = cmdline.decode("utf-8", "replace")
        out, todo = [], list(children.get(self.proc.pid, []))
        while todo:
            pid = todo.pop(0)
            out.append((pid, titles.get(pid, "")))
            todo += children.get(pid, [])
        return out

    def signal(self, sig: int) -> None:
        if self.alive():
            self.proc.send_signal(sig)

    def stop(self, grace_s: float = 60.0) -> int | None:
        """SIGINT (what Ctrl-C sends), then SIGTERM, then SIGKILL to the whole group."""
        if self.proc is None:
            return None
        for sig, wait in ((signal.SIGINT, grace_s), (signal.SIGTERM, 10.0)):
            if self.proc.poll() is None:
                self.proc.send_signal(sig)
                try:
                    self.proc.wait(wait)
                except subprocess.TimeoutExpired:
                    continue
        self.kill_group()
        return self.proc.returncode

    def wait_exit(self, timeout_s: float) -> int | None:
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def kill_group(self) -> None:
        """Whatever is left of the server's process group (workers of a crashed engine)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass


def get(port: int, path: str, timeout_s: float = 5.0, host: str = "127.0.0.1") -> tuple[int | None, bytes]:
    """(status, body) of GET ``path``; (None, b"") when the connection fails."""
    try:
        conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        return resp.status, body
    except (OSError, http.client.HTTPException):
        return None, b""
