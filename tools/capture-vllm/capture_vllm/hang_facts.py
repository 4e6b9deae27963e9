"""What each process printed and served while some of them were frozen (``freeze.py``): the facts
a capture of a hang writes down, read with plain regular expressions (not pdwatch's parsers).

The window is from the first SIGSTOP to the first SIGCONT. Log lines are placed in it by their
own time stamps: vLLM's (``INFO 12-03 16:23:48``, whole seconds, no year) and Dynamo's
(``2026-12-03T16:23:40.812890Z``); a line without one (uvicorn's access lines, a traceback's, a
warning's second line) takes the last stamp above it. A line stamped in whole seconds covers
that second: one stamped in the second the freeze began may precede it, one stamped in the
second of the thaw may follow it (a frozen process prints the moment it runs again); both are
counted apart (``freeze_second``, ``thaw_second``), never as printed during the freeze.
"""

from __future__ import annotations

import calendar
import re
import time
from collections import Counter
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
VLLM_STAMP = re.compile(r"\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) ")
ISO_STAMP = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d(?:\.\d+)?)Z")
STATS = re.compile(r"Avg prompt throughput: ([\d.]+) tokens/s, Avg generation throughput: ([\d.]+) tokens/s, "
                   r"Running: (\d+) reqs, Waiting: (\d+) reqs")
SHM = re.compile(r"No available shared memory broadcast block found in (\d+) seconds")
LEVEL = re.compile(r"^\S+Z\s+(ERROR|WARN)\s|\b(ERROR|WARNING) \d\d-\d\d ")
WHO = re.compile(r"^\((\w[\w-]*) pid=\d+\)")
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
HEADER = re.compile(r"^# =====.*\bt=(\d+(?:\.\d+)?)")
QUOTE_CHARS = 400  # a quoted line is cut here


def _stamp(line: str, year: int) -> tuple[float, float] | None:
    """(time, how long the stamp spans: 1 s for vLLM's whole seconds, 0 for Dynamo's)."""
    m = ISO_STAMP.match(line)
    if m:
        y, mo, d, h, mi = (int(x) for x in m.groups()[:5])
        return calendar.timegm((y, mo, d, h, mi, 0)) + float(m.group(6)), 0.0
    m = VLLM_STAMP.search(line)
    if m:
        mo, d, h, mi, s = (int(x) for x in m.groups())
        return float(calendar.timegm((year, mo, d, h, mi, s))), 1.0
    return None


def stamped_lines(path: Path, year: int) -> list[tuple[tuple[float, float] | None, str]]:
    """(stamp, line without ANSI codes) for every line; unstamped lines take the last stamp above."""
    out, last = [], None
    for raw in path.read_bytes().decode("utf-8", "replace").splitlines():
        line = ANSI.sub("", raw)
        stamp = _stamp(line, year)
        last = stamp if stamp is not None else last
        out.append((last, line))
    return out


def where(stamp: tuple[float, float] | None, start: float, end: float) -> str:
    """before, freeze_second, during, thaw_second or after the window [start, end)."""
    if stamp is None:
        return "before"
    t, span = stamp
    if t + span <= start:
        return "before" if t < start else "freeze_second"  # span 0: exact
    if t < start:
        return "freeze_second"
    if t + span <= end:
        return "during" if t < end else "after"
    return "thaw_second" if t < end else "after"


def _pattern(line: str) -> str:
    """A line with its numbers and ids blanked: what kind of line it is."""
    line = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", line)
    return re.sub(r"\d+(?:\.\d+)?", "N", line)[:200]


def _who(line: str) -> str:
    m = WHO.match(line)
    if m:
        return m.group(1)  # vLLM's process prefix: APIServer, EngineCore, Worker, MainProcess (dynamo.vllm)
    return "dynamo runtime" if ISO_STAMP.match(line) else "unprefixed"


def _quote(stamp: tuple[float, float] | None, line: str) -> dict:
    return {"utc": _iso(stamp[0]) if stamp is not None else None, "text": line[:QUOTE_CHARS]}


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


BUCKETS = ("before", "freeze_second", "during", "thaw_second", "after")


