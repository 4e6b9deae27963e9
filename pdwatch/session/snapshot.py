"""What a UI renders of a live session: immutable rows, built by ``rows.SnapshotBuilder``.

Plain dataclasses of plain values (no pandas), so the dashboard, the headless printer and the
tests read them without knowing the store.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import pandas as pd

from pdwatch.diagnosis import Diagnosis
from pdwatch.model.throughput import COUNTED
from pdwatch.rules.verdict import FindingGroup, Verdict


@dataclass(frozen=True)
class Headline:
    total_tps: float | None
    prompt_tps: float | None
    gen_tps: float | None
    tps_per_gpu: float | None
    gpus: int | None
    # "CPU" when every serving endpoint runs vLLM's CPU backend: no GPU to divide by, tokens/s per
    # worker instead (tps_per_gpu and gpus are then None), as the report's headline
    device: str | None = None
    workers: int = 0  # serving endpoints
    tps_per_worker: float | None = None


@dataclass(frozen=True)
class EngineRow:
    engine: int
    prompt_tps: float | None
    gen_tps: float | None
    running: float | None
    waiting: float | None
    kv_usage_pct: float | None
    last_ts: datetime | None


@dataclass(frozen=True)
class FrontendSummary:
    """A Dynamo frontend as its users saw it over the last ``window_s`` seconds up to the clock: its
    log's inference responses (counted per second) and, when its /metrics is scraped, the newest
    figures of it in that window (a latency needs a request to have ended in a scrape interval)."""
    window_s: float
    requests_ok: int = 0
    requests_failed: int = 0
    statuses: tuple[str, ...] = ()  # HTTP statuses of the failed requests, commonest first (of the lines kept)
    error_types: tuple[str, ...] = ()  # Dynamo's error types of the failed requests, commonest first
    latency_s: float | None = None  # mean latency of the successful requests (its log)
    scraped: bool = False  # its /metrics has been read (else the figures below are unknown, not zero)
    ttft_s: float | None = None
    ttft_p99_s: float | None = None
    itl_s: float | None = None
    itl_p99_s: float | None = None
    inflight: float | None = None
    queued: float | None = None

    @property
    def requests_per_s(self) -> float:
        return (self.requests_ok + self.requests_failed) / self.window_s if self.window_s > 0 else 0.0

    @property
    def failed_pct(self) -> float | None:
        answered = self.requests_ok + self.requests_failed
        return 100.0 * self.requests_failed / answered if answered else None


@dataclass(frozen=True)
class EndpointRow:
    name: str
    role: str
    engines: tuple[int, ...]
    gpus: int | None
    prompt_tps: float | None
    gen_tps: float | None
    running: float | None
    waiting: float | None
    kv_usage_pct: float | None
    last_seen: datetime | None
    stale_for_s: float | None  # seconds of silence, when more than rows.STALE_INTERVALS intervals
    interval_s: float
    history: tuple[float, ...]  # counted tokens/s per stats interval, oldest first
    engine_rows: tuple[EngineRow, ...]
    sources: tuple[str, ...]
    stats_silence: str | None = None  # why it prints no stats lines, when its start-up lines say
    frontend: tuple[tuple[str, float], ...] = ()  # a Dynamo frontend's latest /metrics figures (ttft_s, ...)
    device: str | None = None  # where its KV cache is: "CPU" on vLLM's CPU backend (start-up lines), else unknown
    # a Dynamo frontend with request or /metrics rows: what the dashboard's frontend strip shows of it
    frontend_summary: FrontendSummary | None = None

    @property
    def counted_tps(self) -> float | None:
        """The tokens/s this endpoint adds to the deployment's total (prompt on prefill, ...)."""
        fields = COUNTED.get(self.role, ())
        values = [getattr(self, f) for f in fields if getattr(self, f) is not None]
        return sum(values) if values else None


@dataclass(frozen=True)
class Evidence:
    source: str | None
    line_no: int | None
    text: str
    marks: tuple[tuple[int, int], ...] = ()  # character spans of the values the rule read (stats lines)


@dataclass(frozen=True)
class FindingRow:
    rule: str
    severity: str
    endpoint: str | None
    engines: tuple[int, ...]
    start: datetime
    end: datetime | None
    summary: str
    explanation: str
    recommendation: str
    evidence: tuple[Evidence, ...]
    summary_at_start: str = ""  # what it said when it fired
    engines_at_start: tuple[int, ...] = ()

    @property
    def at_firing(self) -> "FindingRow":
        """The row as it read when it fired: still firing, its first summary and engines."""
        return replace(self, end=None, summary=self.summary_at_start or self.summary,
                       engines=self.engines_at_start or self.engines)

    @property
    def key(self) -> tuple[str, str | None, datetime]:
        return (self.rule, self.endpoint, self.start)

    @property
    def since(self) -> datetime:
        return self.start


