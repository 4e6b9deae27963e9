"""A command run on a real pseudo-terminal, as a user's shell runs it: the tests of what pdwatch
leaves on the terminal read every byte it writes there and send it signals and keys."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]

# Each mode Textual's driver turns on, with the sequences that turn it on and off.
MODES = {
    "alternate screen": (b"\x1b[?1049h", b"\x1b[?1049l"),
    "mouse reporting (clicks)": (b"\x1b[?1000h", b"\x1b[?1000l"),
    "mouse reporting (motion)": (b"\x1b[?1003h", b"\x1b[?1003l"),
    "mouse reporting (SGR)": (b"\x1b[?1006h", b"\x1b[?1006l"),
    "bracketed paste": (b"\x1b[?2004h", b"\x1b[?2004l"),
    "hidden cursor": (b"\x1b[?25l", b"\x1b[?25h"),
}
ALT_SCREEN_ON, ALT_SCREEN_OFF = MODES["alternate screen"]
# CSI (\x1b[...X), OSC (\x1b]...BEL, e.g. the mouse pointer's shape), character sets (\x1b(B), and the rest
_ESCAPE = re.compile(rb"\x1b(?:\[[0-9;?<>=$]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()*+][0-9A-Za-z]|[@-Z\\-_])")


def modes_left_on(out: bytes) -> list[str]:
    """The modes whose last "on" sequence no "off" sequence followed."""
    return [name for name, (on, off) in MODES.items() if out.rfind(on) > out.rfind(off)]


def modes_turned_on(out: bytes) -> list[str]:
    return [name for name, (on, _off) in MODES.items() if on in out]


def after_restore(out: bytes) -> str:
    """What was written once the alternate screen was left, as text (escape sequences removed)."""
    return _ESCAPE.sub(b"", out[out.rfind(ALT_SCREEN_OFF) + len(ALT_SCREEN_OFF):]).decode(errors="replace")


class PtyRun:
    """``argv`` in its own session on a new pseudo-terminal of ``rows`` x ``cols`` (its controlling
    terminal: Ctrl-C typed on it is a SIGINT to it, closing it is the hangup of a dropped SSH session)."""

    def __init__(self, argv: list[str], *, rows: int = 24, cols: int = 80, env: dict | None = None,
                 cwd: Path = REPO, stdin: int | None = None) -> None:
        """``stdin``: a file descriptor to read instead of the terminal (the read end of a pipe)."""
        environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        environ.update(TERM="xterm-256color", **(env or {}))
        self.out = bytearray()
        self.eof = False
        self.status: int | None = None
        pid, fd = pty.fork()
        if pid == 0:  # the child: only system calls between the fork and the exec
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
                # Ctrl-C as under a terminal's shell: a runner started in the background (nohup ... &)
                # has SIGINT ignored, and that would be inherited.
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                if stdin is not None:
                    os.dup2(stdin, 0)
                os.chdir(cwd)
                os.execve(argv[0], argv, environ)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd

    @classmethod
    def pdwatch(cls, *args: str, **kw) -> "PtyRun":
        return cls([sys.executable, "-m", "pdwatch", *args], **kw)

    def read_until(self, predicate: Callable[[bytes], bool], timeout: float) -> bool:
        """Read what the command writes until ``predicate(all of it)`` holds (True), it closes the
        terminal, or ``timeout`` seconds pass (False)."""
        deadline = time.monotonic() + timeout
        while not predicate(bytes(self.out)):
            left = deadline - time.monotonic()
            if self.eof or left <= 0:
                return False
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.5))
            if ready:
                try:
                    chunk = os.read(self.fd, 1 << 16)
                except OSError:  # EIO: every process holding the terminal has closed it
                    chunk = b""
                if not chunk:
                    self.eof = True
                self.out += chunk
        return True

    def wait_drawn(self, text: bytes, timeout: float = 60.0) -> None:
        """Until the dashboard has switched to the alternate screen and drawn ``text`` there."""
        drawn = self.read_until(lambda out: ALT_SCREEN_ON in out and text in out[out.find(ALT_SCREEN_ON):], timeout)
        assert drawn, f"the dashboard did not draw {text!r} in {timeout} s:\n{self.text()[-3000:]}"

    def type(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def kill(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def finish(self, timeout: float = 30.0) -> int | None:
        """Read everything until the command closes the terminal, and its exit status (-N: killed by
        signal N without a say; None: still running after ``timeout`` s, then killed)."""
        self.read_until(lambda _out: False, timeout)
        return self.wait(max(1.0, timeout / 3))

    def wait(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                self.close()
                return None
            time.sleep(0.05)
        return self.status

    def hang_up(self) -> None:
        """Close the terminal's other end, as sshd does when the connection drops."""
        os.close(self.fd)
        self.fd = -1

    def close(self) -> None:
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.status = -signal.SIGKILL
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def text(self) -> str:
        return bytes(self.out).decode(errors="replace")

    def __enter__(self) -> "PtyRun":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
