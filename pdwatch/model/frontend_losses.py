"""Deaths no log can state: a process killed by SIGKILL prints nothing, its log just stops.

Its peers say it. A frontend that loses a worker logs it: streams to the worker break
(``backend_error``: the route failed, migration could not move the request, a remote prefill
failed) and, once the worker's discovery lease expires, its worker set leaves the model
(``worker_set`` removed). A worker whose frontend died logs its request-plane connection being
reset (``request_plane_error``). ``attribute`` puts such a line on the process it concerns, as
``lost_by_frontend`` (on a worker) or ``frontend_lost`` (on a frontend), with the peer's file and
line so that it is quoted as evidence; the ``worker_lost`` and ``frontend_lost`` rules judge the
process by them. A frontend that starts again with no stop asked for before died too: its last
line before the restart gets a ``frontend_lost`` (a post-mortem sees it; live, the workers' lines
come first). The first line of a lost process after its loss is a ``seen_again``: it is back.

Which process: one of the role the line names (a worker set's mode; the prefill router's errors
name prefill) or of any serving role, seen shortly before the line, that then stayed silent
across it for 1.5 stats intervals (a live worker prints a stats line every interval while it has
work; a live frontend at INFO logs every request), and wrote no line of any kind after it (live,
a worker's request lines are read though not kept). A broken stream needs work on the worker, so
a worker whose last stats line showed none is not a candidate for one. A process whose stop
somebody asked for is never lost. A line not yet decided (the silence is still shorter than 1.5
intervals) is looked at again at the next flush: live, the decision comes 1.5 intervals after
the process's last line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

LOST_BY_FRONTEND = "lost_by_frontend"
FRONTEND_LOST = "frontend_lost"
SEEN_AGAIN = "seen_again"
DERIVED = (LOST_BY_FRONTEND, FRONTEND_LOST, SEEN_AGAIN)
SERVING = ("aggregated", "decode", "prefill", "unknown")
# A stream breaks the moment its worker dies; a worker set leaves when the lease expires (Dynamo's
# default TTL is ~10 s): a line this long after the process's last one still concerns it.
HORIZON_S = 60.0
SILENCE_INTERVALS = 1.5
DEFAULT_INTERVAL_S = 10.0
KEPT_PER_PROCESS = 8  # lines quoted per lost process: evidence enough


@dataclass
class Loss:
    """A peer's line that may say a process was lost."""

    ts: pd.Timestamp
    roles: tuple[str, ...]  # roles of the processes it may concern
    needs_work: bool  # a broken stream: the worker had requests
    source: str
    line_no: int
    text: str
    reason: str
    kind: str  # the derived event it becomes


@dataclass
class Attribution:
    """State across flushes: the lines not yet decided, and what was lost and not yet back."""

    seen_rows: dict[str, int] = field(default_factory=dict)  # endpoint -> event rows examined
    pending: list[Loss] = field(default_factory=list)
    kept: dict[str, int] = field(default_factory=dict)  # process -> derived losses added
    gone: dict[str, int] = field(default_factory=dict)  # process -> newest loss (ns) not followed by a line yet
    starts: dict[str, int] = field(default_factory=dict)  # frontend -> Dynamo start lines examined


def _losses_of(events: pd.DataFrame, role: str) -> list[Loss]:
    """The event rows of one endpoint that may mean a lost peer, oldest first."""
    kinds = ("backend_error", "worker_set") if role == "frontend" else ("request_plane_error",)
    picked = events[events["kind"].isin(kinds)]
    out: list[Loss] = []
    for row in picked.itertuples(index=False):
        if pd.isna(row.ts):
            continue
        ts = pd.Timestamp(row.ts)
        reason = row.reason or ""
        if row.kind == "request_plane_error":
            out.append(Loss(ts, ("frontend",), False, row.source, int(row.line_no), row.text,
                            "a worker's connection from it was reset", FRONTEND_LOST))
        elif row.kind == "worker_set":
            if not reason.startswith("removed:"):
                continue
            mode = reason.split(":", 1)[1]
            roles = (mode, "unknown") if mode in SERVING else SERVING
            out.append(Loss(ts, roles, False, row.source, int(row.line_no), row.text,
                            f"its worker set ({mode}) left the model's discovery", LOST_BY_FRONTEND))
        else:
            target = reason.split(":", 1)[1] if ":" in reason else ""
            roles = (target, "unknown") if target in SERVING else SERVING
            out.append(Loss(ts, roles, True, row.source, int(row.line_no), row.text,
                            "a remote prefill on it failed" if target == "prefill"
                            else "a request's stream to it broke", LOST_BY_FRONTEND))
    return out


