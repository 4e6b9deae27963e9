"""Pure log parsers: bytes of complete lines in, typed events out. No I/O, no Textual."""

from .events import ENVELOPE_KEYS, KINDS, Event
from .families import FAMILIES, Family, Sample
from .scanner import LogScanner
from .timeinfo import zone

__all__ = ["ENVELOPE_KEYS", "FAMILIES", "KINDS", "Event", "Family", "LogScanner", "Sample", "zone"]
