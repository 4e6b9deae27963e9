"""Ctrl-C ends ``pdwatch parse`` and ``pdwatch report`` with status 130 and no traceback: also while
their modules are still loading (a KeyboardInterrupt inside a C extension's start-up crashed
Python), and while they read standard input from a pipe that stays open (``tail -f x.log |
pdwatch report -``: the reading thread must not keep Python from exiting). Ctrl-C is typed on a
real pseudo-terminal, so the kernel sends SIGINT to the command's whole process group, as in a shell."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from tests.tui.pty_helpers import REPO, PtyRun

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a Linux pseudo-terminal")

SAMPLE = REPO / "samples" / "prefill-bound"
LOGS = b"".join(p.read_bytes() for p in sorted(SAMPLE.glob("*.out")))


class OpenPipe:
    """A pipe fed with ``data`` whose writing end stays open afterwards, as ``tail -f`` keeps it."""

    def __init__(self, data: bytes) -> None:
        self.read_end, self._write_end = os.pipe()
        self.capacity = fcntl.fcntl(self._write_end, fcntl.F_GETPIPE_SZ)
        self.written = 0
        self._data = data
        self._thread = threading.Thread(target=self._feed, daemon=True)

    def start(self) -> None:
        os.close(self.read_end)  # the command has its own copy
        self.read_end = -1
        self._thread.start()

    def _feed(self) -> None:
        view = memoryview(self._data)
        try:
            while self.written < len(view):
                self.written += os.write(self._write_end, view[self.written:self.written + 65536])
        except OSError:  # the reader went away
            pass

    def wait_read(self, timeout: float = 60.0) -> bool:
        """Until the command has read from it: more was written than the pipe holds."""
        deadline = time.monotonic() + timeout
        while self.written <= self.capacity and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.written > self.capacity

    def close(self) -> None:
        for fd in (self.read_end, self._write_end):
            if fd >= 0:
                os.close(fd)


@pytest.mark.parametrize("command", ["parse", "report"])
def test_ctrl_c_while_reading_an_open_pipe(command):
    assert len(LOGS) > 2 * 65536  # more than a default pipe holds
    pipe = OpenPipe(LOGS)
    try:
        with PtyRun.pdwatch(command, "-", stdin=pipe.read_end) as run:
            pipe.start()
            assert pipe.wait_read(), f"{command} read nothing from its stdin:\n{run.text()[-2000:]}"
            run.type(b"\x03")
            assert run.finish() == 130, run.text()[-2000:]
            assert "Traceback" not in run.text() and "Fatal Python error" not in run.text(), run.text()[-2000:]
    finally:
        pipe.close()


def test_ctrl_c_stops_parse_follow():
    with PtyRun.pdwatch("parse", "--follow", str(SAMPLE)) as run:
        assert run.read_until(lambda out: b'"kind"' in out, 60), run.text()[-2000:]
        run.type(b"\x03")
        assert run.finish() == 130
        assert "Traceback" not in run.text(), run.text()[-2000:]


def wait_loaded(pid: int, library: str, timeout: float = 60.0) -> bool:
    """Until the process runs pdwatch (its fork of this process has been replaced) and has mapped a
    shared library whose path holds ``library``: it is importing the module that needs it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline, open(f"/proc/{pid}/maps") as maps:
                if b"\0pdwatch\0" in cmdline.read() and library in maps.read():
                    return True
        except OSError:
            pass
        time.sleep(0.002)
    return False


@pytest.mark.parametrize("args, library", [(["parse", "--follow", str(SAMPLE)], "orjson"),
                                           (["report", str(SAMPLE)], "hyperscan")], ids=["parse", "report"])
def test_ctrl_c_while_the_command_loads(args, library):
    # As soon as the command's modules load a C extension (orjson: parse's JSON; hyperscan: the parsers').
    with PtyRun.pdwatch(*args) as run:
        assert wait_loaded(run.pid, library), run.text()[-2000:]
        run.type(b"\x03")
        assert run.finish() == 130, run.text()[-2000:]
        assert "Traceback" not in run.text() and "Fatal Python error" not in run.text(), run.text()[-2000:]


# Ctrl-C lands inside a finaliser: Python prints "Exception ignored" and drops the KeyboardInterrupt.
_LOST_IN_A_FINALISER = """
    import os, signal, sys, time
    from pdwatch.commands.stopping import resurface_lost_stops
    if sys.argv[-1] == "hooked":
        resurface_lost_stops()

    class Finalised:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)  # raised at the next step, still inside __del__
            sum(range(1000))

    try:
        Finalised()
        time.sleep(10)  # the command waiting on an open pipe
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(0)
"""


def ctrl_c_as_in_a_terminal() -> None:
    """The child takes SIGINT's default disposition, as under a terminal's shell: a test runner
    started in the background (``nohup ... &``) has it ignored, and its children inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("hooked", [False, True], ids=["python-alone", "pdwatch"])
def test_a_ctrl_c_lost_inside_a_finaliser_still_stops_the_command(hooked):
    # Seen: `report -` on an open pipe never ended when Ctrl-C landed in the regex module's __del__.
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_LOST_IN_A_FINALISER), "hooked" if hooked else "plain"],
                          cwd=REPO, capture_output=True, text=True, timeout=30, preexec_fn=ctrl_c_as_in_a_terminal)
    if hooked:
        assert done.returncode == 130, done.stderr
        assert "Exception ignored" not in done.stderr, done.stderr
    else:  # what the hook is for: without it the interrupt is gone and the wait runs out
        assert done.returncode == 0 and "Exception ignored" in done.stderr, done.stderr


def test_an_interrupt_caught_after_exec_leaves_with_the_status_given(tmp_path):
    # CPython marks a KeyboardInterrupt raised inside exec() of a string (dataclasses build their
    # methods so, at import) as unhandled even once caught, and `python -m` then dies of SIGINT
    # instead of exiting 130 (seen in CI: -2 from `python -m pdwatch report -`). main clears the mark.
    (tmp_path / "interrupted.py").write_text(textwrap.dedent("""
        import os, signal, sys
        from pdwatch import cli
        try:
            exec("import os, signal\\nos.kill(os.getpid(), signal.SIGINT)\\nsum(range(1000))")
        except KeyboardInterrupt:
            if sys.argv[-1] == "cleared":
                cli._unmark_interrupt_as_unhandled()
        raise SystemExit(130)
    """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}

    def run(how: str) -> int:
        return subprocess.run([sys.executable, "-m", "interrupted", how], cwd=tmp_path, env=env, timeout=30,
                              preexec_fn=ctrl_c_as_in_a_terminal).returncode

    assert run("cleared") == 130
    plain = run("plain")
    if plain != -signal.SIGINT:
        pytest.skip(f"this Python ({sys.version.split()[0]}) keeps exec's interrupt to itself: exit {plain}")
