"""vLLM Prometheus ``/metrics`` as a source of pdwatch events (issue 6).

- ``exposition``: one exposition text (+ the previous scrape's counters) -> ``stats`` events,
  the same kind and keys the log parsers emit.
- ``recorded``: a recorded scrape file (``# ===== … t=EPOCH (ISO) port=N =====`` headers) -> events.
- ``scrape``: polls ``http://HOST:PORT/metrics`` -> events.
- ``exporter``: serves pdwatch's own view as Prometheus metrics.
"""

import importlib
from typing import Any

# Loaded on first use (PEP 562): prometheus_client's parser, which ``exposition`` needs, is
# ~35 ms that a ``pdwatch parse`` of plain files would otherwise pay at every start.
_HOME = {
    "CounterState": "exposition", "ExpositionError": "exposition", "events_from_exposition": "exposition",
    "RecordedScrape": "recorded", "read_recorded": "recorded", "read_recorded_text": "recorded",
    "split_scrapes": "recorded",
    "MetricsScraper": "scrape", "ScrapeError": "scrape", "SourceStatus": "scrape", "fetch": "scrape",
    "normalize_url": "urls",
}

__all__ = list(_HOME)  # the exporter (prometheus_client server) is imported from pdwatch.metrics.exporter


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
