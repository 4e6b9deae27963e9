"""One line of srt-slurm's ``logs/raw_prometheus.jsonl``: a recorded ``/metrics`` scrape of one endpoint.

srt-slurm's metrics scraper (``analysis/metrics_scraper.py``, with ``observability.enabled``) appends
one JSON object per line per (scrape, endpoint)::

    {"timestamp_ns": 1765000000123456789, "endpoint_url": "http://10.0.0.7:8081/metrics",
     "role": "decode", "worker_id": 0, "text": "<the raw Prometheus exposition>"}

``role`` is ``frontend``, ``prefill``, ``decode`` (or ``agg``). srt-slurm's own scraper writes the
worker's **node** as ``worker_id`` (``"node1"``, the ``<node>`` of its log ``<node>_decode_w0.out``) and
null for the frontend, and an aggregated worker as role ``decode``; other recorders write the worker's
index (``0``, ``"0"``) or a name that ends in it (``"decode_w0"``, ``"frontend_0"``). srt-slurm writes
no line for a failed scrape; others may, with an empty ``text`` and an ``error`` key.

API (pure: text in, typed records out; nothing here reads a file):

- ``parse_record(line, line_no) -> RawRecord``; ``RecordError`` when the line is not such a record
  (truncated, not JSON, a field missing or of the wrong type).
- ``RawRecord.endpoint``: the endpoint key of the record. With an index, the name pdwatch gives the
  log of the same process: ``decode_w0`` for ``<node>_decode_w0.out``, ``agg_w0`` for
  ``<node>_agg_w0.out``, ``frontend_0`` for ``<node>_frontend_0.out`` (a null ``worker_id`` of the
  frontend: ``frontend_0``). With a node, ``decode@node1:8081`` (its URL's port): the reader of the logs
  finds the log of that role on that node (``node1_decode_w0.out``, or ``node1_agg_w0.out`` for
  srt-slurm's ``decode``). A worker with a null ``worker_id``: ``decode@HOST:PORT`` of its URL.
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
# A worker_id that is an index: "3", "w3", "decode_w0", "agg_w1", "frontend_0" (any other string is a node).
_INDEX = regex.compile(r"(?:(?:prefill|decode|agg|aggregated)_w|frontend_|w)?(?P<index>\d+)")


class RecordError(ValueError):
    """A line that is not a raw_prometheus record (the reason, in a few words)."""


@dataclass(frozen=True)
class RawRecord:
    line_no: int  # 1-based line in the file
    ts: datetime  # timestamp_ns, UTC
    endpoint_url: str
    role: str  # "frontend" | "prefill" | "decode" | "agg"
    worker_index: int | None  # the worker_id as an index (None: a node name, or null)
    text: str  # the raw exposition ("" for a failed scrape)
    error: str | None = None  # the scraper's reason for a failed scrape
    node: str | None = None  # the worker_id as a node name (srt-slurm's)

    @property
    def endpoint(self) -> str:
        if self.worker_index is not None:
            return endpoint_name(self.role, self.worker_index)
        if self.role == "frontend" and self.node is None:
            return "frontend_0"  # srt-slurm's frontend: worker_id null
        # srt-slurm's node (several workers of a node apart by their port), else the URL's host and port
        port = self.port
        if self.node is not None:
            return f"{self.role}@{self.node}" + (f":{port}" if port is not None else "")
        try:
            where = urlsplit(self.endpoint_url).netloc
        except ValueError:
            where = ""
        return f"{self.role}@{where or 'unknown'}"

    @property
    def port(self) -> int | None:
        try:
            return urlsplit(self.endpoint_url).port
        except ValueError:
            return None


def worker_identity(worker_id: object) -> tuple[int | None, str | None]:
    """(index, node) a ``worker_id`` gives: ``0``, ``"0"``, ``"decode_w0"``, ``"frontend_0"`` are indexes;
    any other string is a node name (srt-slurm's: ``"node1"``); null is neither."""
    if worker_id is None:
        return None, None
    if isinstance(worker_id, bool):
        raise RecordError(f"worker_id {worker_id!r} is neither an index nor a node")
    if isinstance(worker_id, int):
        if worker_id < 0:
            raise RecordError(f"worker_id {worker_id} is negative")
        return worker_id, None
    if isinstance(worker_id, str) and worker_id.strip():
        m = _INDEX.fullmatch(worker_id.strip())
        if m is not None:
            return int(m["index"]), None
        if "#" in worker_id or "/" in worker_id:
            raise RecordError(f"worker_id {worker_id!r} is neither an index nor a node")
        return None, worker_id.strip()
    raise RecordError(f"worker_id {worker_id!r} is neither an index nor a node")


def worker_index(worker_id: object) -> int | None:
    """The index a ``worker_id`` gives (``0``, ``"0"``, ``"decode_w0"``, ``"frontend_0"``); None for a node."""
    return worker_identity(worker_id)[0]


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
    index, node = worker_identity(obj["worker_id"])
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
                     error if isinstance(error, str) else None, node)


def header(record: RawRecord) -> str:
    """``raw_prometheus decode_w0 t=EPOCH (ISO) url=URL``: what starts each event's text."""
    epoch = record.ts.timestamp()
    url = f" url={record.endpoint_url}" if record.endpoint_url else ""
    return f"raw_prometheus {record.endpoint} t={epoch:.3f} ({record.ts.isoformat(timespec='milliseconds')}){url}"


__all__ = ["ROLES", "RawRecord", "RecordError", "endpoint_name", "header", "parse_record", "worker_identity",
           "worker_index"]
