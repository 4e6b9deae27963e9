"""Read simulated log folders back with the real parser, and the numbers the tests compare."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pdwatch.parsers import Event, LogScanner

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
_NAME = re.compile(r"^(?P<node>[^_]+)_(?P<role>prefill|decode|agg|frontend)_(?:w)?(?P<index>\d+)\.out$")


def endpoint_of(path: Path) -> tuple[str, str]:
    """``gb200-n003_decode_w0.out`` -> ("decode_w0", "decode"); the frontend -> ("frontend_0", "frontend")."""
    m = _NAME.match(path.name)
    assert m, f"unexpected log file name {path.name}"
    role = m["role"]
    return (f"{role}_{m['index']}" if role == "frontend" else f"{role}_w{m['index']}"), role


@dataclass
class Folder:
    """Every event of every ``*.out`` file in a folder, parsed with ``parsers.LogScanner``."""

    path: Path
    events: dict[str, list[Event]] = field(default_factory=dict)  # endpoint -> events
    roles: dict[str, str] = field(default_factory=dict)  # endpoint -> role
    raw: dict[str, bytes] = field(default_factory=dict)
    parse_errors: int = 0

    def stats(self, endpoint: str | None = None, role: str | None = None) -> list[Event]:
        return [e for ep, evs in self.events.items() if (endpoint in (None, ep)) and (role in (None, self.roles[ep]))
                for e in evs if e.kind == "stats"]

    def kind(self, kind: str, endpoint: str | None = None, role: str | None = None) -> list[Event]:
        return [e for ep, evs in self.events.items() if (endpoint in (None, ep)) and (role in (None, self.roles[ep]))
                for e in evs if e.kind == kind]

    def endpoints(self, role: str) -> list[str]:
        return sorted(ep for ep, r in self.roles.items() if r == role)


def parse_folder(path: Path, year: int = 2026) -> Folder:
    folder = Folder(path)
    files = sorted(path.glob("*.out"))
    assert files, f"no *.out files in {path}"
    for p in files:
        endpoint, role = endpoint_of(p)
        data = p.read_bytes()
        scanner = LogScanner(p.name, year=year)
        # feed in two blocks of whole lines, as a tail would
        cut = data.rfind(b"\n", 0, len(data) // 2) + 1
        events = scanner.feed(data[:cut], 1) + scanner.feed(data[cut:], data[:cut].count(b"\n") + 1)
        events += scanner.finish()
        folder.events[endpoint] = events
        folder.roles[endpoint] = role
        folder.raw[endpoint] = data
        folder.parse_errors += scanner.parse_errors
    return folder


def by_engine(events: list[Event]) -> dict[tuple[str, int], list[Event]]:
    out: dict[tuple[str, int], list[Event]] = defaultdict(list)
    for e in events:
        out[(e.source, e.engine)].append(e)
    for evs in out.values():
        evs.sort(key=lambda e: e.ts)
    return out


def integrate(events: list[Event], key: str, t0: datetime, t1: datetime, interval: float) -> float:
    """Tokens in [t0, t1] from stats lines: each line's rate covers the interval before its timestamp."""
    total = 0.0
    for e in events:
        end = e.ts.timestamp()
        start = end - interval
        overlap = min(end, t1.timestamp()) - max(start, t0.timestamp())
        if overlap > 0:
            total += (e.values.get(key) or 0.0) * overlap
    return total


def parsed_tps_per_gpu(folder: Folder, t0: datetime, t1: datetime, interval: float, gpus: int) -> float:
    """Total TPS/GPU as the logs give it: prompt tokens of the prefill side + generated tokens of the decode side.

    An aggregated endpoint counts both its prompt and its generated tokens.
    """
    span = (t1 - t0).total_seconds()
    prompt = sum(integrate(folder.stats(role=r), "prompt_tps", t0, t1, interval) for r in ("prefill", "agg"))
    gen = sum(integrate(folder.stats(role=r), "gen_tps", t0, t1, interval) for r in ("decode", "agg"))
    return (prompt + gen) / span / gpus


def in_window(events: list[Event], t0: datetime, t1: datetime) -> list[Event]:
    return [e for e in events if e.ts is not None and t0 < e.ts <= t1]


def mean(xs) -> float:
    xs = list(xs)
    assert xs, "no values"
    return sum(xs) / len(xs)
