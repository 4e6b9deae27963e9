"""Stop signals: SIGTERM (kill, a supervisor), SIGHUP (a dropped SSH session) and SIGINT (Ctrl-C) end
a long-running command through its normal shutdown, as Ctrl-C does, with the status a shell gives a
death by that signal: 128 + its number (143, 129, 130)."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class Stopped(KeyboardInterrupt):
    """A stop signal, raised where Ctrl-C's KeyboardInterrupt would be: every path that cleans up
    after Ctrl-C cleans up after it too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.status = 128 + signum


# Stops raised inside a finaliser, which Python swallowed: raised again a moment later.
_lost_stops: list[KeyboardInterrupt] = []
_RESURFACE_AFTER_S = 0.05


def resurface_lost_stops() -> None:
    """Make a stop that lands inside a finaliser (a ``__del__``, a weakref callback) stop the command.

    Python raises a signal's KeyboardInterrupt wherever the main thread is; inside a finaliser it is
    printed as "Exception ignored" and dropped, and the command goes on as if Ctrl-C had not been typed
    (seen: ``report -`` on an open pipe hung for good when Ctrl-C landed in the regex module's
    ``__del__`` while a pattern compiled). The hook keeps the stop and arms a one-shot timer whose
    SIGALRM raises it again in the main thread, by then out of the finaliser (if not, the hook runs
    again). A timer, not a thread or a signal sent now: either would be raised inside the hook, where
    it would be lost for good. Main thread only: only it can set signal handlers."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return
    previous = sys.unraisablehook
    if getattr(previous, "resurfaces_stops", False):
        return  # installed by an earlier command in this process

    def hook(unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            _lost_stops.append(unraisable.exc_value)
            signal.setitimer(signal.ITIMER_REAL, _RESURFACE_AFTER_S)
            return
        previous(unraisable)

    hook.resurfaces_stops = True
    sys.unraisablehook = hook
    signal.signal(signal.SIGALRM, _raise_lost_stop)


def _raise_lost_stop(_signum: int, _frame) -> None:
    if _lost_stops:
        stop = _lost_stops.pop()
        _lost_stops.clear()
        raise stop


def forget_lost_stops() -> None:
    """The command is stopping: a stop it lost earlier must not interrupt its shutdown."""
    _lost_stops.clear()
    if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
        signal.setitimer(signal.ITIMER_REAL, 0)


@contextmanager
def ctrl_c_held() -> Iterator[None]:
    """Ctrl-C waits (the signal stays pending) while inside, in the main thread; the threads it
    starts meanwhile keep it blocked for good, so that the main thread alone takes stop signals.

    Held while modules are imported and rules compiled: a KeyboardInterrupt inside a C extension's
    start-up can crash Python (orjson's: a segmentation fault), and one inside a finaliser or C code
    that clears errors is lost (the command then goes on as if Ctrl-C had not been typed). A thread
    that reads (stdin's, a pool's manager) must keep it blocked: a signal the kernel hands to it is
    raised in the main thread all the same, inside whatever it is doing."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        if signal.SIGINT not in before:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def exit_status(stop: KeyboardInterrupt) -> int:
    """A stop's exit status (a bare KeyboardInterrupt is Ctrl-C's: 130)."""
    return stop.status if isinstance(stop, Stopped) else 128 + signal.SIGINT


class StopSignals:
    """While a command runs (``with StopSignals() as stops:``), the first stop signal raises
    ``Stopped``, or, inside ``stops.diverted(handler)``, calls ``handler(signum)`` (the dashboard:
    it asks the app to exit). Once one has come, or the command has begun its shutdown
    (``stops.ignore()``), the others are ignored: a second Ctrl-C or a supervisor's repeated
    SIGTERM cannot break the shutdown half-way (it is short: each of its waits is bounded).

    Outside the main thread (a test calling a command in a thread) it does nothing: only the
    main thread can set signal handlers.
    """

    def __init__(self) -> None:
        self.received: int | None = None
        self._ignoring = False
        self._divert: Callable[[int], None] | None = None
        self._previous: dict[int, object] = {}

    def __enter__(self) -> "StopSignals":
        if threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        if self.received is not None:
            return  # the process is on its way out: a late signal must not interrupt its last steps
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def ignore(self) -> None:
        """The command is shutting down: from now on, stop signals change nothing."""
        self._ignoring = True

    @contextmanager
    def diverted(self, handler: Callable[[int], None]) -> Iterator[None]:
        """The first stop signal calls ``handler(signum)`` (in the main thread, between two of its
        steps) instead of raising, while inside."""
        self._divert = handler
        try:
            yield
        finally:
            self._divert = None

    def _handle(self, signum: int, _frame) -> None:
        if self.received is not None or self._ignoring:
            return
        self.received = signum
        if self._divert is not None:
            self._divert(signum)
        else:
            raise Stopped(signum)
