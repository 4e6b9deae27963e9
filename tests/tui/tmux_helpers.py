"""A command run in a real terminal emulator (tmux), whose screen the tests read as a user sees it.

``pty_helpers`` reads the bytes a command writes; tmux also draws them, so ``screen()`` is the
grid of characters on the terminal at that moment (what a screenshot would show), and ``keys``
types as a user does. Each run has its own tmux server (``-L``): nothing of the user's is touched.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]


def have_tmux() -> bool:
    return shutil.which("tmux") is not None


class Tmux:
    def __init__(self, command: str, *, cols: int = 80, rows: int = 24, cwd: Path = REPO) -> None:
        """``command``: a shell command line; ``pdwatch`` in it is this checkout's (``python -m pdwatch``)."""
        self.socket = f"pdwatch-test-{uuid.uuid4().hex[:8]}"
        # COLUMNS / LINES from the test process would override the terminal's size (Textual reads them)
        shell = (f"unset COLUMNS LINES; cd {shlex.quote(str(cwd))} || exit 1; "
                 f"pdwatch() {{ {shlex.quote(sys.executable)} -m pdwatch \"$@\"; }}; "
                 f"{command}\nsleep 30")  # the screen stays up a while after it ends, to be read
        self._tmux("new-session", "-d", "-x", str(cols), "-y", str(rows), "-s", "t", "bash", "-c", shell)

    def _tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args], check=True,
                              capture_output=True, text=True, timeout=30).stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "t")

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "t", *keys)

    def wait_for(self, predicate: Callable[[str], bool], timeout: float = 60.0) -> str:
        """The screen once ``predicate(screen)`` holds; AssertionError with the screen after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            shown = self.screen()
            if predicate(shown):
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"not on the screen after {timeout} s:\n{shown}")
            time.sleep(0.3)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)

    def __enter__(self) -> "Tmux":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
