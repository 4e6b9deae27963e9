"""Triage: what is wrong, first. One verdict line rolled up from the findings and the store's
numbers, and identical findings grouped across endpoints.

The dashboard (through the live snapshot) and the report writers both read this module's
output; neither builds a verdict or a group of its own. Nothing here reads a finding's text:
the verdict is made from each finding's rule, severity, endpoint, engines and times, and
from the stats the store holds for a window of the run (``figures``). No Textual here.

The verdict, worst first (the first finding in this order decides; the others are counted):

- severity (critical, warning, info), then the rule's place in ``PRIORITY``: a failure
  (``engine_failure``, ``worker_lost``, ``kv_transfer_errors``) before a bottleneck (``kv_exhausted``,
  ``prefill_bound``, ``ttft_prefill_queue``, ``decode_bound``, ``seq_cap_bound``), before a
  slowdown (``cudagraph_overflow``, ``dp_imbalance``), a blind spot (``stats_missing``), a
  capacity note and the configuration lints;
- with no finding, or only lints (info): "No bottleneck found", with each role's load.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}
PRIORITY = ("engine_failure", "worker_lost", "kv_transfer_errors", "kv_exhausted", "prefill_bound", "ttft_prefill_queue",
            "decode_bound", "seq_cap_bound", "cudagraph_overflow", "dp_imbalance", "stats_missing", "capacity")
ROLE_ORDER = {"prefill": 0, "decode": 1, "aggregated": 2, "unknown": 3, "frontend": 4}
WINDOW_INTERVALS = 6  # the verdict's numbers: each endpoint's last 6 stats intervals (the rules' usual window)
SERVING = ("prefill", "decode", "aggregated", "unknown")


# ------------------------------------------------------------------------------------------ groups


@dataclass(frozen=True)
class FindingGroup:
    """Findings of one rule and severity, across endpoints: one row, its endpoints listed."""
    rule: str
    severity: str
    endpoints: tuple[str | None, ...]  # in the members' order; None = the deployment
    label: str  # "prefill_w0–w3", "decode_w0", "the deployment"
    members: tuple[int, ...]  # indices into the findings the group was made from
    start: datetime | None
    end: datetime | None  # None while any member still fires

    def to_json_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "endpoints": list(self.endpoints),
                "label": self.label, "findings": list(self.members), "start": _iso(self.start),
                "end": _iso(self.end)}


def group_findings(findings: Sequence[Any]) -> tuple[FindingGroup, ...]:
    """Group findings by (rule, severity): most severe first, then the earliest start.

    ``findings`` are any objects with ``rule``, ``severity``, ``endpoint``, ``start`` and
    ``end`` (the rule engine's ``Finding``, the snapshot's ``FindingRow``), or the report's
    finding dicts with those keys."""
    rows = [_Row(f) for f in findings]
    keyed: dict[tuple[str, str], list[int]] = {}
    for i, f in enumerate(rows):
        keyed.setdefault((f.rule, f.severity), []).append(i)
    groups = []
    for (rule, sev), idx in keyed.items():
        idx.sort(key=lambda i: (_ts(rows[i].start), _name_key(rows[i].endpoint)))
        endpoints = tuple(dict.fromkeys(rows[i].endpoint for i in idx))
        ends = [rows[i].end for i in idx]
        groups.append(FindingGroup(rule, sev, endpoints, endpoint_label(endpoints), tuple(idx),
                                   min((rows[i].start for i in idx), key=_ts),
                                   None if any(e is None for e in ends) else max(ends, key=_ts)))
    groups.sort(key=lambda g: (SEVERITY_RANK.get(g.severity, 9), _priority(g.rule), _ts(g.start), g.rule))
    return tuple(groups)


def endpoint_label(names: Iterable[str | None]) -> str:
    """Endpoint names said short: prefill_w0, prefill_w1, prefill_w2 -> "prefill_w0–w2"."""
    names = list(dict.fromkeys(names))
    if not names:
        return ""
    if names == [None]:
        return "the deployment"
    parts: list[str] = []
    runs: dict[str, list[int]] = {}
    order: list[tuple[str, Any]] = []
    for n in names:
        m = re.fullmatch(r"(.*?[A-Za-z_])(\d+)", n or "")
        if m and not (len(m.group(2)) > 1 and m.group(2).startswith("0")):
            stem = m.group(1)
            if stem not in runs:
                runs[stem] = []
                order.append(("run", stem))
            runs[stem].append(int(m.group(2)))
        else:
            order.append(("name", n or "the deployment"))
    for kind, value in order:
        if kind == "name":
            parts.append(value)
            continue
        numbers = sorted(set(runs[value]))
        spans, lo = [], numbers[0]
        for a, b in zip(numbers, numbers[1:] + [None]):
            if b != a + 1:
                spans.append((lo, a))
                if b is not None:
                    lo = b
        tail = re.search(r"[A-Za-z]*$", value).group() or value  # "prefill_w" -> "w"
        texts = []
        for j, (a, b) in enumerate(spans):
            head = value if j == 0 else tail
            texts.append(f"{head}{a}" if a == b else f"{head}{a}–{tail}{b}" if b > a + 1 else
                         f"{head}{a}, {tail}{b}")
        parts.append(", ".join(texts))
    return ", ".join(parts)


# ------------------------------------------------------------------------------------------ figures


@dataclass(frozen=True)
class EndpointFigures:
    """One endpoint's load over a window of the run, per engine (means), from the store."""
    name: str
    role: str
    engines: int
    has_stats: bool
    prompt_tps: float | None = None  # per engine
    gen_tps: float | None = None  # per engine
    running: float | None = None  # per engine
    waiting: float | None = None  # per engine
    kv_pct: float | None = None  # mean over the window and the engines
    kv_max_pct: float | None = None  # the highest engines' mean of one interval in the window


