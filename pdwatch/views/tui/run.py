"""One run of the dashboard, which gives the terminal back however it ends.

A stop signal asks the app to exit as q does (``DashboardRun.stop``), so Textual's driver
leaves the alternate screen and turns mouse reporting, bracketed paste and the hidden cursor
back off itself; pdwatch writes no escape sequence of its own. A failure inside the app is
Textual's to catch too (it restores the terminal first): the run says what failed, and keeps
the traceback Textual would have printed over the user's shell for a file instead.
"""

from __future__ import annotations

import asyncio
import io
from dataclasses import dataclass

from rich.console import Console

from .app import PdwatchApp


@dataclass(frozen=True)
class Ending:
    status: int  # 0: q; 128 + N: stopped by signal N (Ctrl-C: 130); 1: it failed
    failure: BaseException | None  # what failed inside the app
    report: str  # what Textual wrote about a failure (its traceback); "" when it wrote nothing

    @property
    def failed(self) -> bool:
        return self.failure is not None or bool(self.report)


class DashboardRun:
    """The app on an event loop of its own; ``stop`` may be called from a signal handler."""

    def __init__(self, app: PdwatchApp) -> None:
        self.app = app
        self.stopped_by: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._report = io.StringIO()
        app.error_console = Console(file=self._report, width=100, markup=False, highlight=False)

    def stop(self, signum: int) -> None:
        """Ask the app to exit with status 128 + ``signum``. Safe in a signal handler: the exit is
        handed to the event loop (as ``loop.add_signal_handler`` would), never run inside the handler."""
        self.stopped_by = signum
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.app.stop, 128 + signum)

    def run(self) -> Ending:
        asyncio.run(self._main())
        app = self.app
        report = self._report.getvalue().strip()
        if app.failure is not None or report:
            return Ending(1, app.failure, report)
        if self.stopped_by is not None:
            return Ending(128 + self.stopped_by, None, "")
        return Ending(app.return_code or 0, None, "")

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self.stopped_by is None:  # a signal before the loop ran: the terminal was never taken
            await self.app.run_async()
