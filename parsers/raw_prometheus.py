"""One line of srt-slurm's ``logs/raw_prometheus.jsonl``: a recorded ``/metrics`` scrape of one endpoint.

srt-slurm's metrics scraper (``analysis/metrics_scraper.py``, with ``observability.enabled``) appends
one JSON object per line per (scrape, endpoint)::

    {"timestamp_ns": 1765000000123456789, "endpoint_url": "http://10.0.0.7:8081/metrics",
     "role": "decode", "worker_id": 0, "text": "<the raw Prometheus exposition>"}

``role`` is ``frontend``, ``prefill``, ``decode`` (or ``agg``); ``worker_id`` is the worker's index
(``0``, ``"0"``) or a name that ends in it (``"decode_w0"``, ``"frontend_0"``). A failed scrape may
carry an empty ``text`` and an ``error`` key.

API (pure: text in, typed records out; nothing here reads a file):

- ``parse_record(line, line_no) -> RawRecord``; ``RecordError`` when the line is not such a record
  (truncated, not JSON, a field missing or of the wrong type).
- ``endpoint_name(role, worker_id) -> str``: the endpoint the record belongs to, named as pdwatch
  names the log of the same process: ``decode_w0`` for ``<node>_decode_w0.out``, ``agg_w0`` for
  ``<node>_agg_w0.out``, ``frontend_0`` for ``<node>_frontend_0.out``.
- ``header(record) -> str``: the short text that starts each event of the record (its evidence text).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from urllib.parse import urlsplit

import regex

ROLES = ("frontend", "prefill", "decode", "agg")
_ROLE_ALIASES = {"aggregated": "agg"}
# A worker_id written as a name: "decode_w0", "agg_w1", "frontend_0", "w3", "3".
_TRAILING_INDEX = regex.compile(r"(?:^|_)w?(?P<index>\d+)$")


class RecordError(ValueError):
    """A line that is not a raw_prometheus record (the reason, in a few words)."""


@dataclass(frozen=True)
class RawRecord:
    line_no: int  # 1-based line in the file
    ts: datetime  # timestamp_ns, UTC
    endpoint_url: str
    role: str  # "frontend" | "prefill" | "decode" | "agg"
    worker_index: int
    text: str  # the raw exposition ("" for a failed scrape)
    error: str | None = None  # the scraper's reason for a failed scrape

    @property
    def endpoint(self) -> str:
        return endpoint_name(self.role, self.worker_index)

    @property
    def port(self) -> int | None:
        try:
            return urlsplit(self.endpoint_url).port
        except ValueError:
            return None


def worker_index(worker_id: object) -> int:
    """The index a ``worker_id`` gives (``0``, ``"0"``, ``"decode_w0"``, ``"frontend_0"``)."""
    if isinstance(worker_id, bool):
        raise RecordError(f"worker_id {worker_id!r} is not an index")
    if isinstance(worker_id, int):
        if worker_id < 0:
            raise RecordError(f"worker_id {worker_id} is negative")
        return worker_id
    if isinstance(worker_id, str):
        m = _TRAILING_INDEX.search(worker_id.strip())
        if m is not None:
            return int(m["index"])
    raise RecordError(f"worker_id {worker_id!r} names no worker index")


def endpoint_name(role: str, index: int) -> str:
    return f"frontend_{index}" if role == "frontend" else f"{role}_w{index}"


def parse_record(line: str | bytes, line_no: int) -> RawRecord:
    """The record on ``line`` (its newline optional); ``RecordError`` saying why it is not one."""
    if isinstance(line, bytes):
        line = line.decode("utf-8", "replace")
    line = line.strip()
    if not line:
        raise RecordError("empty line")
    try:
        obj = json.loads(line)
    except ValueError as exc:
        cut = " (cut off?)" if not line.endswith("}") else ""
        raise RecordError(f"not JSON{cut}: {exc.msg} at column {exc.colno}") from None
    if not isinstance(obj, dict):
        raise RecordError("not a JSON object")
    stamp = obj.get("timestamp_ns")
    if isinstance(stamp, bool) or not isinstance(stamp, (int, float)):
        raise RecordError("no timestamp_ns number")
    role = obj.get("role")
    role = _ROLE_ALIASES.get(role, role) if isinstance(role, str) else role
    if role not in ROLES:
        raise RecordError(f"role {role!r} is none of {', '.join(ROLES)}")
    if "worker_id" not in obj:
        raise RecordError("no worker_id")
    index = worker_index(obj["worker_id"])
    text = obj.get("text")
    if not isinstance(text, str):
        raise RecordError("no text string")
    url = obj.get("endpoint_url")
    error = obj.get("error")
    try:
        # whole seconds and microseconds apart: exact to the microsecond (a float of ns is not)
        whole, ns = divmod(int(stamp), 1_000_000_000)
        ts = datetime.fromtimestamp(whole, tz=timezone.utc) + timedelta(microseconds=ns // 1000)
    except (OverflowError, OSError, ValueError):
        raise RecordError(f"timestamp_ns {stamp} is out of range") from None
    return RawRecord(line_no, ts, url if isinstance(url, str) else "", role, index, text,
                     error if isinstance(error, str) else None)


def header(record: RawRecord) -> str:
    """``raw_prometheus decode_w0 t=EPOCH (ISO) url=URL``: what starts each event's text."""
    epoch = record.ts.timestamp()
    url = f" url={record.endpoint_url}" if record.endpoint_url else ""
    return f"raw_prometheus {record.endpoint} t={epoch:.3f} ({record.ts.isoformat(timespec='milliseconds')}){url}"


__all__ = ["ROLES", "RawRecord", "RecordError", "endpoint_name", "header", "parse_record", "worker_index"]
