"""The header line before each scrape in a recorded ``/metrics`` file.

``# ===== <free text> t=EPOCH (ISO) port=N =====`` (``port=`` optional): what the real-scrape
recorder, the simulator and ``pdwatch record`` write. Read by ``pdwatch.events.recorded`` (a whole
file) and ``pdwatch.sources.recorded_tail`` (a file followed as it grows).
"""

from __future__ import annotations

from datetime import datetime, timezone

import regex

HEADER = regex.compile(r"^# =====(?P<desc>.*?)\bt=(?P<t>\d+(?:\.\d+)?)\b(?P<rest>.*?)=====\s*$")
_PORT = regex.compile(r"\bport=(?P<port>\d+)\b")


def parse_header(line: str) -> tuple[datetime, int | None] | None:
    """The scrape's time (UTC) and server port of a header line; None when ``line`` is not one."""
    m = HEADER.match(line)
    if m is None:
        return None
    port = _PORT.search(m["rest"]) or _PORT.search(m["desc"])
    return datetime.fromtimestamp(float(m["t"]), tz=timezone.utc), int(port["port"]) if port else None