@dataclass(frozen=True)
class Change:
    state: str  # "firing", "escalated" (a worse severity while it holds) or "resolved"
    at: datetime
    finding: FindingRow

    def to_json_dict(self) -> dict[str, Any]:
        f = self.finding
        return {"rule": f.rule, "severity": f.severity, "endpoint": f.endpoint, "engines": list(f.engines),
                "start": iso(f.start), "end": iso(f.end), "summary": f.summary,
                "recommendation": f.recommendation, "state": self.state, "at": iso(self.at)}

    def to_line(self) -> str:
        f = self.finding
        engines = f" engines {','.join(map(str, f.engines))}" if f.engines else ""
        return (f"{iso(self.at)} {self.state.upper():8} {f.severity:8} {f.rule} "
                f"{f.endpoint or '(deployment)'}{engines}: {f.summary}")


@dataclass(frozen=True)
class EndpointSeries:
    """One endpoint's stats over the whole run so far, engines combined per stats interval, oldest first
    (tokens/s, running and waiting summed over the engines, KV usage their mean, in %)."""
    times: tuple[datetime, ...] = ()
    prompt_tps: tuple[float, ...] = ()
    gen_tps: tuple[float, ...] = ()
    running: tuple[float, ...] = ()
    waiting: tuple[float, ...] = ()
    kv_usage_pct: tuple[float, ...] = ()
    # a Dynamo frontend's latencies where known (its /metrics' TTFT, its log's request latency), each
    # with its own times: a second with no request ended has no latency, not a zero
    ttft_times: tuple[datetime, ...] = ()
    ttft_s: tuple[float, ...] = ()
    latency_times: tuple[datetime, ...] = ()
    latency_s: tuple[float, ...] = ()


@dataclass(frozen=True)
class StartupFacts:
    """What an endpoint's servers said at start-up (per engine: one GPU's memory)."""
    version: str | None = None
    model: str | None = None
    weights_gib: float | None = None  # "Model loading took X GiB"
    kv_memory_gib: float | None = None  # "Available KV cache memory"
    cudagraph_gib: float | None = None  # the largest engine's graph pool, measured, else the estimate
    cudagraph_measured: bool = False
    kv_capacity_tokens: int | None = None
    max_concurrency: float | None = None
    max_concurrency_tokens: int | None = None  # tokens per request behind max_concurrency
    capture_sizes: tuple[int, ...] = ()
    max_capture_size: int | None = None
    non_default_args: tuple[tuple[str, str], ...] = ()  # (name, value as text), in logged order


@dataclass(frozen=True)
class EndpointDetail:
    row: EndpointRow
    series: EndpointSeries
    startup: StartupFacts
    recent_lines: tuple[Evidence, ...]  # the endpoint's newest stats and event lines in the store, oldest first


@dataclass(frozen=True)
class PastTrouble:
    verdict: Verdict
    start: datetime  # the deciding findings' first start and last end
    end: datetime


@dataclass(frozen=True)
class Snapshot:
    mode: str  # "watch" or "replay"
    clock: datetime | None
    speed: float | None  # replay: x wall time, math.inf for max; None in watch mode
    paused: bool
    loading: bool  # replay: still reading the files
    done: bool  # replay: the clock reached the end of the logs (watch: never)
    headline: Headline
    endpoints: tuple[EndpointRow, ...]
    findings: tuple[FindingRow, ...]  # firing now, most severe first (at the end of a replay: every finding of the run)
    all_findings: tuple[FindingRow, ...]  # every firing period so far, in start order
    changes: tuple[Change, ...]  # fired / resolved since the previous tick
    notices: tuple[str, ...]  # source notices since the previous tick
    start: datetime | None = None  # replay: the logs' first and last timestamps
    end: datetime | None = None
    seeking_to: datetime | None = None  # replay: a seek still being played towards this time
    # replay: its inputs, all read, hold no vLLM or Dynamo server line: the one line to say (exit 3)
    nothing_to_judge: str | None = None
    # what is wrong now: the diagnosis of the findings firing now (its findings are ``findings``, in order)
    diagnosis: Diagnosis | None = None
    # The run's history. Replay, once its files are read: every finding of the whole run as ``report``
    # gives them (ahead of the clock too: the timeline and the jump to the first trouble need them);
    # watch: every firing period so far. Empty until known (then read ``all_findings``).
    run_findings: tuple[FindingRow, ...] = ()
    # the diagnosis of those findings, firing or resolved: what the run had ("was: ..." once it cleared;
    # a replay's end shows it, as the report does)
    run_diagnosis: Diagnosis | None = None
    first_trouble: datetime | None = None  # the start of the run's first warning-or-worse finding
    # Nothing as bad firing now, but a warning-or-worse finding fired and cleared before the clock:
    # what it was (the verdict of the findings that cleared, with their episode's numbers)
    was: PastTrouble | None = None
    sweep_point: str | None = None  # a sweep job: the point the clock is in ("C=512"), from benchmark.out

    @property
    def verdict(self) -> Verdict | None:
        return self.diagnosis.verdict if self.diagnosis is not None else None

    @property
    def groups(self) -> tuple[FindingGroup, ...]:
        """The findings firing now, grouped across endpoints (members index ``findings``)."""
        return self.diagnosis.groups if self.diagnosis is not None else ()

    def severity_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.severity] = out.get(f.severity, 0) + 1
        return out

    def roles(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in self.endpoints:
            out[e.role] = out.get(e.role, 0) + 1
        return out


def iso(value: datetime | pd.Timestamp | None) -> str | None:
    return None if value is None else pd.Timestamp(value).isoformat()