def figures(store: Any, until: Any = None, intervals: int = WINDOW_INTERVALS,
            since: Any = None) -> dict[str, EndpointFigures]:
    """Each endpoint's figures over its last ``intervals`` stats intervals up to ``until`` (default:
    its last line), or over (``since``, ``until``] when ``since`` is given: a finding's episode."""
    out = {}
    cut, start = _utc(until), _utc(since)
    for ep in store.endpoints():
        stats = store.stats(ep.name)
        if cut is not None and not stats.empty:  # the frame is in time order: a bisection, not a scan
            stamps = stats["ts"]
            at = int(stamps.searchsorted(cut.as_unit(stamps.dt.unit) if hasattr(stamps, "dt") else cut, side="right"))
            stats = stats.iloc[:at]
        engines = len(ep.engines) or (stats["engine"].nunique() if not stats.empty else 0)
        out[ep.name] = window_figures(ep.name, ep.role, max(engines, 1), stats,
                                      float(ep.facts.get("stats_interval_s") or 10.0), intervals, start)
    return out


def _utc(when: Any) -> pd.Timestamp | None:
    if when is None:
        return None
    stamp = pd.Timestamp(when)
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp


def window_figures(name: str, role: str, engines: int, stats: pd.DataFrame, interval_s: float,
                   intervals: int = WINDOW_INTERVALS, start: pd.Timestamp | None = None) -> EndpointFigures:
    if stats.empty or "ts" not in stats:
        return EndpointFigures(name, role, engines, False)
    stamps = stats["ts"]
    end = stamps.iloc[-1]
    since = (end - pd.Timedelta(seconds=intervals * max(interval_s, 0.1))).as_unit(stamps.dt.unit)
    if start is not None:  # an episode: from its start, at least the usual window
        since = min(since, start.as_unit(stamps.dt.unit) - pd.Timedelta(seconds=max(interval_s, 0.1)))
    tail = stats.iloc[int(stamps.searchsorted(since, side="right")):]
    step = f"{max(round(interval_s), 1)}s"
    keyed = tail.assign(bucket=tail["ts"].dt.floor(step))
    fields = [f for f in ("prompt_tps", "gen_tps", "running", "waiting", "kv_usage_pct") if f in keyed]
    last = keyed.groupby(["bucket", "engine"])[fields].last()
    per_engine = last.mean()  # the mean engine over the window

    def num(key: str) -> float | None:
        if key not in per_engine:
            return None
        v = float(per_engine[key])
        return None if math.isnan(v) else v

    kv_max = None
    if "kv_usage_pct" in last:
        per_bucket = last["kv_usage_pct"].groupby(level="bucket").mean().dropna()
        kv_max = float(per_bucket.max()) if len(per_bucket) else None
    return EndpointFigures(name, role, engines, True, num("prompt_tps"), num("gen_tps"), num("running"),
                           num("waiting"), num("kv_usage_pct"), kv_max)