def attribute(series: dict, endpoints: dict, state: Attribution, now: pd.Timestamp | None) -> dict[str, list[tuple]]:
    """New derived event rows per endpoint (the store's event-row tuples).

    ``series``: endpoint name -> its flushed ``stats`` and ``events`` frames; ``endpoints``:
    name -> Endpoint (role, facts); ``now``: the newest time the store has seen (how long a
    silence has lasted when a process's next line has not come)."""
    present = {name: ep for name, ep in endpoints.items() if name in series}
    grew: set[str] = set()  # endpoints with new event rows since the last call
    for name, ep in present.items():
        events = series[name].events
        start = state.seen_rows.get(name, 0)
        if len(events) > start:
            state.pending += _losses_of(events.iloc[start:], ep.role)
            state.seen_rows[name] = len(events)
            grew.add(name)
    out: dict[str, list[tuple]] = {}
    restarted = [name for name in grew if present[name].role == "frontend"]
    if not state.pending and not state.gone and not restarted:
        return out  # the usual live tick: nothing to decide, nothing computed
    activity = _Lazy(series)
    intervals = [ep.facts.get("stats_interval_s") for ep in present.values()
                 if ep.role != "frontend" and ep.facts.get("stats_interval_s")]
    fallback = min(intervals) if intervals else DEFAULT_INTERVAL_S
    undecided: list[Loss] = []
    for loss in state.pending:
        waiting = False
        for name, ep in present.items():
            if ep.role not in loss.roles:
                continue
            interval = ep.facts.get("stats_interval_s") if ep.role != "frontend" else None
            verdict = _lost(loss, activity[name], interval or fallback, now)
            if verdict is None:
                waiting = True
            elif verdict:
                _add(out, state, name, loss.ts, loss.kind, loss.source, loss.line_no, loss.text, loss.reason)
        if waiting:
            undecided.append(loss)
    state.pending = undecided
    for name in restarted:
        _restarts(name, series[name].events, activity[name], state, out)
    _back(activity, state, out)
    return out


class _Lazy(dict):
    """Each process's activity, computed the first time it is asked for in a call."""

    def __init__(self, series: dict) -> None:
        super().__init__()
        self.series = series

    def __missing__(self, name: str) -> "_Activity":
        got = self[name] = _activity(self.series[name])
        return got

    def get(self, name: str, default=None):  # type: ignore[override]
        return self[name] if name in self.series else default


def _add(out: dict, state: Attribution, name: str, ts: pd.Timestamp, kind: str, source: str, line_no: int,
         text: str, reason: str) -> None:
    state.gone[name] = max(state.gone.get(name, ts.value), ts.value)
    if state.kept.get(name, 0) >= KEPT_PER_PROCESS:
        return
    state.kept[name] = state.kept.get(name, 0) + 1
    out.setdefault(name, []).append((ts, None, kind, source, line_no, text, reason))


def _restarts(name: str, events: pd.DataFrame, act: "_Activity", state: Attribution, out: dict) -> None:
    """A frontend starting again with no stop asked for before it: it died after its last line."""
    starts = events[(events["kind"] == "dynamo_process") & events["ts"].notna()]
    begun = state.starts.get(name, 0)
    for k, row in enumerate(starts.itertuples(index=False)):
        if k < begun or k == 0:
            continue
        t = pd.Timestamp(row.ts).value
        before = act.seen[act.seen < t]
        if not len(before):
            continue
        last = int(before[-1])
        if np.any((act.stops > -2**62) & (act.stops <= t) & (act.stops >= _previous_start(act, t))):
            continue  # it was stopped, then started again: no death
        _add(out, state, name, pd.Timestamp(last, tz="UTC"), FRONTEND_LOST, row.source, int(row.line_no), row.text,
             "it started again with no stop asked for: it died after its last line before")
    state.starts[name] = len(starts)


def _previous_start(act: "_Activity", t: int) -> int:
    earlier = act.starts[act.starts < t]
    return int(earlier[-1]) if len(earlier) else -2**62


