"""The log lines a finding quotes: a few stats lines and events, most telling first.

Each firing instance keeps an ``EvidenceLog``. Every evaluation scans only the lines
that arrived since the last one (vectorised over all firing instances of a rule), so a
finding that fires for days costs no more per evaluation than a new one. Stats lines are
those where the rule's ``evidence.rows`` condition holds (default: every line of the
period), ranked by ``evidence.rank`` (largest first; default: in time order, the onset
first). Events of the quoted kinds come in time order, the first ones first (the first
failure usually names the cause).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import numpy as np

from .context import Ctx
from .nodes import Lit, Samples, ev
from .spec import Rule
from .values import broadcast, to_num

if TYPE_CHECKING:
    from .layout import Layout

# How vLLM words each field, so a quoted stats line reads like the log.
_LABELS = {
    "prompt_tps": ("Avg prompt throughput: ", " tokens/s"),
    "gen_tps": ("Avg generation throughput: ", " tokens/s"),
    "running": ("Running: ", " reqs"),
    "waiting": ("Waiting: ", " reqs"),
    "kv_usage_pct": ("KV cache usage: ", "%"),
    "preemptions": ("Preemptions: ", ""),
    "deferred": ("Deferred: ", " reqs"),
    "prefix_hit_pct": ("Prefix cache hit rate: ", "%"),
    "external_prefix_hit_pct": ("External prefix cache hit rate: ", "%"),
    # a Dynamo frontend's /metrics row
    "ttft_s": ("TTFT: ", " s"),
    "itl_s": ("ITL: ", " s"),
    "isl_tokens": ("ISL: ", " tokens"),
    "osl_tokens": ("OSL: ", " tokens"),
    "request_rate": ("Requests: ", "/s"),
    "frontend_inflight": ("In flight: ", " reqs"),
    "frontend_queued": ("Queued: ", " reqs"),
    "ttft_p99_s": ("TTFT p99: ", " s"),
    "itl_p99_s": ("ITL p99: ", " s"),
    # a Dynamo frontend's second of HTTP responses (its log)
    "requests_ok": ("Requests ok: ", ""),
    "requests_failed": ("Requests failed: ", ""),
    "request_latency_s": ("Latency: ", " s"),
}
_TEXT_MAX = 400


@dataclass
class Quote:
    kind: str  # "stats" or an event kind
    source: str
    line_no: int
    ts_us: int | None
    engine: int | None
    text: str
    score: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        ts = (datetime.fromtimestamp(self.ts_us / 1e6, tz=timezone.utc).isoformat()
              if self.ts_us is not None else None)
        return {"kind": self.kind, "source": self.source, "line_no": self.line_no, "ts": ts,
                "engine": self.engine, "text": self.text}


@dataclass
class EvidenceLog:
    scanned_to: int  # absolute us: lines up to here have been considered
    rows: list[Quote] = field(default_factory=list)
    events: list[Quote] = field(default_factory=list)

    dicts: list[dict[str, Any]] | None = None  # as_dict() of events + rows, until they change

    def as_dicts(self) -> list[dict[str, Any]]:
        if self.dicts is None:
            self.dicts = [q.as_dict() for q in self.events + self.rows]
        return [dict(d) for d in self.dicts]


def stats_text(engine: int, values: dict[str, float]) -> str:
    parts = []
    for name, v in values.items():
        pre, post = _LABELS[name]
        shown = "n/a" if v != v else (
            f"{v:.0f}" if name in ("running", "waiting", "preemptions", "deferred", "frontend_inflight",
                                   "frontend_queued", "requests_ok", "requests_failed")
            else f"{v:.3f}" if name in ("ttft_s", "itl_s", "ttft_p99_s", "itl_p99_s") else f"{v:.1f}")
        parts.append(f"{pre}{shown}{post}")
    return f"Engine {engine:03d}: " + ", ".join(parts)


def collect(rule: Rule, ctx: Ctx, firing: list[tuple[int, EvidenceLog]]) -> None:
    """Extend the logs of the firing instances (index in ctx's layout, log) up to now."""
    lay = ctx.lay
    if not firing or lay.kind == "deployment":
        return
    limit = rule.evidence.limit
    now_abs = ctx.now + lay.t0
    rank = rule.evidence.rank
    want_rows = [(i, log) for i, log in firing if rank is not None or len(log.rows) < limit]
    if want_rows and rule.quoted_fields():
        _collect_rows(rule, ctx, want_rows, limit)
    kinds = rule.quoted_events()
    for i, log in firing:
        if kinds and len(log.events) < limit:
            _collect_events(ctx, i, log, kinds, limit)
        log.scanned_to = max(log.scanned_to, now_abs)


def _collect_rows(rule: Rule, ctx: Ctx, firing: list[tuple[int, EvidenceLog]], limit: int) -> None:
    lay = ctx.lay
    lo = np.full(ctx.n, float(ctx.now))
    for i, log in firing:
        lo[i] = log.scanned_to - lay.t0
    sel = ctx.select_between(lo, ctx.now)
    if not sel.total:
        return
    rctx = ctx.rows(sel)
    keep = np.ones(sel.total, dtype=bool)
    if rule.evidence.rows is not None:
        keep = broadcast(to_num(ev(rule.evidence.rows.root, rctx)), sel.total) == 1.0
    score = (broadcast(to_num(ev(rule.evidence.rank.root, rctx)), sel.total)
             if rule.evidence.rank is not None else np.zeros(sel.total))
    score = np.where(np.isnan(score), -np.inf, score)
    fields = rule.quoted_fields()
    for i, log in firing:
        a, b = sel.off[i], sel.off[i] + sel.cnt[i]
        picked = np.flatnonzero(keep[a:b]) + a
        if not len(picked):
            continue
        # Best score first, then earliest; keep at most ``limit`` new candidates.
        order = np.lexsort((sel.idx[picked], -score[picked]))[:limit]
        rows = sel.idx[picked[order]]
        values = {f: lay.gather(f, rows) for f in fields}
        for j, r in enumerate(rows.tolist()):
            src, line, eng, ts = lay.row_meta(r)
            text = stats_text(eng, {f: float(values[f][j]) for f in fields})
            log.rows.append(Quote("stats", src, line, ts, eng, text, float(score[picked[order[j]]])))
        log.rows.sort(key=lambda q: (-q.score, q.ts_us))
        del log.rows[limit:]
        log.dicts = None


def _collect_events(ctx: Ctx, i: int, log: EvidenceLog, kinds: tuple[str, ...], limit: int) -> None:
    lay = ctx.lay
    add_event_quotes(log, lay, i, kinds, limit, max(log.scanned_to - lay.t0, -1), ctx.now)


def add_event_quotes(log: EvidenceLog, lay: Layout, i: int, kinds: tuple[str, ...], limit: int, lo: int,
                     hi: int) -> None:
    """Instance ``i``'s events of ``kinds`` after relative time ``lo`` up to ``hi``, in time order,
    added to ``log`` up to ``limit`` quotes (the step engine's and the sweep's one way)."""
    evs = lay.events
    base = i * lay.span
    found: list[Quote] = []
    for kind in kinds:
        idx = lay.event_index(kind)
        a = np.searchsorted(idx.keys, base + min(lo, lay.span - 1), side="right")
        b = np.searchsorted(idx.keys, base + min(max(hi, -1), lay.span - 1), side="right")
        for p in idx.rows[a:min(b, a + limit)]:
            g = evs.engine[p]
            text = evs.text[p] if isinstance(evs.text[p], str) else ""
            found.append(Quote(kind, str(evs.source[p]), int(evs.line_no[p]), int(evs.ts[p] + lay.t0),
                               None if g != g else int(g), text[:_TEXT_MAX]))
    found.sort(key=lambda q: (q.ts_us, q.source, q.line_no))
    # One line, one quote: a traceback ending in an OOM is the same line as the OOM event.
    seen = {(q.source, q.line_no) for q in log.events}
    found = [q for q in found if (q.source, q.line_no) not in seen and not seen.add((q.source, q.line_no))]
    if found:
        log.events.extend(found[:limit - len(log.events)])
        log.dicts = None


def lookback_us(rule: Rule, ctx: Ctx) -> np.ndarray:
    """How far before the condition began its evidence can lie: the widest window."""
    iv = ctx.interval_us()
    widest = iv * 3  # last(x) without a window looks back 3 samples
    for e in (rule.expr, rule.when):
        if e is None:
            continue
        for w in e.windows():
            if isinstance(w, Lit):
                widest = np.maximum(widest, float(w.value) * 1e6)
            elif isinstance(w, Samples):
                widest = np.maximum(widest, iv * w.count)
    return widest