# ------------------------------------------------------------------------------------------ verdict


@dataclass(frozen=True)
class Verdict:
    """The one line that leads the dashboard and the report."""
    kind: str  # failure | bottleneck | slowdown | blind | capacity | ok
    title: str  # "Bottleneck: prefill"
    detail: str  # "4/4 prefill endpoints saturated (≈42k tok/s per engine, ~275 waiting); decode at ≤18% KV"
    severity: str | None = None  # of the finding that decided it; None when nothing is wrong
    rule: str | None = None
    endpoints: tuple[str, ...] = ()  # the endpoints it names (worst first)
    others: int = 0  # further finding groups, not in the line
    figures: dict[str, float] = field(default_factory=dict, compare=False)  # the numbers in the line

    @property
    def text(self) -> str:
        return f"{self.title} — {self.detail}" if self.detail else self.title

    def to_json_dict(self) -> dict[str, Any]:
        return {"text": self.text, "kind": self.kind, "title": self.title, "detail": self.detail,
                "severity": self.severity, "rule": self.rule, "endpoints": list(self.endpoints),
                "other_findings": self.others}


def assess(store: Any, findings: Sequence[Any], until: Any = None) -> tuple[Verdict, tuple[FindingGroup, ...]]:
    """The verdict and the groups of ``findings`` (those to judge: firing now on a dashboard,
    every period of the run in a report). The numbers are each endpoint's last window up to
    ``until``, or up to the end of the deciding findings when they all ended (a report of a
    run whose trouble passed)."""
    groups = group_findings(findings)
    decisive = [g for g in groups if _decides(g)]
    since = None
    if decisive and decisive[0].end is not None:
        # A finding that ended: the numbers of its episode (its typical and peak load), not of the
        # tail as it resolved. One still firing: the endpoints' last window, what the panes show.
        since = decisive[0].start
        until = decisive[0].end if until is None else min(pd.Timestamp(until), pd.Timestamp(decisive[0].end))
    return verdict(findings, groups, figures(store, until, since=since)), groups


def verdict(findings: Sequence[Any], groups: Sequence[FindingGroup],
            figs: Mapping[str, EndpointFigures]) -> Verdict:
    serving = [f for f in figs.values() if f.role in SERVING]
    decisive = [g for g in groups if _decides(g)]
    if not decisive:
        notes = len(groups)
        return _healthy(serving, notes)
    g = decisive[0]
    others = len(groups) - 1
    members = [_Row(findings[i]) for i in g.members]
    named = tuple(e for e in g.endpoints if e is not None)
    mine = [figs[e] for e in named if e in figs]
    maker = _MAKERS.get(g.rule, _generic)
    kind, title, detail, numbers = maker(g, members, mine, serving)
    return Verdict(kind, title, detail, g.severity, g.rule, named, others, numbers)


def _decides(g: FindingGroup) -> bool:
    """Lints and other info findings do not make a verdict (capacity, an info, does: it is load)."""
    return g.severity in ("critical", "warning") or g.rule == "capacity"



def _healthy(serving: list[EndpointFigures], notes: int) -> Verdict:
    if not serving:
        return Verdict("ok", "No bottleneck found", "no serving endpoint seen yet", others=notes)
    parts = []
    for role in SERVING:
        eps = [f for f in serving if f.role == role]
        if not eps:
            continue
        stats = [f for f in eps if f.has_stats]
        word = _ROLE_WORD.get(role, role)
        if not stats:
            parts.append(f"{word} without stats")
            continue
        kv = _max(f.kv_max_pct for f in stats)
        wait = _max(f.waiting for f in stats)
        bits = []
        if kv is not None:
            bits.append(f"≤{_pct(kv)} KV")
        if wait is not None:
            bits.append("no queue" if wait < 0.5 else f"~{_int(wait)} waiting")
        parts.append(f"{word} {', '.join(bits)}" if bits else word)
    detail = "; ".join(parts)
    if notes:
        detail += f" ({notes} configuration note{'s' if notes != 1 else ''})"
    return Verdict("ok", "No bottleneck found", detail, others=notes)


_ROLE_WORD = {"prefill": "prefill", "decode": "decode", "aggregated": "aggregated", "unknown": "server"}


