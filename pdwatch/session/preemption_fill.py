"""A server's /metrics preemption counts given to its log's stats lines, which print none.

vLLM 0.32's stats line prints no preemptions; its /metrics counts them. When a worker's log and
its scrapes are both read, each scrape's counter increase goes to the log's lines between it and
the previous scrape (``Store.spread_unknown``), when the scrapes are close enough (3 stats
intervals at most) to say which lines had them; an increase over a span with no line yet goes
on to the next span. ``report`` feeds an endpoint's scrapes at once; ``watch`` feeds them as they
come, so the state is kept between calls.
"""

from __future__ import annotations

from datetime import datetime
from typing import Iterable

from pdwatch.model.store import Store
from pdwatch.parsers import Event

MAX_SPAN_INTERVALS = 3


class PreemptionFill:
    def __init__(self) -> None:
        self._previous: dict[tuple[str, int], datetime] = {}  # (endpoint, engine) -> the last scrape's time
        self._carried: dict[tuple[str, int], float] = {}  # an increase still waiting for lines to go to

    def feed(self, store: Store, name: str, scrapes: Iterable[Event]) -> int:
        """Give the preemptions of ``scrapes`` (stats events of ``name``'s /metrics, in time order)
        to its log's lines; returns how many lines learned theirs."""
        interval = store.model.endpoints[name].facts.get("stats_interval_s") or 10.0
        filled = 0
        for event in scrapes:
            if event.ts is None:
                continue
            key = (name, 0 if event.engine is None else event.engine)
            increase = event.values.get("preemptions")
            previous = self._previous.get(key)
            if increase is not None and previous is not None and \
                    (event.ts - previous).total_seconds() <= MAX_SPAN_INTERVALS * interval:
                total = increase + self._carried.pop(key, 0.0)
                done = store.spread_unknown(name, "preemptions", key[1], previous, event.ts, total)
                if not done:  # no line between these two scrapes: the span grows to the next one
                    self._carried[key] = total
                    continue
                filled += done
            self._carried.pop(key, None)
            self._previous[key] = event.ts
        return filled
