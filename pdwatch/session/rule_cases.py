"""Rule cases with log input, for ``pdwatch rules test``.

A case endpoint (``rules.casefile``) gives its stats as series (``engines:``) or as log
lines, which pdwatch reads as it reads any log:

    endpoints:
    - name: decode
      role: decode                 # else from the log (kv_role), else unknown
      log: |                       # or log_file: decode.log (relative to the case file)
        (APIServer pid=1) INFO 12-02 03:16:41 [loggers.py:259] Engine 000: Avg prompt throughput: ...
      facts: {max_num_seqs: 32}    # beside (and over) what the start-up lines say

``prepare(test, folder)`` returns the test with such endpoints turned into ``rows`` (each
stats line at its offset from the test's ``start``), ``events`` (the problems and start-up
lines the rules read) and ``facts``. Without ``start``, a test with log input starts at its
first timestamp; without ``interval``, its interval is the logs' stats interval.
"""

from __future__ import annotations

import os
import statistics
from datetime import datetime, timezone
from typing import Any

from pdwatch.model.log_facts import fold
from pdwatch.parsers import Event, LogScanner
from pdwatch.rules.model import STATS_FIELDS, STORED_EVENT_KINDS

_KV_ROLE = {"kv_producer": "prefill", "kv_consumer": "decode"}


class CaseInputError(ValueError):
    """A case's log input cannot be read."""


def prepare(test: dict[str, Any], folder: str) -> dict[str, Any]:
    endpoints = test.get("endpoints") or []
    if not any(isinstance(e, dict) and ("log" in e or "log_file" in e) for e in endpoints):
        return test
    parsed: list[tuple[dict[str, Any], list[Event]]] = []
    for spec in endpoints:
        if isinstance(spec, dict) and ("log" in spec or "log_file" in spec):
            parsed.append((spec, _read(spec, folder, test)))
        else:
            parsed.append((spec, []))
    stamps = [e.ts for _, events in parsed for e in events if e.ts is not None]
    out = dict(test)
    if "start" not in test:
        if not stamps:
            raise CaseInputError(f"test {test.get('name', '?')!r}: its log lines have no timestamps")
        out["start"] = min(stamps).astimezone(timezone.utc).isoformat()
    start = _start(out["start"])
    if "interval" not in test:
        gaps = []
        for _, events in parsed:
            by_engine: dict[int, list[datetime]] = {}
            for e in events:
                if e.kind == "stats" and e.ts is not None:
                    by_engine.setdefault(e.engine or 0, []).append(e.ts)
            for times in by_engine.values():
                gaps += [(b - a).total_seconds() for a, b in zip(times, times[1:]) if b > a]
        if gaps:
            out["interval"] = f"{statistics.median(gaps):g}s"
    out["endpoints"] = [_endpoint(spec, events, start) if events or "log" in spec or "log_file" in spec else spec
                        for spec, events in parsed]
    return out


def _read(spec: dict[str, Any], folder: str, test: dict[str, Any]) -> list[Event]:
    name = str(spec.get("name", "endpoint"))
    if "log_file" in spec:
        path = os.path.join(folder, str(spec["log_file"]))
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise CaseInputError(f"endpoint {name}: log_file {spec['log_file']}: {exc.strerror or exc}") from None
        source = path
    else:
        data = str(spec["log"]).encode()
        source = f"{name}.log"
    year = _start(test["start"]).year if "start" in test else None
    scanner = LogScanner(source, year=year or 2026, tz=timezone.utc)
    return scanner.feed(data if data.endswith(b"\n") else data + b"\n", 1) + scanner.finish()


def _endpoint(spec: dict[str, Any], events: list[Event], start: datetime) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    rows, kept = [], []
    for event in events:
        fold(facts, event)
        at = (event.ts - start).total_seconds() if event.ts is not None else None
        if event.kind == "stats":
            if at is None:
                continue
            row = {"at": at, "engine": event.engine or 0}
            row.update({f: event.values.get(f) for f in STATS_FIELDS if f in event.values})
            rows.append(row)
        elif event.kind in STORED_EVENT_KINDS:
            kept.append({"at": at, "kind": event.kind, "engine": event.engine, "text": event.text,
                         "line_no": event.line_no, "reason": event.values.get("reason")})
    out = {k: v for k, v in spec.items() if k not in ("log", "log_file")}
    out["rows"] = list(spec.get("rows") or []) + rows
    out["events"] = list(spec.get("events") or []) + kept
    out["facts"] = {**{k: v for k, v in facts.items() if k in _RULE_FACTS}, **(spec.get("facts") or {})}
    if "role" not in spec and facts.get("kv_role") in _KV_ROLE:
        out["role"] = _KV_ROLE[facts["kv_role"]]
    return out


def _start(value: Any) -> datetime:
    if isinstance(value, datetime):
        ts = value
    else:
        ts = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=timezone.utc)


def _rule_facts() -> frozenset[str]:
    from pdwatch.rules.model import ENDPOINT_FACTS
    return frozenset(ENDPOINT_FACTS)


_RULE_FACTS = _rule_facts()