def log_facts(path: Path, start: float, end: float) -> dict:
    """The log around the window [start, end): its stats lines, what it printed inside, by whom."""
    year = time.gmtime(start).tm_year
    lines = [(stamp, line, where(stamp, start, end)) for stamp, line in stamped_lines(path, year)]
    stats = [(stamp, line, w) for stamp, line, w in lines if STATS.search(line)]
    during = [(stamp, line) for stamp, line, w in lines if w == "during"]
    shm = [(stamp, line, w) for stamp, line, w in lines if SHM.search(line)]
    levels = Counter((m.group(1) or m.group(2)).replace("WARNING", "WARN")
                     for m in (LEVEL.search(line) for _, line in during) if m)
    return {
        "file": path.name,
        "stats_lines": {k: sum(1 for *_, w in stats if w == k) for k in BUCKETS},
        "last_stats_before": [_quote(t, line) for t, line, w in stats if w == "before"][-2:],
        "stats_in_freeze_second": [_quote(t, line) for t, line, w in stats if w == "freeze_second"],
        "stats_during": [_quote(t, line) for t, line, w in stats if w == "during"][:12],
        "stats_in_thaw_second": [_quote(t, line) for t, line, w in stats if w == "thaw_second"],
        "first_stats_after": [_quote(t, line) for t, line, w in stats if w == "after"][:2],
        "lines": {k: sum(1 for *_, w in lines if w == k) for k in BUCKETS},
        "error_lines_during": levels.get("ERROR", 0), "warn_lines_during": levels.get("WARN", 0),
        "printed_during_by": dict(Counter(_who(line) for _, line in during)),
        "kinds_of_lines_during": [{"count": n, "pattern": p}
                                  for p, n in Counter(_pattern(line) for _, line in during).most_common(12)],
        "first_lines_during": [_quote(t, line) for t, line in during[:6]],
        "last_lines_during": [_quote(t, line) for t, line in during[6:][-4:]],
        "first_lines_in_thaw_second": [_quote(t, line) for t, line, w in lines if w == "thaw_second"][:6],
        "shm_broadcast_lines": {k: sum(1 for *_, w in shm if w == k) for k in BUCKETS} | {
            "quoted": [_quote(t, line) for t, line, _ in shm[:4]]},
    }


def scrape_facts(path: Path, start: float, end: float, watched: tuple[str, ...]) -> dict:
    """Per watched series (label sets summed): its value at the last scrape before the window and
    at the scrapes inside it (first, last, min, max, whether it changed)."""
    scrapes: list[tuple[float, dict[str, float]]] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        m = HEADER.match(line)
        if m:
            scrapes.append((float(m.group(1)), {}))
            continue
        m = SAMPLE.match(line)
        if m and scrapes and m.group(1) in watched:
            try:
                sums = scrapes[-1][1]
                sums[m.group(1)] = sums.get(m.group(1), 0.0) + float(m.group(3))
            except ValueError:
                pass
    before = [s for t, s in scrapes if t < start]
    inside = [(t, s) for t, s in scrapes if start <= t < end]
    series = {}
    for name in watched:
        values = [s[name] for _, s in inside if name in s]
        if not values and not any(name in s for s in before):
            continue
        series[name] = {"before": next((s[name] for s in reversed(before) if name in s), None),
                        "first": values[0] if values else None, "last": values[-1] if values else None,
                        "min": min(values) if values else None, "max": max(values) if values else None,
                        "changed": len(set(values)) > 1 if values else None}
    return {"file": path.name, "scrapes_during": len(inside),
            "during_from": _iso(inside[0][0]) if inside else None, "during_to": _iso(inside[-1][0]) if inside else None,
            "series": series}


def health_facts(probes: dict[str, list[tuple[float, int | None]]], start: float, end: float) -> dict:
    """Per target: the /health answers during the window (None: no answer in time)."""
    return {name: {"during": dict(Counter(str(s) for t, s in got if start <= t < end)),
                   "before": dict(Counter(str(s) for t, s in got if t < start)),
                   "after": dict(Counter(str(s) for t, s in got if t >= end))}
            for name, got in probes.items()}


def request_facts(records, start: float, end: float) -> dict:
    """The client's requests around the window: in flight when it began, sent inside it, and how
    both ended (an HTTP status, or the client's error: a timeout is the client giving up)."""
    def outcome(r) -> str:
        if r.status == 200 and r.error is None:
            return "200"
        if r.error:
            return (f"{r.status} " if r.status else "") + r.error.split(":")[0][:60]
        return str(r.status)

    in_flight = [r for r in records if r.sent < start and (r.end is None or r.end >= start)]
    sent = [r for r in records if start <= r.sent < end]
    done_inside = [r for r in records if r.end is not None and start <= r.end < end and r.status == 200
                   and r.error is None]
    return {"in_flight_at_freeze": len(in_flight), "in_flight_outcomes": dict(Counter(map(outcome, in_flight))),
            "sent_during": len(sent), "sent_during_outcomes": dict(Counter(map(outcome, sent))),
            "completed_ok_during": len(done_inside),
            "tokens_streamed_during": sum(1 for r in records if r.first_token and start <= r.first_token < end)}


