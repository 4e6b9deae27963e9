"""Stop signals: SIGTERM (kill, a supervisor), SIGHUP (a dropped SSH session) and SIGINT (Ctrl-C) end
a long-running command through its normal shutdown, as Ctrl-C does, with the status a shell gives a
death by that signal: 128 + its number (143, 129, 130)."""

from __future__ import annotations

import signal
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
