"""Rule tests as data, in the style of ``promtool test rules``.

    rule_files: [builtin, my_rules.yaml]   # relative to this file; `builtin` = the built-ins
    tests:
    - name: capped engine
      interval: 2s                 # spacing of the series values (default 10s)
      start: 2026-11-29T09:01:24Z  # time of the first value (default 2026-01-01T00:00:00Z)
      eval_every: 2s               # evaluation step (default: interval)
      facts: {concurrency: 64}     # deployment facts
      endpoints:
      - name: vllm
        role: aggregated           # default unknown
        facts: {max_num_seqs: 4}   # stats_interval_s defaults to the test's interval
        engines:                   # engine -> field -> series (rules.series notation)
          0: {running: '0x6 4x5 2 0', waiting: '0x6 44x3 30 13 0 0', kv_usage_pct: '0x6 0.2x5 0.1 0'}
        events:
        - {at: 30s, kind: kv_expired, engine: 0, text: "Releasing expired KV blocks ..."}
        rows:                      # or stats lines one by one, at their offsets
        - {at: 0s, engine: 0, running: 4, waiting: 0}
      expect:                      # firing states after the evaluation at `at`
      - at: 40s
        firing: []                 # empty = nothing may fire (or nothing of `finding:`)
      - at: 46s
        finding: seq_cap_bound     # optional: only compare this rule's states
        firing: [{finding: seq_cap_bound, endpoint: vllm, engines: [0], severity: warning}]
      periods:                     # engine.findings() after the last evaluation
      - {finding: seq_cap_bound, endpoint: vllm, engines: [0], start: 46s, end: 54s}

An expected item compares only the keys it gives: finding, endpoint, engines, severity,
labels (subset), summary, value (to 1e-6), state; periods also start/end (offsets from
``start``; ``end: null`` = still firing) and evidence_lines (line numbers quoted).

``run_case_file(path, rules=None)``: the results of a file's tests against its own
``rule_files`` (or ``rules``, already loaded: ``pdwatch rules test --rules FILE``). A failed
comparison is in ``CaseResult.failures`` (one line each) and ``CaseResult.diffs`` (what was
expected, what fired: ``pdwatch rules test`` prints them as a diff). ``prepare`` (optional)
may rewrite each test before it runs (``pdwatch rules test`` turns log input into rows there).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable

import numpy as np
import pandas as pd
import yaml

from .engine import RuleEngine
from .findings import FIRING, Finding, FindingState
from .model import STATS_FIELDS, DeploymentView, EndpointView
from .series import expand
from .span import parse_span
from .spec import load_rules

DEFAULT_START = datetime(2026, 1, 1, tzinfo=timezone.utc)
STATS_COLUMNS = ["ts", "engine", *STATS_FIELDS, "source", "line_no"]
EVENT_COLUMNS = ["ts", "engine", "kind", "source", "line_no", "text", "reason"]


@dataclass
class Diff:
    """One comparison that failed: at an evaluation time (``at 40s``) or of the ``periods``."""

    where: str
    missing: list[dict[str, Any]]  # expected, not found
    unexpected: list[dict[str, Any]]  # found, not expected
    got: list[dict[str, Any]]  # everything found there (firing states or periods)


@dataclass
class CaseResult:
    file: str
    name: str
    failures: list[str] = field(default_factory=list)
    diffs: list[Diff] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


# -- frames in the store's shape -------------------------------------------------------
def stats_frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Stats rows (dicts with ts, engine, fields...) as the store's frame, sorted by ts."""
    df = pd.DataFrame(list(rows), columns=STATS_COLUMNS)
    df["ts"] = pd.to_datetime(df["ts"], utc=True).astype("datetime64[ns, UTC]")
    df["engine"] = df["engine"].fillna(0).astype(np.int64)
    for f in STATS_FIELDS:
        df[f] = pd.to_numeric(df[f], errors="coerce").astype(np.float64)
    df["preemptions"] = df["preemptions"].fillna(0.0)
    df["source"] = df["source"].fillna("").astype(str)
    df["line_no"] = df["line_no"].fillna(0).astype(np.int64)
    return df.sort_values("ts", kind="stable").reset_index(drop=True)


