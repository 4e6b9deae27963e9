"""A sweep's points judged: each point's verdict from the rules over its window, and what in the
logs makes a point invalid.

A job's logs are analysed once, as ``pdwatch report`` analyses them (every evaluation of the rule
clock over the whole run); a point then takes the findings that held inside its window (a warm-up
before it, or the next point's ramp, is not its own) and their diagnosis up to the window's end:
the verdict names what limits the point, with the line that shows it. The logs make a point
invalid when an engine or worker died inside its window, when no serving endpoint printed a stats
line there, or when a disaggregated job whose connector logs its KV transfers logged none there.
"""

from __future__ import annotations

import gc
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable

import pandas as pd

from pdwatch.sweep import Job, SweepPoint, find_jobs, job_points

DEATHS = frozenset({"engine_failure", "worker_lost", "frontend_lost"})


@dataclass(frozen=True)
class PointVerdict:
    title: str  # "Bottleneck: decode KV cache", "No bottleneck found"
    text: str  # the verdict line, as the report's
    rule: str | None  # the deciding finding's rule (None: nothing held in the window)
    severity: str | None
    endpoint: str | None
    summary: str  # the deciding finding's summary, else the verdict's detail
    evidence: tuple[tuple[str, int], ...] = ()  # (source, line) of the deciding finding's quoted lines


@dataclass(frozen=True)
class JudgedPoint:
    point: SweepPoint
    verdict: PointVerdict | None  # None: no window, or logs that say nothing of it
    invalid_reasons: tuple[str, ...]  # the result file's and the logs'
    configuration: str = ""

    @property
    def valid(self) -> bool:
        return not self.invalid_reasons


@dataclass
class JudgedSweep:
    points: list[JudgedPoint]
    timezone: str  # the time zone benchmark.out's times were taken in
    notes: list[str] = field(default_factory=list)  # what could not be judged, one line each


def judge_sweep(paths: Iterable[str], *, tz: str = "UTC", rules: Any = None) -> JudgedSweep:
    """Every point of every job under ``paths``, judged (UsageError: no results anywhere)."""
    jobs = [job for job in find_jobs(list(paths)) if job.has_results]
    out = JudgedSweep([], tz)
    for job in jobs:
        points = job_points(job, tz)
        analysis = _analyse(job, rules, out.notes)
        config = configuration(job)
        out.points += [judge_point(point, analysis, config) for point in points]
        # One job's store at a time: dropped before the next job is read (else two stores are alive
        # at the peak, and a long campaign holds twice the memory of its biggest job).
        del analysis
        gc.collect()
    return out


def configuration(job: Job) -> str:
    """What the job ran, in a few words: its topology, when its metadata or logs say it."""
    meta = job.metadata or {}
    res = meta.get("resources") if isinstance(meta.get("resources"), dict) else {}
    parts = [f"{res[f'{role}_workers']}x{role} ({res.get(f'gpus_per_{role}') or '?'} GPUs each)"
             for role in ("prefill", "decode", "agg") if res.get(f"{role}_workers")]
    if parts:
        return ", ".join(parts)
    roles: dict[str, int] = {}
    for log in job.worker_logs:
        roles[log.role] = roles.get(log.role, 0) + 1
    return " ".join(f"{n}x{role}" for role, n in sorted(roles.items())) or job.job_id


def _analyse(job: Job, rules: Any, notes: list[str]) -> Any:
    from pdwatch.session.analysis import analyse
    logs = [str(log.path) for log in job.worker_logs] + [str(p) for p in job.frontend_logs]
    # recorded /metrics beside them (the capture kits', pdwatch record's): vLLM's stats line prints no
    # preemptions, its /metrics does; report reads them the same way
    scrapes = sorted(str(p) for p in job.logs_folder.glob("*.metrics.txt")) if job.logs_folder else []
    if job.prometheus is not None:  # srt-slurm's own scrapes (raw_prometheus.jsonl[.gz]), one record a line
        scrapes.append(str(job.prometheus))
    if not logs and not scrapes:  # its recorded scrapes alone still say what held (a worker log lost)
        notes.append(f"job {job.job_id}: no worker logs beside its results; its points have no verdict")
        return None
    try:
        return analyse(logs + scrapes, rules=rules)
    except Exception as exc:  # one unreadable job must not hide the others
        notes.append(f"job {job.job_id}: its logs could not be judged ({type(exc).__name__}: {exc})")
        return None


def judge_point(point: SweepPoint, analysis: Any, config: str = "") -> JudgedPoint:
    reasons = list(point.invalid_reasons)
    window = point.window
    if analysis is None or window is None:
        if window is None:
            reasons.append("no time window (no benchmark.out markers and no date in the result)")
        return JudgedPoint(point, None, tuple(reasons), config)
    verdict, from_logs = judge_window(analysis, pd.Timestamp(window.start), pd.Timestamp(window.end))
    return JudgedPoint(point, verdict, tuple(reasons + from_logs), config)


def judge_window(analysis: Any, start: pd.Timestamp, end: pd.Timestamp) -> tuple[PointVerdict, list[str]]:
    """The verdict of what held in [start, end], and what in the logs makes that stretch invalid."""
    held = [f for f in analysis.findings if _overlaps(f.start, f.end, start, end)]
    return _verdict(analysis, held, start, end), _log_reasons(analysis, held, start, end)


def _overlaps(f_start: datetime, f_end: datetime | None, start: pd.Timestamp, end: pd.Timestamp) -> bool:
    return pd.Timestamp(f_start) < end and (f_end is None or pd.Timestamp(f_end) > start)