def _engine_failure(g, members, mine, serving):
    first = members[0]
    engines = sorted({e for f in members for e in (f.engines or ())})
    where = g.label
    if len(g.endpoints) == 1 and engines:
        where += f" engine{'s' if len(engines) > 1 else ''} {_ranges(engines)}"
    died = "died" if len(members) == 1 else f"died ({len(members)} times)"
    detail = f"{where} {died} at {_clock(first.start)}"
    alive = [f for f in serving if f.name not in g.endpoints]
    if alive:
        detail += f"; {len(alive)} other endpoint{'s' if len(alive) != 1 else ''} still up"
    return "failure", "Failure: engine died", detail, {}


def _worker_lost(g, members, mine, serving):
    first = members[0]
    gone = "is gone" if len(g.endpoints) == 1 else "are gone"
    detail = f"{g.label} {gone} since {_clock(first.start)} (its log went silent; the frontend lost it)"
    alive = [f for f in serving if f.name not in g.endpoints]
    if alive:
        detail += f"; {len(alive)} other endpoint{'s' if len(alive) != 1 else ''} still up"
    else:
        detail += "; no serving endpoint left"
    return "failure", "Failure: worker died", detail, {}


def _kv_transfer(g, members, mine, serving):
    return "failure", "Failure: KV transfers", f"errors on {g.label}", {}


def _kv_exhausted(g, members, mine, serving):
    role = _role_word(mine, "")
    parts = []
    numbers: dict[str, float] = {}
    for f in mine[:3]:
        bits = []
        if f.kv_max_pct is not None:
            bits.append(f"{_pct(f.kv_max_pct)} KV")
            numbers[f"{f.name}.kv_max_pct"] = f.kv_max_pct
        per = " per engine" if f.engines > 1 else ""
        if f.waiting is not None:
            bits.append(f"~{_int(f.waiting)} waiting{per if f.running is None else ''}")
            numbers[f"{f.name}.waiting_per_engine"] = f.waiting
        if f.running is not None:
            bits.append(f"{_int(f.running)} running{per}")
        parts.append(f"{f.name} at {', '.join(bits)}" if bits else f.name)
    detail = "; ".join(parts) or g.label
    if len(mine) > 3:
        detail += f" (+{len(mine) - 3} more)"
    feeders = [f for f in serving if f.role == "prefill" and f.has_stats]
    if role == "decode " and feeders:
        wait = _max(f.waiting for f in feeders)
        if wait is not None:
            detail += "; prefill " + ("not queueing" if wait < 0.5 else f"~{_int(wait)} waiting per engine")
    return "bottleneck", f"Bottleneck: {role}KV cache", detail, numbers


def _prefill_bound(g, members, mine, serving):
    prefills = [f for f in serving if f.role == "prefill"]
    total = len(prefills) or len(mine)
    named = len(set(g.endpoints))
    tps = _mean(f.prompt_tps for f in mine)
    wait = _mean(f.waiting for f in mine)
    bits = []
    if tps is not None:
        bits.append(f"≈{_short(tps)} tok/s per engine")
    if wait is not None:
        bits.append(f"~{_int(wait)} waiting")
    detail = f"{named}/{total} prefill endpoint{'s' if total != 1 else ''} saturated"
    if bits:
        detail += f" ({', '.join(bits)})"
    decode = [f for f in serving if f.role == "decode" and f.has_stats]
    kv = _max(f.kv_max_pct for f in decode)
    if kv is not None:
        detail += f"; decode at ≤{_pct(kv)} KV"
    numbers = {k: v for k, v in (("prompt_tps_per_engine", tps), ("waiting_per_engine", wait),
                                 ("decode_kv_max_pct", kv)) if v is not None}
    return "bottleneck", "Bottleneck: prefill", detail, numbers


def _ttft_prefill_queue(g, members, mine, serving):
    prefills = [f for f in serving if f.role == "prefill" and f.has_stats]
    wait = _max(f.waiting for f in prefills)
    detail = "time to first token rising at the frontend"
    if wait is not None:
        detail += f" while prefill queues (~{_int(wait)} waiting per engine)"
    return "bottleneck", "Bottleneck: prefill", detail, {}


