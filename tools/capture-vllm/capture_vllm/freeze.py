"""Freeze processes of a running server with SIGSTOP, thaw them with SIGCONT: a hang, not a death.

A stopped process keeps its sockets, pipes, shared memory and children; it only never runs until
SIGCONT. From outside that is what a NIXL transfer that never completes, a collective stuck on a
peer, or a frozen node looks like: no exit, no traceback, nothing in the logs of the stopped
process, and whatever still runs around it left to notice (or not). Both capture kits use this.

``target`` says which processes of the server (``capture_vllm.server.Server``) are stopped:

- ``tree``: its main process and every descendant (a frozen node: the API server or the
  ``dynamo.vllm`` worker, vLLM's engine core, its model worker, the resource tracker);
- ``engine_core``: only vLLM's engine core (process title ``VLLM::EngineCore``, or
  ``VLLM::EngineCore_DPn``), its parent (the API server, the ``dynamo.vllm`` worker) and its own
  children (the model worker) left running: an engine core stuck while the API process lives;
- ``worker``: only vLLM's model worker (``VLLM::Worker``), the engine core left running and
  waiting for it, as it does for a worker stuck in a collective.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

TARGETS = ("tree", "engine_core", "worker")
_TITLE = {"engine_core": "::EngineCore", "worker": "::Worker"}


@dataclass
class Frozen:
    """Processes stopped together, and what happened to them (times in epoch seconds)."""

    target: str
    pids: list[tuple[int, str]]  # (pid, process title), parents first
    stopped_at: float = 0.0
    states: dict[int, str] = field(default_factory=dict)  # /proc state right after SIGSTOP: T is stopped
    continued_at: float | None = None
    gone: list[int] = field(default_factory=list)  # already exited when signalled

    def describe(self) -> str:
        return ", ".join(f"{pid} {title!r}" for pid, title in self.pids)


def pick(server, target: str) -> list[tuple[int, str]]:
    """(pid, title) of the processes ``target`` names in ``server``'s tree, parents first."""
    if target not in TARGETS:
        raise ValueError(f"unknown freeze target {target!r} (one of {', '.join(TARGETS)})")
    below = server.descendants()
    if target == "tree":
        return [(server.proc.pid, _title(server.proc.pid)), *below]
    found = [(pid, title) for pid, title in below if _TITLE[target] in title]
    if not found:
        raise RuntimeError(f"no {_TITLE[target]} process under {server.name}: {below}")
    return found


def _title(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").strip().decode("utf-8", "replace")
    except OSError:
        return ""


def state(pid: int) -> str:
    """The process's state letter in /proc (R running, S sleeping, T stopped, Z zombie), or "gone"."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


def freeze(server, target: str) -> Frozen:
    """SIGSTOP to every process ``target`` names, one after the other (parents first; the
    signals are microseconds apart), then each one's state read back."""
    frozen = Frozen(target, pick(server, target))
    frozen.stopped_at = time.time()
    for pid, _ in frozen.pids:
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            frozen.gone.append(pid)
    time.sleep(0.05)
    frozen.states = {pid: state(pid) for pid, _ in frozen.pids}
    return frozen


def thaw(frozen: Frozen) -> None:
    """SIGCONT to every process it stopped (children first)."""
    frozen.continued_at = time.time()
    for pid, _ in reversed(frozen.pids):
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