def _verdict(analysis: Any, held: list, start: pd.Timestamp, end: pd.Timestamp) -> PointVerdict:
    from pdwatch.diagnosis import diagnose
    # The verdict's figures over the point's steady load (the client's start-up and drain inside the
    # window left out, as the headline's steady window leaves its ramps out), not the drain at its end.
    lo, hi = _steady(analysis.store, start, end)
    interval = min((e.facts.get("stats_interval_s") or 10.0 for e in analysis.store.endpoints()), default=10.0)
    diagnosis = diagnose(analysis.store, held, hi, intervals=max(1, math.ceil((hi - lo).total_seconds() / interval)))
    if diagnosis.verdict.severity is None:  # "No bottleneck found — ≤28% KV": maxima, over the whole window
        diagnosis = diagnose(analysis.store, held, end,
                             intervals=max(1, math.ceil((end - start).total_seconds() / interval)))
    verdict = diagnosis.verdict
    deciding = next((f for f in diagnosis.findings if f.rule == verdict.rule), None)
    evidence = _evidence(analysis, deciding, start, end) if deciding is not None else ()
    return PointVerdict(verdict.title, verdict.text, verdict.rule, verdict.severity,
                        deciding.endpoint if deciding else None,
                        deciding.summary if deciding else verdict.detail, evidence)


def _steady(store: Any, start: pd.Timestamp, end: pd.Timestamp) -> tuple[pd.Timestamp, pd.Timestamp]:
    """The steady part of the window (model.throughput.steady_window over its stats lines), else the window."""
    from pdwatch.model.throughput import bucketed, steady_window
    frames = {}
    intervals = []
    for ep in store.endpoints():
        frame = store.stats(ep.name)
        frames[ep.name] = (ep, frame[(frame["ts"] >= start) & (frame["ts"] <= end)] if not frame.empty else frame)
        if ep.facts.get("stats_interval_s"):
            intervals.append(ep.facts["stats_interval_s"])
    bucket = sorted(intervals)[len(intervals) // 2] if intervals else 10.0
    window = steady_window(bucketed(frames, bucket))
    if window is None:
        return start, end
    return max(start, pd.Timestamp(window[0])), min(end, pd.Timestamp(window[1]) + pd.Timedelta(seconds=bucket))


def _evidence(analysis: Any, finding: Any, start: pd.Timestamp, end: pd.Timestamp) -> tuple[tuple[str, int], ...]:
    """Lines from inside the point's window: the finding's own quotes there, else (a finding that
    began in the warm-up before it) its endpoint's stats lines in the window where the values the
    rule reads peak."""
    from pdwatch.sources.discovery import evidence_source
    inside = [(evidence_source(str(q["source"])), int(q["line_no"])) for q in finding.evidence
              if q.get("source") and q.get("line_no") and q.get("ts") and start <= pd.Timestamp(q["ts"]) <= end]
    if inside:
        return tuple(inside[:3])
    if finding.endpoint is None:
        return ()
    stats = analysis.store.stats(finding.endpoint)
    rows = stats[(stats["ts"] >= start) & (stats["ts"] <= end)] if not stats.empty else stats
    rule = next((r for r in analysis.rules if r.finding == finding.rule), None)
    fields = [f for f in (rule.quoted_fields() if rule is not None else ()) if f in rows and rows[f].notna().any()]
    picked: list[tuple[str, int]] = []
    for field_name in dict.fromkeys(fields[-1:] + fields[:1]):
        row = rows.loc[rows[field_name].idxmax()]
        if isinstance(row.get("source"), str) and (evidence_source(row["source"]), int(row["line_no"])) not in picked:
            picked.append((evidence_source(row["source"]), int(row["line_no"])))
    return tuple(picked)


def _log_reasons(analysis: Any, held: list, start: pd.Timestamp, end: pd.Timestamp) -> list[str]:
    reasons = []
    deaths = sorted({f"{f.endpoint or 'the deployment'} ({f.rule})" for f in held if f.rule in DEATHS
                     and start <= pd.Timestamp(f.start) <= end})
    if deaths:
        reasons.append("died inside the window: " + ", ".join(deaths))
    store = analysis.store
    serving = [e for e in store.endpoints() if e.role != "frontend"]
    if serving and not any(_rows_between(store.stats(e.name), start, end) for e in serving):
        reasons.append("no stats line inside the window")
    roles = {e.role for e in serving}
    if {"prefill", "decode"} <= roles:
        logged = [e for e in serving if _kind_rows(store.events(e.name), "kv_transfer") is not None]
        if logged and not any(_rows_between(_kind_rows(store.events(e.name), "kv_transfer"), start, end)
                              for e in logged):
            reasons.append("no KV transfer inside the window (the decode connector logs them elsewhere)")
    return reasons


def _kind_rows(events: pd.DataFrame, kind: str) -> pd.DataFrame | None:
    if events.empty or "kind" not in events:
        return None
    rows = events[events["kind"] == kind]
    return rows if not rows.empty else None


def _rows_between(frame: pd.DataFrame | None, start: pd.Timestamp, end: pd.Timestamp) -> bool:
    if frame is None or frame.empty or "ts" not in frame:
        return False
    ts = frame["ts"]
    return bool(((ts >= start) & (ts <= end)).any())


__all__ = ["JudgedPoint", "JudgedSweep", "PointVerdict", "judge_point", "judge_sweep", "judge_window"]
