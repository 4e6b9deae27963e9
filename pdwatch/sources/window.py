"""A window of a log around one line, for the dashboard's log viewer (evidence -> ``source:line``).

Bounded memory whatever the log's size: a local file is streamed and only the lines of the
window are kept; an ``ssh://`` source's remote file is cut on its host (``sed -n A,Bp``, run
through the same ssh options as the tails), so only the window crosses the network. Lines are
returned as text (decoded, long ones cut); nothing here interprets them.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass, field
from typing import Iterable

from .ssh_process import SshProcess
from .ssh_spec import is_ssh, parse_ssh

MAX_LINE_CHARS = 4096  # a line longer than this is cut (with "…") in the viewer
DEFAULT_CONTEXT = 300  # lines each side of the target


@dataclass
class LogWindow:
    source: str
    target: int  # the line asked for (1-based)
    first: int  # number of lines[0]
    lines: list[str] = field(default_factory=list)
    at_end: bool = False  # the file ended inside the window
    error: str | None = None

    @property
    def last(self) -> int:
        return self.first + len(self.lines) - 1


def read_window(source: str, line_no: int, *, before: int = DEFAULT_CONTEXT, after: int = DEFAULT_CONTEXT,
                ssh_args: Iterable[str] = (), ssh: str = "ssh", timeout: float = 20.0) -> LogWindow:
    """Lines ``line_no - before`` .. ``line_no + after`` of ``source`` (a local path, or the
    ``host:/path`` name of a file read through one of ``ssh_args``)."""
    lo, hi = max(1, line_no - before), line_no + after
    spec = _ssh_spec_of(source, ssh_args)
    if spec is not None:
        return _remote(source, spec[0], spec[1], line_no, lo, hi, ssh, timeout)
    window = LogWindow(source, line_no, lo)
    try:
        with open(source, "rb") as f:
            n = 0
            for n, raw in enumerate(f, 1):
                if n < lo:
                    continue
                if n > hi:
                    break
                window.lines.append(_text(raw))
            else:
                window.at_end = True
    except OSError as exc:
        window.error = f"{source}: {exc.strerror or exc}"
    return window


def _ssh_spec_of(source: str, ssh_args: Iterable[str]):
    for arg in ssh_args:
        if not is_ssh(arg):
            continue
        try:
            spec = parse_ssh(arg)
        except ValueError:
            continue
        prefix = f"{spec.host}:"
        if source.startswith(prefix):  # source_name(): host:/abs/path or host:~/home/relative
            path = source[len(prefix):]
            return spec, (path[2:] if path.startswith("~/") else path)
    return None


def _remote(source: str, spec, path: str, line_no: int, lo: int, hi: int, ssh: str, timeout: float) -> LogWindow:
    window = LogWindow(source, line_no, lo)
    script = f"sed -n '{lo},{hi}p;{hi + 1}q' {shlex.quote(path)}"
    proc = SshProcess(spec.ssh_argv(script, ssh=ssh))
    chunks: list[bytes] = []
    limit = (hi - lo + 1) * (MAX_LINE_CHARS * 4 + 1)  # bytes: the window, bounded
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            data = proc.read()
            if data:
                chunks.append(data)
                if sum(map(len, chunks)) > limit:
                    break
                continue
            proc.stderr_lines()
            if proc.finished():
                break
            time.sleep(0.02)
        else:
            window.error = f"{source}: no answer from ssh in {timeout:g} s"
        if proc.returncode not in (0, None) and not chunks:
            proc.stderr_lines()
            window.error = f"{source}: {proc.describe_exit()}"
    finally:
        proc.close()
    data = b"".join(chunks)
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    window.lines = [_text(x) for x in lines[: hi - lo + 1]]
    window.at_end = len(window.lines) < hi - lo + 1
    return window


def _text(raw: bytes) -> str:
    text = raw.rstrip(b"\r\n").decode("utf-8", "replace")
    return text if len(text) <= MAX_LINE_CHARS else text[: MAX_LINE_CHARS - 1] + "…"