def events_frame(rows: Iterable[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame(list(rows), columns=EVENT_COLUMNS)
    df["ts"] = pd.to_datetime(df["ts"], utc=True).astype("datetime64[ns, UTC]")
    df["engine"] = pd.array(df["engine"].tolist(), dtype="Int64")
    df["kind"] = df["kind"].astype(str)
    df["source"] = df["source"].fillna("").astype(str)
    df["line_no"] = df["line_no"].fillna(0).astype(np.int64)
    df["text"] = df["text"].fillna("").astype(str)
    df["reason"] = df["reason"].astype(object).where(df["reason"].notna(), None)
    return df


def build_view(test: dict[str, Any]) -> DeploymentView:
    """The DeploymentView a case describes."""
    start = _start(test)
    step = _seconds(test.get("interval", "10s"))
    endpoints = []
    for spec in test.get("endpoints") or []:
        name = str(spec["name"])
        source = f"{name}.log"
        rows = []
        for engine, series in (spec.get("engines") or {}).items():
            cols = {f: expand(v) for f, v in (series or {}).items()}
            unknown = set(cols) - set(STATS_FIELDS)
            if unknown:
                raise ValueError(f"endpoint {name}: unknown stats fields {sorted(unknown)}")
            length = max((len(v) for v in cols.values()), default=0)
            for k in range(length):
                vals = {f: (v[k] if k < len(v) else math.nan) for f, v in cols.items()}
                if all(math.isnan(x) for x in vals.values()):
                    continue  # no line at this step
                rows.append({"ts": start + timedelta(seconds=k * step), "engine": int(engine), **vals})
        for r in spec.get("rows") or []:  # stats lines one by one, at offsets (log input: pdwatch rules test)
            vals = {f: float(r[f]) if r[f] is not None else math.nan for f in STATS_FIELDS if f in r}
            rows.append({"ts": start + timedelta(seconds=_seconds(r["at"])), "engine": int(r.get("engine") or 0),
                         **vals})
        rows.sort(key=lambda r: (r["ts"], r["engine"]))
        for i, r in enumerate(rows):
            r["source"], r["line_no"] = source, i + 1
        events = []
        for j, e in enumerate(spec.get("events") or []):
            at = e.get("at")
            events.append({"ts": None if at is None else start + timedelta(seconds=_seconds(at)),
                           "engine": e.get("engine"), "kind": e["kind"], "source": e.get("source", source),
                           "line_no": int(e.get("line_no", 10_000 + j)), "text": e.get("text", ""),
                           "reason": e.get("reason")})
        facts = {"stats_interval_s": step, **(spec.get("facts") or {})}
        engines = tuple(sorted({int(g) for g in (spec.get("engines") or {})}
                               | {int(r.get("engine") or 0) for r in spec.get("rows") or []}))
        endpoints.append(EndpointView(name, spec.get("role", "unknown"), engines, spec.get("gpus"),
                                      facts, stats_frame(rows), events_frame(events)))
    return DeploymentView(tuple(endpoints), dict(test.get("facts") or {}))


# -- running ---------------------------------------------------------------------------
def load_case_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    with open(os.fspath(path), encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    if not isinstance(doc, dict) or not isinstance(doc.get("tests"), list):
        raise ValueError(f"{os.fspath(path)}: expected a mapping with a 'tests' list")
    return doc


def case_rules(path: str | os.PathLike[str], doc: dict[str, Any]) -> list:
    """The rules a case file names (``rule_files``, relative to it; ``builtin`` = the built-ins)."""
    here = os.path.dirname(os.fspath(path))
    files = doc.get("rule_files") or ["builtin"]
    builtin = "builtin" in files
    paths = [os.path.join(here, f) for f in files if f != "builtin"]
    return load_rules(paths, include_builtin=builtin)


def run_case_file(path: str | os.PathLike[str], rules: list | None = None, prepare=None) -> list[CaseResult]:
    path = os.fspath(path)
    doc = load_case_file(path)
    rules = rules if rules is not None else case_rules(path, doc)
    out = []
    for t in doc.get("tests") or []:
        out.append(_run(path, rules, prepare(t) if prepare is not None else t))
    return out


def _run(path: str, rules: list, test: dict[str, Any]) -> CaseResult:
    result = CaseResult(path, str(test.get("name", "?")))
    view = build_view(test)
    start = _start(test)
    step = _seconds(test.get("eval_every", test.get("interval", "10s")))
    expects = sorted(test.get("expect") or [], key=lambda e: _seconds(e["at"]))
    times = {_seconds(e["at"]) for e in expects}
    last = max([*times, _last_sample(view, start)] if test.get("periods") is not None else [*times, 0.0])
    k = 0
    while k * step <= last + 1e-9:
        times.add(round(k * step, 6))
        k += 1
    engine = RuleEngine(rules)
    for t in sorted(times):
        states = engine.evaluate(view, start + timedelta(seconds=t))
        for e in (x for x in expects if abs(_seconds(x["at"]) - t) < 1e-9):
            want = e.get("firing") or []
            got = [s for s in states if s.state == FIRING and e.get("finding") in (None, s.rule)]
            _check(result, f"at {e['at']}", want, [_state_dict(s) for s in got])
    if test.get("periods") is not None:
        got_p = [_finding_dict(f, start) for f in engine.findings()]
        _check(result, "periods", test["periods"], got_p)
    return result


def _check(result: CaseResult, where: str, want: list[dict[str, Any]], got: list[dict[str, Any]]) -> None:
    failures = _compare(where, want, got)
    if failures:
        result.failures += failures
        missing, unexpected = _split(want, got)
        result.diffs.append(Diff(where, missing, unexpected, got))


def _split(want: list[dict[str, Any]], got: list[dict[str, Any]]) -> tuple[list[dict], list[dict]]:
    left = list(got)
    missing = []
    for w in want:
        hit = next((g for g in left if _matches(w, g)), None)
        if hit is None:
            missing.append(w)
        else:
            left.remove(hit)
    return missing, left


def _state_dict(s: FindingState) -> dict[str, Any]:
    return {"finding": s.rule, "endpoint": s.endpoint, "engines": s.engines, "severity": s.severity,
            "labels": s.labels, "summary": s.summary, "value": s.value, "state": s.state,
            "evidence_lines": [q["line_no"] for q in s.evidence]}


def _finding_dict(f: Finding, start: datetime) -> dict[str, Any]:
    def off(t: datetime | None) -> float | None:
        return None if t is None else (t - start).total_seconds()
    return {"finding": f.rule, "endpoint": f.endpoint, "engines": f.engines, "severity": f.severity,
            "labels": f.labels, "summary": f.summary, "value": f.value, "start": off(f.start),
            "end": off(f.end), "evidence_lines": [q["line_no"] for q in f.evidence]}


def _matches(want: dict[str, Any], got: dict[str, Any]) -> bool:
    for k, v in want.items():
        g = got.get(k)
        if k == "labels":
            if any(g.get(a) != str(b) for a, b in (v or {}).items()):
                return False
        elif k in ("start", "end"):
            if (v is None) != (g is None) or (v is not None and abs(_seconds(v) - g) > 1e-6):
                return False
        elif k == "value":
            if g is None or v is None:
                if g is not v:
                    return False
            elif not math.isclose(float(v), g, rel_tol=1e-6, abs_tol=1e-9):
                return False
        elif k == "engines":
            if sorted(v) != sorted(g):
                return False
        elif g != v:
            return False
    return True


def _compare(where: str, want: list[dict[str, Any]], got: list[dict[str, Any]]) -> list[str]:
    left = list(got)
    missing = []
    for w in want:
        hit = next((g for g in left if _matches(w, g)), None)
        if hit is None:
            missing.append(w)
        else:
            left.remove(hit)
    out = [f"{where}: expected {w}, not found" for w in missing]
    out += [f"{where}: unexpected {_short(g)}" for g in left]
    return out


def _short(d: dict[str, Any]) -> dict[str, Any]:
    return {k: d[k] for k in ("finding", "endpoint", "engines", "start", "end", "value") if k in d}


def _seconds(v: Any) -> float:
    if isinstance(v, (int, float)):
        return float(v)
    span = parse_span(str(v))
    if span.seconds is None:
        raise ValueError(f"{v!r}: give a time, e.g. 30s")
    return span.seconds


def _start(test: dict[str, Any]) -> datetime:
    s = test.get("start")
    if s is None:
        return DEFAULT_START
    ts = pd.Timestamp(s)
    return (ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")).to_pydatetime()


def _last_sample(view: DeploymentView, start: datetime) -> float:
    last = 0.0
    for e in view.endpoints:
        if len(e.stats):
            last = max(last, (e.stats["ts"].max().to_pydatetime() - start).total_seconds())
    return last