def _decode_bound(g, members, mine, serving):
    tps = _mean(f.gen_tps for f in mine)
    wait = _mean(f.waiting for f in mine)
    kv = _max(f.kv_max_pct for f in mine)
    bits = [b for b in (f"≈{_short(tps)} tok/s per engine" if tps is not None else None,
                        f"~{_int(wait)} waiting" if wait is not None else None) if b]
    detail = f"{g.label} at its generation ceiling" + (f" ({', '.join(bits)})" if bits else "")
    if kv is not None:
        detail += f"; KV at ≤{_pct(kv)}"
    return "bottleneck", "Bottleneck: decode", detail, {}


def _seq_cap(g, members, mine, serving):
    run = _mean(f.running for f in mine)
    wait = _mean(f.waiting for f in mine)
    kv = _max(f.kv_max_pct for f in mine)
    detail = f"{g.label} runs at its max_num_seqs"
    bits = [b for b in (f"~{_int(run)} running per engine" if run is not None else None,
                        f"~{_int(wait)} waiting" if wait is not None else None,
                        f"KV ≤{_pct(kv)}" if kv is not None else None) if b]
    if bits:
        detail += f" ({', '.join(bits)})"
    return "bottleneck", "Bottleneck: max_num_seqs", detail, {}


def _cudagraph(g, members, mine, serving):
    engines = sorted({e for f in members for e in (f.engines or ())})
    where = g.label + (f" engine{'s' if len(engines) > 1 else ''} {_ranges(engines)}"
                       if len(g.endpoints) == 1 and engines else "")
    return ("slowdown", "Slowdown: CUDA graphs too small",
            f"{where} run batches above the largest captured graph", {})


def _dp_imbalance(g, members, mine, serving):
    return "slowdown", "Slowdown: DP imbalance", f"one engine of {g.label} carries far more load than its siblings", {}


def _stats_missing(g, members, mine, serving):
    blind = len(set(g.endpoints))
    total = len(serving) or blind
    verb = "prints" if blind == 1 else "print"
    return ("blind", "Blind spot: no stats",
            f"{g.label} {verb} no stats lines; {blind}/{total} serving endpoint{'s' if total != 1 else ''} "
            "cannot be judged", {})


def _capacity(g, members, mine, serving):
    run = _max(f.running * f.engines for f in mine if f.running is not None)
    detail = f"{g.label} runs near the concurrency its KV cache was sized for"
    if run is not None:
        detail += f" (~{_int(run)} running)"
    return "capacity", "Near capacity", detail, {}


_LINT_WORDS = {
    "lint_api_server_count": "more than one API server, so no stats lines",
    "lint_ssm_conv_layout": "SSM conv-state layout is not DS",
    "lint_async_scheduling_off": "async scheduling is off",
    "lint_prefix_caching_unused": "prefix caching finds nothing to reuse",
    "lint_block_size_mismatch": "prefill and decode KV block sizes differ",
}


def _generic(g, members, mine, serving):
    if g.rule.startswith("lint_"):
        words = _LINT_WORDS.get(g.rule, g.rule.removeprefix("lint_").replace("_", " "))
        return "config", "Configuration", f"{g.label}: {words}", {}
    return "bottleneck" if g.severity != "info" else "capacity", f"Finding: {g.rule}", f"on {g.label}", {}


_MAKERS = {"engine_failure": _engine_failure, "worker_lost": _worker_lost, "kv_transfer_errors": _kv_transfer, "kv_exhausted": _kv_exhausted,
           "prefill_bound": _prefill_bound, "ttft_prefill_queue": _ttft_prefill_queue,
           "decode_bound": _decode_bound, "seq_cap_bound": _seq_cap, "cudagraph_overflow": _cudagraph,
           "dp_imbalance": _dp_imbalance, "stats_missing": _stats_missing, "capacity": _capacity}


# ------------------------------------------------------------------------------------------ ordering


def endpoint_severity(findings: Iterable[Any]) -> dict[str, str]:
    """The worst severity of the findings on each endpoint."""
    out: dict[str, str] = {}
    for f in map(_Row, findings):
        if f.endpoint is None:
            continue
        held = out.get(f.endpoint)
        if held is None or SEVERITY_RANK.get(f.severity, 9) < SEVERITY_RANK.get(held, 9):
            out[f.endpoint] = f.severity
    return out


