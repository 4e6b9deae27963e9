"""Pure parsers (installed as ``pdwatch.parsers``): log lines and /metrics pages in, typed events out.

No I/O, no Textual, nothing else of pdwatch. ``exposition`` and ``dynamo_metrics`` (/metrics pages)
import prometheus_client, so they are loaded only when a page is read.
"""

from .events import ENVELOPE_KEYS, KINDS, Event
from .families import FAMILIES, Family, Sample
from .scanner import LogScanner
from .timeinfo import zone

__all__ = ["ENVELOPE_KEYS", "FAMILIES", "KINDS", "Event", "Family", "LogScanner", "Sample", "zone"]
