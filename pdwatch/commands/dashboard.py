"""The dashboard of ``watch``, ``replay`` and ``demo``, run until q, Ctrl-C, a stop signal or a
failure inside it. The terminal is given back in every case; a failure is then told in one line
on stderr (exit status 1, as any uncaught error), its traceback kept in a file."""

from __future__ import annotations

import os
import sys
import tempfile
import traceback

from pdwatch.commands.stopping import StopSignals


def run_dashboard(app, stops: StopSignals) -> int:
    """Run ``app`` (a ``PdwatchApp``); its exit status."""
    from pdwatch.views.tui.run import DashboardRun  # Textual is imported only for the dashboard

    run = DashboardRun(app)
    with stops.diverted(run.stop):
        ending = run.run()
    stops.ignore()  # the dashboard has gone: what follows is the command's shutdown
    if ending.failed:
        saved = _save_traceback(ending.report or "".join(traceback.format_exception(ending.failure)))
        where = f" (its traceback is in {saved})" if saved else ""
        print(f"pdwatch: error: the dashboard failed: {_one_line(ending.failure)}{where}", file=sys.stderr, flush=True)
    return ending.status


def _one_line(error: BaseException | None) -> str:
    if error is None:
        return "an internal error"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def _save_traceback(text: str) -> str | None:
    try:
        fd, path = tempfile.mkstemp(prefix="pdwatch-crash-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError:
        return None
    return path