def worst_first(endpoints: Iterable[tuple[str, str]], findings: Iterable[Any]) -> list[str]:
    """(name, role) pairs ordered worst first: endpoints with a critical finding, then warning,
    then info, then the rest; within each, prefill, decode, other, then the name (w2 before w10)."""
    sev = endpoint_severity(findings)
    return [name for name, role in sorted(endpoints, key=lambda nr: (
        SEVERITY_RANK.get(sev.get(nr[0], ""), 3), ROLE_ORDER.get(nr[1], 5), _name_key(nr[0])))]


# ------------------------------------------------------------------------------------------ evidence

# How vLLM words each stats field in its log line: the value a rule read, found again for a highlight.
_FIELD_PATTERNS = {
    "prompt_tps": r"(?:Avg prompt throughput|prompt throughput)[:=]\s*[\d.,]+(?:\s*tokens/s)?",
    "gen_tps": r"(?:Avg generation throughput|generation throughput)[:=]\s*[\d.,]+(?:\s*tokens/s)?",
    "running": r"Running[:=]\s*\d+(?:\s*reqs)?",
    "waiting": r"Waiting[:=]\s*\d+(?:\s*reqs)?",
    "kv_usage_pct": r"(?:GPU )?KV cache usage[:=]\s*[\d.]+%?",
    "preemptions": r"Preemptions?[:=]\s*\d+",
    "prefix_hit_pct": r"(?<!External )Prefix cache hit rate[:=]\s*[\d.]+%?",
    "external_prefix_hit_pct": r"External prefix cache hit rate[:=]\s*[\d.]+%?",
}


def evidence_marks(text: str, fields: Iterable[str]) -> list[tuple[int, int]]:
    """Where in a quoted stats line the values of ``fields`` (the stats the rule read) stand, as
    (start, end) character spans in order; none for a field the line does not word as vLLM does."""
    spans = []
    for name in fields:
        pattern = _FIELD_PATTERNS.get(name)
        if pattern is None:
            continue
        m = re.search(pattern, text)
        if m:
            spans.append((m.start(), m.end()))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


# ------------------------------------------------------------------------------------------ helpers


class _Row:
    """A finding read the same way whether it is an object (Finding, FindingRow) or a report dict."""

    def __init__(self, f: Any) -> None:
        get = f.get if isinstance(f, dict) else lambda k, d=None: getattr(f, k, d)
        self.rule = str(get("rule") or "?")
        self.severity = str(get("severity") or "info")
        self.endpoint = get("endpoint")
        self.start = get("start")
        self.end = get("end")
        self.engines = tuple(get("engines") or ())


def _priority(rule: str) -> int:
    return PRIORITY.index(rule) if rule in PRIORITY else len(PRIORITY)


def _name_key(name: str | None) -> tuple:
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", name or "") if p)


def _ts(value: Any) -> float:
    if value is None:
        return math.inf
    try:
        return pd.Timestamp(value).timestamp()
    except (TypeError, ValueError):
        return math.inf


def _iso(value: Any) -> str | None:
    return None if value is None else pd.Timestamp(value).isoformat()


def _clock(value: Any) -> str:
    return "?" if value is None else pd.Timestamp(value).strftime("%H:%M:%S")


def _ranges(engines: list[int]) -> str:
    if len(engines) > 2 and engines == list(range(engines[0], engines[-1] + 1)):
        return f"{engines[0]}–{engines[-1]}"
    return ",".join(map(str, engines))


def _max(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return max(vals) if vals else None


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def _count(n: int, role: str) -> str:
    return f"{n} {role}"


def _role_word(figs: list[EndpointFigures], default: str) -> str:
    roles = {f.role for f in figs}
    role = roles.pop() if len(roles) == 1 else None
    return f"{role} " if role in ("prefill", "decode") else default


def _pct(v: float) -> str:
    if 99.5 <= v < 100:
        return f"{math.floor(v * 10) / 10:.1f}%"  # not "100%" for a cache with a few blocks free
    return f"{v:.0f}%" if v >= 10 or v == 0 else f"{v:.1f}%"


def _int(v: float) -> str:
    return f"{v:,.0f}"


def _short(v: float) -> str:
    """Tokens/s for a line: 42,262 -> 42k, 1,234 -> 1.2k, 850 -> 850."""
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.1f}M"
    if a >= 1e4:
        return f"{v / 1e3:.0f}k"
    if a >= 1e3:
        return f"{v / 1e3:.1f}k"
    return f"{v:.0f}"
