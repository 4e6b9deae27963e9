"""The terminal is always given back: however the dashboard ends (q, SIGTERM, SIGHUP, SIGINT, Ctrl-C,
a dropped SSH session, a failure inside it), it leaves the alternate screen and turns mouse
reporting, bracketed paste and the hidden cursor off, as q does, and exits with 128 + the signal's
number (0 for q, 1 for a failure, with one line saying what failed).

Each case runs the real command on a real pseudo-terminal of 80x24 and reads every byte it writes.
"""

from __future__ import annotations

import signal
import sys

import pytest

from tests.tui.pty_helpers import ALT_SCREEN_ON, MODES, REPO, PtyRun, after_restore, modes_left_on, modes_turned_on

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a Linux pseudo-terminal")

SAMPLE = str(REPO / "samples" / "prefill-bound")
DRAWN = b"prefill_w"  # an endpoint's name: the dashboard has read the logs and drawn them


def assert_given_back(run: PtyRun) -> None:
    out = bytes(run.out)
    assert modes_turned_on(out) == list(MODES), "the dashboard did not start as expected"
    assert modes_left_on(out) == [], f"left on: {modes_left_on(out)}; the end of the output:\n{out[-1500:]!r}"
    assert "Traceback" not in run.text(), run.text()[-3000:]


def test_q_gives_the_terminal_back():
    with PtyRun.pdwatch("replay", SAMPLE) as run:
        run.wait_drawn(DRAWN)
        run.type(b"q")
        assert run.finish() == 0
        assert_given_back(run)


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)],
                         ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_stop_signal_gives_the_terminal_back(signum, status):
    with PtyRun.pdwatch("replay", SAMPLE) as run:
        run.wait_drawn(DRAWN)
        run.kill(signum)
        assert run.finish() == status
        assert_given_back(run)
        assert after_restore(bytes(run.out)).strip() == ""


def test_ctrl_c_quits_as_sigint_does_even_in_a_text_box():
    with PtyRun.pdwatch("replay", SAMPLE) as run:
        run.wait_drawn(DRAWN)
        for _ in range(30):  # g opens the "go to" box once the replay has read its logs
            run.type(b"g")
            if run.read_until(lambda out: b"Go to:" in out, 2):
                break
        run.type(b"+5")
        assert run.read_until(lambda out: b"+5" in out[out.rfind(b"Go to:"):], 10), run.text()[-2000:]
        run.type(b"\x03")  # the terminal is raw: Ctrl-C is a key, not a SIGINT
        assert run.finish() == 130
        assert_given_back(run)


def test_signals_during_the_shutdown_change_nothing():
    with PtyRun.pdwatch("replay", SAMPLE) as run:
        run.wait_drawn(DRAWN)
        run.kill(signal.SIGTERM)
        # Once the driver has begun to give the terminal back, more signals: an impatient user or supervisor.
        paste_on, paste_off = MODES["bracketed paste"]
        assert run.read_until(lambda out: out.rfind(paste_off) > out.rfind(paste_on), 30), run.text()[-2000:]
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            try:
                run.kill(signum)
            except ProcessLookupError:  # already gone: nothing left to disturb
                break
        assert run.finish() == 143
        assert_given_back(run)


def test_a_dropped_ssh_session_ends_the_dashboard():
    # sshd closes the terminal's other end: the kernel sends SIGHUP and every write to it fails from then on.
    with PtyRun.pdwatch("replay", SAMPLE) as run:
        run.wait_drawn(DRAWN)
        run.hang_up()
        assert run.wait(30) == 129


# The failure: the help screen raises while it is composed, inside the real command (pdwatch.cli.main),
# in a child process on the pseudo-terminal. No input makes the dashboard fail on purpose (each bug
# found is fixed), so the fault is put in from outside, as test_tui_faults.py fills the disk.
FAILING_HELP = """
import sys
from pdwatch.views.tui.screens.help import HelpScreen
def compose(self):
    raise RuntimeError("the help screen could not be built")
HelpScreen.compose = compose
from pdwatch.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_failure_inside_the_dashboard_gives_the_terminal_back_and_says_what_failed(tmp_path):
    with PtyRun([sys.executable, "-c", FAILING_HELP, "replay", SAMPLE], env={"TMPDIR": str(tmp_path)}) as run:
        run.wait_drawn(DRAWN)
        run.type(b"?")
        assert run.finish() == 1
        assert_given_back(run)
        said = after_restore(bytes(run.out)).strip().splitlines()
        assert len(said) == 1, said
        assert said[0].startswith("pdwatch: error: the dashboard failed: RuntimeError: the help screen could not be "
                                  "built (its traceback is in " + str(tmp_path)), said
        [saved] = tmp_path.glob("pdwatch-crash-*.txt")
        assert saved.name in said[0] and "the help screen could not be built" in saved.read_text()


def test_the_demo_gives_the_terminal_back_and_says_where_its_logs_are(tmp_path):
    with PtyRun.pdwatch("demo", "--duration", "10m", "--interval", "1", "--topology", "1xDEP2-1xDEP2", "--cc", "32",
                        env={"TMPDIR": str(tmp_path)}) as run:
        run.wait_drawn(b"SIMULATION")
        run.kill(signal.SIGTERM)
        assert run.finish() == 143
        assert_given_back(run)
        closing = after_restore(bytes(run.out)).strip()
        assert closing.startswith("pdwatch demo: stopped; the simulated logs are in " + str(tmp_path)), closing


# -- headless: no terminal modes, but the same exit statuses and no traceback ---------------------------


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)],
                         ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_headless_watch_stops_on_a_signal(signum, status):
    with PtyRun.pdwatch("watch", "--headless", SAMPLE) as run:
        # The logs already there are judged at start: their findings are printed at once.
        assert run.read_until(lambda out: b"FIRING" in out, 60), run.text()
        run.kill(signum)
        assert run.finish() == status, run.text()[-3000:]
        assert "Traceback" not in run.text() and ALT_SCREEN_ON not in run.out, run.text()[-3000:]

