"""A replay's whole run, judged as ``pdwatch report`` judges it, beside the replay's clock.

Once a replay's files are read, its events (in the order they were read, which is the order
``report``'s sequential read gives the store) go into a store of their own on a worker thread,
and ``analysis.judge`` runs on it: the recorded scrapes added, every evaluation of the rule
clock. What comes out is the report's findings and diagnosis, by construction; the dashboard
shows them as the run's history (the timeline ahead of the clock, the jump to the first
trouble) and at the end of the replay, so the two views cannot tell different stories.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any, Callable

from pdwatch.diagnosis import Diagnosis, diagnose
from pdwatch.model.deployment import DeploymentModel, EndpointSpec
from pdwatch.model.partial import UNSTORED_KINDS
from pdwatch.parsers import Event
from pdwatch.rules import Rule
from pdwatch.rules.findings import severity_rank
from pdwatch.sources import SourceSet

from .snapshot import FindingRow

TROUBLE = "warning"  # the first finding at least this severe is "the first trouble"


class RunHistory:
    """``start`` judges the run on a daemon thread; until ``ready`` the properties are empty."""

    def __init__(self, rows_of: Callable[[Any], Callable[[list], tuple[FindingRow, ...]]]) -> None:
        self._rows_of = rows_of  # store -> (findings -> rows): the snapshot builder's rows, for that store
        self._done = threading.Event()
        self.analysis: Any = None
        self.error: str | None = None
        self.findings: tuple[FindingRow, ...] = ()
        self._diagnosis: Diagnosis | None = None
        self._started = False

    @property
    def ready(self) -> bool:
        return self._done.is_set()

    @property
    def started(self) -> bool:
        return self._started

    def grid(self) -> tuple[Any, Any] | None:
        """Where report's rule clock starts and its step (None: no run, or no timestamps)."""
        if self.analysis is None or self.analysis.clock is None:
            return None
        from pdwatch.session.analysis import evaluation_times
        times = evaluation_times(self.analysis.store, *self.analysis.clock)
        step = times[1] - times[0] if len(times) > 1 else None
        return (times[0], step) if step is not None else None

    def start(self, events: list[Event], sources: SourceSet, *, rules: list[Rule],
              specs: tuple[EndpointSpec, ...], paths: list[str]) -> None:
        self._started = True
        thread = threading.Thread(target=self._judge, args=(events, sources, rules, specs, paths),
                                  name="pdwatch-run-history", daemon=True)
        thread.start()

    def forget_store(self) -> None:
        """Drop the judged run's store (``analysis``): the findings and the diagnosis are kept. A replay
        does so once it has taken the grid and the scrapes from it (a day-long run's rows, ~150 MB)."""
        self.analysis = None

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def _judge(self, events: list[Event], sources: SourceSet, rules: list[Rule],
               specs: tuple[EndpointSpec, ...], paths: list[str]) -> None:
        try:
            from pdwatch.model.store import Store, searched_kinds
            from pdwatch.session.analysis import judge
            store = Store(DeploymentModel(specs), searched_kinds(rules))
            stored = [e for e in events if e.kind not in UNSTORED_KINDS]
            for i in range(0, len(stored), 20_000):
                store.add(stored[i:i + 20_000])
            analysis = judge(store, sources, [], rules=rules, paths=paths)
            self.findings = self._rows_of(store)(analysis.findings)
            # report's diagnosis (Analysis.diagnosis), made of the rows a UI shows
            self._diagnosis = diagnose(store, self.findings, analysis.clock[1] if analysis.clock else None)
            self.analysis = analysis
        except Exception as exc:  # the replay goes on without its history; the reason is shown
            self.error = f"the run's history could not be computed: {type(exc).__name__}: {exc}"
        finally:
            self._done.set()

    @property
    def diagnosis(self) -> Diagnosis | None:
        return self._diagnosis if self.ready else None

    @property
    def first_trouble(self) -> datetime | None:
        """When the run's first warning-or-worse finding started (None: it had none)."""
        return first_trouble(self.findings) if self.ready else None


def first_trouble(rows: tuple[FindingRow, ...]) -> datetime | None:
    """The start of the first of ``rows`` that is a warning or worse (None: none is)."""
    starts = [f.start for f in rows if severity_rank(f.severity) <= severity_rank(TROUBLE)]
    return min(starts) if starts else None
