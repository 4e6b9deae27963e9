"""A decode worker's KV transfers over a window, from its connector's log lines.

NIXL's connector prints ``KV Transfer metrics: Num successful transfers=N, Avg xfer time
(ms)=T, ... Num failed transfers=F`` once per stats interval with transfers; the store keeps
each line's ``N:F:T`` (``partial._reason``). Summed here: how many prompts' KV caches reached
the worker, how many transfers failed, their mean time (weighted by count).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class KvTransfers:
    transfers: int
    failed: int
    avg_ms: float | None  # mean transfer time, weighted by each line's count
    lines: int  # KV Transfer metrics lines read


def kv_transfers(events: pd.DataFrame, start: pd.Timestamp | None = None,
                 end: pd.Timestamp | None = None) -> KvTransfers | None:
    """The transfers of an endpoint's ``kv_transfer`` event rows within [start, end]; None when
    it logged none (no NIXL connector, or no transfer)."""
    rows = events[events["kind"] == "kv_transfer"] if not events.empty else events
    if rows.empty:
        return None
    if start is not None:
        rows = rows[rows["ts"] >= start]
    if end is not None:
        rows = rows[rows["ts"] <= end]
    transfers = failed = 0
    weighted = 0.0
    for reason in rows["reason"]:
        ok, bad, avg = _fields(reason)
        transfers += ok
        failed += bad
        if avg is not None:
            weighted += avg * ok
    return KvTransfers(transfers, failed, weighted / transfers if transfers else None, len(rows))


def _fields(reason: object) -> tuple[int, int, float | None]:
    parts = str(reason).split(":") if isinstance(reason, str) else []
    if len(parts) != 3:
        return 0, 0, None

    def num(text: str) -> float | None:
        try:
            return float(text)
        except ValueError:
            return None

    ok, bad, avg = (num(p) for p in parts)
    return int(ok or 0), int(bad or 0), avg