def _back(activity: dict, state: Attribution, out: dict) -> None:
    """The first line of a lost process after its newest loss: it is back (a restart)."""
    for name, lost_at in list(state.gone.items()):
        act = activity.get(name)
        if act is None:
            continue
        after = act.seen[act.seen > lost_at]
        if len(after):
            del state.gone[name]
            out.setdefault(name, []).append((pd.Timestamp(int(after[0]), tz="UTC"), None, SEEN_AGAIN, "", 0,
                                             "", "its log speaks again"))


@dataclass
class _Activity:
    seen: np.ndarray  # sorted times (ns) of the process's own lines: stats rows and kept events
    stats_ts: np.ndarray  # times of its stats rows
    busy: np.ndarray  # per stats row: requests or tokens in its interval
    stops: np.ndarray  # times of stops somebody asked for
    starts: np.ndarray  # times it said it was starting
    newest: int | None = None  # time (ns) of its newest line of any kind, kept or not (a request line)


def _ns(values: pd.Series) -> np.ndarray:
    stamps = pd.to_datetime(values, utc=True).dropna()
    return np.sort(stamps.to_numpy(dtype="datetime64[ns]").astype(np.int64))


def _activity(s) -> _Activity:
    stats, events = s.stats, s.events
    empty = np.empty(0, np.int64)
    own = events[~events["kind"].isin(DERIVED)] if not events.empty else events
    rows = empty
    if not stats.empty:
        stamped = pd.to_datetime(stats["ts"], utc=True)
        # A frontend's request row stands for the responses of the second before its time: that
        # second's start is when it was last seen to be alive (a stats line's own time is its line's).
        per_second = stats["requests_ok"].notna() if "requests_ok" in stats else False
        rows = np.sort((stamped - pd.to_timedelta(np.where(per_second, 1.0, 0.0), unit="s"))
                       .dropna().to_numpy(dtype="datetime64[ns]").astype(np.int64))
    seen = np.sort(np.concatenate([rows, _ns(own["ts"]) if not own.empty else empty]))
    if stats.empty:
        stats_ts, busy = empty, np.empty(0)
    else:
        dated = stats.dropna(subset=["ts"])
        stats_ts = pd.to_datetime(dated["ts"], utc=True).to_numpy(dtype="datetime64[ns]").astype(np.int64)
        # Work at the line: requests running or waiting, or tokens computed in its interval (a
        # prefill worker's requests last a fraction of a second: its snapshot often shows none).
        work = sum(dated[column].astype("float64").fillna(0.0)
                   for column in ("running", "waiting", "prompt_tps", "gen_tps"))
        busy = np.asarray(work, dtype=np.float64)
    stops = _ns(own.loc[own["kind"] == "stop_requested", "ts"]) if not own.empty else empty
    starts = _ns(own.loc[own["kind"] == "dynamo_process", "ts"]) if not own.empty else empty
    newest = pd.Timestamp(s.last_ts).value if getattr(s, "last_ts", None) is not None else None
    return _Activity(seen, stats_ts, busy, stops, starts, newest)


def _lost(loss: Loss, act: _Activity, interval_s: float, now: pd.Timestamp | None) -> bool | None:
    """True: the line concerns this process, which died; False: it does not; None: not yet known."""
    t = loss.ts.value
    before = np.searchsorted(act.seen, t, side="right")
    if before == 0:
        return False  # never seen before the line: not started (or not this one)
    prev = int(act.seen[before - 1])
    if (t - prev) / 1e9 > HORIZON_S:
        return False
    if np.any((act.stops <= t) & (act.stops >= _previous_start(act, t + 1))):
        return False  # somebody stopped it: an orderly end
    if loss.needs_work and len(act.stats_ts):
        k = np.searchsorted(act.stats_ts, t, side="right")
        if k and act.busy[k - 1] <= 0:
            return False  # idle at its last stats line: no stream of its broke
    needed = SILENCE_INTERVALS * interval_s * 1e9
    if before < len(act.seen):
        return int(act.seen[before]) - prev >= needed
    if act.newest is not None and act.newest > t:
        return False  # it wrote after the line (a request line, which the store does not keep): alive
    if now is None:
        return None
    return True if now.value - prev >= needed else None