def render(f: dict) -> list[str]:
    """The README's section on the freeze, from the facts above."""
    out = ["## The freeze (measured by the kit)", "",
           f"Window: from the first SIGSTOP at {f['window']['from'][11:23]} to the first SIGCONT at "
           f"{f['window']['to'][11:23]} UTC ({f['window']['seconds']:.1f} s). Log lines are placed by their own "
           "stamps; a line without one (uvicorn's access lines, continuation lines) takes the last stamp above it. "
           "vLLM stamps whole seconds: a line stamped in the second of the SIGSTOP may precede it, one stamped in "
           "the second of the SIGCONT may follow it; those are counted apart, not as printed during the freeze.",
           ""]
    for frozen in f["frozen"]:
        out.append(f"- {frozen['process']}: SIGSTOP to {frozen['target']} {frozen['pids']}; state after: "
                   f"{frozen['states']}")
    r = f["requests"]
    out += ["", f"Client: {r['in_flight_at_freeze']} requests in flight at the freeze (ended: "
            f"{r['in_flight_outcomes'] or '–'}); {r['sent_during']} sent during it (ended: "
            f"{r['sent_during_outcomes'] or '–'}); {r['completed_ok_during']} completed OK during it; "
            f"{r['tokens_streamed_during']} first tokens received during it.", ""]
    counts = " / ".join(b.replace("_", " ") for b in BUCKETS)
    out += [f"Lines and stats lines per log, {counts}:", "",
            "| log | lines | stats lines | shm broadcast lines | ERROR / WARN during | printed during, by process "
            "prefix |", "|---|---|---|---|---|---|"]
    for lf in f["logs"]:
        def row(d: dict) -> str:
            return " / ".join(str(d[b]) for b in BUCKETS)

        out.append(f"| {lf['file']} | {row(lf['lines'])} | {row(lf['stats_lines'])} | "
                   f"{row(lf['shm_broadcast_lines'])} | {lf['error_lines_during']} / {lf['warn_lines_during']} | "
                   f"{lf['printed_during_by'] or '–'} |")
    out.append("")
    for lf in f["logs"]:
        quoted = [("last stats lines before the freeze", lf["last_stats_before"]),
                  ("stats lines stamped in the SIGSTOP's second", lf["stats_in_freeze_second"]),
                  ("stats lines during the freeze", lf["stats_during"]),
                  ("stats lines stamped in the SIGCONT's second", lf["stats_in_thaw_second"]),
                  ("first stats lines after the thaw", lf["first_stats_after"]),
                  ("first lines printed during the freeze", lf["first_lines_during"]),
                  ("last lines printed during the freeze", lf["last_lines_during"]),
                  ("first lines stamped in the SIGCONT's second", lf["first_lines_in_thaw_second"]),
                  ("shared memory broadcast lines (whole run)", lf["shm_broadcast_lines"]["quoted"])]
        if not any(q for _, q in quoted):
            continue
        out += [f"`{lf['file']}`:", ""]
        if lf["kinds_of_lines_during"]:
            out += ["kinds of lines printed during the freeze (numbers and ids blanked):", "", "```"]
            out += [f"{k['count']:5} x {k['pattern']}" for k in lf["kinds_of_lines_during"]] + ["```", ""]
        for title, lines in quoted:
            if lines:
                out += [f"{title}:", "", "```"] + [q["text"] for q in lines] + ["```", ""]
    for m in f["metrics"]:
        out += [f"`{m['file']}`: {m['scrapes_during']} scrapes during the freeze"
                + (f" ({m['during_from'][11:23]} – {m['during_to'][11:23]})" if m["during_from"] else "") + ":", ""]
        for name, s in m["series"].items():
            if s["first"] is None:
                out.append(f"- `{name}`: {s['before']:g} before; not served during the freeze")
            else:
                out.append(f"- `{name}`: {'–' if s['before'] is None else format(s['before'], 'g')} before; "
                           f"during: first {s['first']:g}, last {s['last']:g}, min {s['min']:g}, max {s['max']:g}, "
                           f"{'changed' if s['changed'] else 'unchanged'}")
        out.append("")
    if f.get("health"):
        out += ["`/health` probes (status: count; None is no answer within 2 s):", ""]
        for name, h in f["health"].items():
            out.append(f"- {name}: before {h['before'] or '–'}, during {h['during'] or '–'}, after {h['after'] or '–'}")
        out.append("")
    if f.get("failed_scrapes_during"):
        out += [f"Failed scrapes during the freeze (no answer within the scraper's timeout): "
                f"{f['failed_scrapes_during']}", ""]
    return out
