"""vLLM Prometheus ``/metrics`` as a source of pdwatch events (issue 6).

- ``exposition``: one exposition text (+ the previous scrape's counters) -> ``stats`` events,
  the same kind and keys the log parsers emit.
- ``recorded``: a recorded scrape file (``# ===== … t=EPOCH (ISO) port=N =====`` headers) -> events.
- ``scrape``: polls ``http://HOST:PORT/metrics`` -> events.
- ``exporter``: serves pdwatch's own view as Prometheus metrics.
"""

from .exposition import CounterState, ExpositionError, events_from_exposition
from .recorded import RecordedScrape, read_recorded, read_recorded_text, split_scrapes
from .scrape import MetricsScraper, ScrapeError, SourceStatus, fetch, normalize_url

__all__ = [
    "CounterState", "ExpositionError", "events_from_exposition",
    "RecordedScrape", "read_recorded", "read_recorded_text", "split_scrapes",
    "MetricsScraper", "ScrapeError", "SourceStatus", "fetch", "normalize_url",
]  # the exporter (prometheus_client server) is imported from pdwatch.metrics.exporter
