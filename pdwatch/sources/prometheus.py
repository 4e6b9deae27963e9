"""A Prometheus server as a source: ``prom+http://HOST:PORT[/prefix][?match={...}]`` (or ``prom+https://``).

pdwatch reads from the server the series it reads from a ``/metrics`` page (the names of
``pdwatch.parsers.exposition.WANTED``: vLLM's and a Dynamo frontend's), and hands them on
as one ``SampleBlock`` per scrape of each target, which ``events.stream`` turns into
``stats`` events with the same code as a scrape (counters become rates there).

- Finished runs (``report``, ``replay``, ``parse``) read ``--since``/``--until`` through
  ``/api/v1/query_range``, in chunks of at most ``MAX_POINTS`` points (and 10,000 per series,
  under Prometheus's 11,000), so a long range never asks the server or this process for
  more than that at once. The step is ``--step``, else the scrape interval read from the
  server's raw samples, so each scrape is read once.
- ``watch`` reads the last ``--since`` (default 5 minutes) that way, then polls
  ``/api/v1/query`` every ``interval`` seconds.

Beside the values pdwatch asks for ``max by (job, instance) (timestamp(...))`` (one metric
name after the other, joined by ``or``): each target's scrape time. A step that finds the scrape of the step before is skipped (a step
shorter than the scrape interval, or a target gone without staleness markers, reads the
same samples again), and the events carry the scrape's own time, as a scrape pdwatch made
itself would.

A target is ``(job, instance)``. Its events are named by the server and the labels all its
series share (``prom+http://prom:9090{instance="node7:8000",job="vllm"}``), and carry those
labels (``SampleBlock.labels``, then ``Event.labels``): the deployment model names the
endpoint after ``instance`` (``target_name``) and a topology's ``prom:`` selector matches
those labels, never reading them back out of the name. A ``role`` label, Dynamo's
``worker_type`` or ``dynamo_component`` (``prefill``; ``backend`` is decode beside a
``prefill`` component of its namespace) give the role.
"""

from __future__ import annotations

import math
import queue
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterator
from urllib.parse import parse_qs, unquote, urlsplit

from pdwatch.units import fmt_span, parse_duration

from .prom_api import PromClient, PromError
from .promql import Matcher, SelectorError, labels_text, parse_selector, render
from .records import Labels, SampleBlock, SourceNotice

SCHEMES = ("prom+http://", "prom+https://")
TARGET_LABELS = ("job", "instance")
# Labels that tell series of one target apart rather than name the target.
_SERIES_LABELS = frozenset({"engine", "model_name", "model", "source", "le", "quantile", "__name__"})
MAX_POINTS = 200_000  # points (series x steps) per query_range: a few MB of JSON per chunk
MAX_STEPS = 10_000  # per series and query; Prometheus refuses more than 11,000
DEFAULT_WATCH_SINCE = "5m"
_STAMP_FIRST = ("vllm:num_requests_running", "dynamo_frontend_requests_total")
DEFAULT_STEP_S = 15.0
_QUEUE_ITEMS = 20_000

Item = SampleBlock | SourceNotice


def is_prom(arg: str) -> bool:
    return arg.lower().startswith(SCHEMES)


# -- the argument ---------------------------------------------------------------------------
@dataclass(frozen=True)
class PromSpec:
    base: str  # http(s)://host:port[/prefix], no credentials
    display: str  # prom+http(s)://host:port[/prefix]: what messages and source names say
    matchers: tuple[Matcher, ...]
    selector_text: str  # as given, or ""
    auth: tuple[str, str] | None = None

    @property
    def name(self) -> str:
        return self.display + (f"?match={self.selector_text}" if self.selector_text else "")


def parse_prom(arg: str) -> PromSpec:
    """``prom+http://[user:pass@]host:port[/prefix][?match={...}]``; ValueError says what is wrong."""
    scheme, sep, rest = arg.partition("://")
    if not sep or scheme.lower() not in ("prom+http", "prom+https"):
        raise ValueError(f"{arg!r}: expected prom+http://HOST:PORT or prom+https://HOST:PORT")
    # The selector may come unencoded ({job="vllm"} in quotes on a shell line): take it before urlsplit.
    head, qsep, query = rest.partition("?")
    parts = urlsplit(f"http://{head}")
    if not parts.hostname:
        raise ValueError(f"{arg!r}: expected prom+http://HOST:PORT")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{arg!r}: bad port") from None
    http = scheme.lower().removeprefix("prom+")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    netloc = host + (f":{port}" if port else "")
    prefix = parts.path.rstrip("/")
    auth = (unquote(parts.username), unquote(parts.password or "")) if parts.username else None
    selector_text = ""
    if qsep:
        params = parse_qs(query, keep_blank_values=True)
        unknown = sorted(set(params) - {"match", "match[]"})
        if unknown:
            raise ValueError(f"{arg!r}: unknown parameter {unknown[0]!r} (only match={{...}} is read)")
        given = params.get("match", []) + params.get("match[]", [])
        if len(given) != 1 or not given[0].strip():
            raise ValueError(f"{arg!r}: give one selector: ?match={{job=\"vllm\"}}")
        selector_text = given[0].strip()
    try:
        matchers = parse_selector(selector_text) if selector_text else ()
    except SelectorError as exc:
        raise ValueError(f"{scheme}://{netloc}{prefix}: bad selector: {exc}") from None
    return PromSpec(f"{http}://{netloc}{prefix}", f"prom+{http}://{netloc}{prefix}", matchers, selector_text, auth)


# -- targets: how events name a target (for people), and what its labels say (for the model) ------
def target_source(display: str, labels: Mapping[str, str]) -> str:
    """A target's source name: its server and its labels (``prom+http://p:9090{instance="...",job="..."}``).
    What people read; the deployment model reads the labels themselves (``SampleBlock.labels``)."""
    return display + labels_text(dict(labels))


def target_name(labels: Mapping[str, str]) -> str:
    """The endpoint a target stands for: its ``instance`` (else ``job``), as a URL's is host:port."""
    return labels.get("instance") or labels.get("job") or labels_text(dict(labels))


def target_port(labels: Mapping[str, str]) -> int | None:
    """The port in a target's ``instance`` (host:port), to join it to a log that says its port."""
    try:
        return urlsplit(f"http://{labels.get('instance', '')}").port
    except ValueError:
        return None


_ROLE_WORDS = {"prefill": "prefill", "decode": "decode", "aggregated": "aggregated", "agg": "aggregated",
               "frontend": "frontend"}


def role_from_labels(labels: dict[str, str], prefill_namespaces: frozenset[str] = frozenset()
                     ) -> tuple[str, str] | None:
    """(role, the label that said so), from a ``role`` label, Dynamo's ``worker_type``, or its
    ``dynamo_component`` (``backend`` is decode where its namespace also has a ``prefill`` one)."""
    for key in ("role", "worker_type"):
        role = _ROLE_WORDS.get(labels.get(key, "").lower())
        if role:
            return role, f'label {key}="{labels[key]}"'
    component = labels.get("dynamo_component", "").lower()
    if component in ("prefill", "decode"):
        return component, f'label dynamo_component="{labels["dynamo_component"]}"'
    if component == "backend" and labels.get("dynamo_namespace", "") in prefill_namespaces:
        return "decode", 'label dynamo_component="backend" beside a prefill component'
    return None


# -- time ---------------------------------------------------------------------------------------------
def parse_when(text: str, now: float, what: str) -> float:
    """A time for ``--since``/``--until``: a duration back from now (``30m``), ``now``, ISO 8601
    (``2026-12-02T03:16:00Z``; without a zone: UTC) or seconds since the epoch."""
    value = text.strip()
    if value.lower() == "now":
        return now
    duration = parse_duration(value)
    if duration is not None:
        return now - duration
    try:
        return float(value) if re.fullmatch(r"\d{9,}(?:\.\d+)?", value) else _iso(value)
    except ValueError:
        raise ValueError(f"{what} {text!r}: expected a duration back from now (30m, 2h), an ISO 8601 time "
                         f"(2026-12-02T03:16:00Z) or now") from None


def _iso(value: str) -> float:
    ts = datetime.fromisoformat(value.replace("z", "Z"))
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=timezone.utc)
    return ts.timestamp()


def _utc(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)


def fmt_time(epoch: float) -> str:
    return _utc(epoch).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class PromOptions:
    """The command line's ``--since``, ``--until`` and ``--step`` (text, checked when a source opens)."""

    since: str | None = None
    until: str | None = None
    step: str | None = None


# -- the source -----------------------------------------------------------------------------------------
@dataclass
class _Target:
    source: str
    labels: Labels  # those all its series share: what ``source`` renders
    role: tuple[str, str] | None
    scrapes: int = 0
    last_scrape: float | None = None
    told_role: bool = False


@dataclass
class _Plan:
    start: float
    end: float
    step: float
    chunk_steps: int
    next_start: float = field(init=False)

    def __post_init__(self) -> None:
        self.next_start = self.start


class PrometheusSource:
    """One ``prom+http(s)://`` argument. Opening it checks the server, the selector and (for a
    finished run) that the range holds series: a ``PromError`` (exit 2, one line) otherwise."""

    def __init__(self, arg: str, *, follow: bool, options: PromOptions | None = None, interval: float = 2.0,
                 timeout: float = 60.0, clock: Callable[[], float] = time.time) -> None:
        from pdwatch.parsers.exposition import WANTED  # prometheus_client: only when a server is named

        try:
            self.spec = parse_prom(arg)
        except ValueError as exc:
            raise PromError(str(exc), "bad_data") from None
        self.name = self.spec.name
        self.follow = follow
        self.interval = interval
        self.options = options or PromOptions()
        self.client = PromClient(self.spec.base, self.spec.display, timeout=timeout, auth=self.spec.auth)
        self._clock = clock
        names = "|".join(sorted(WANTED))
        self.selector = render((*self.spec.matchers, Matcher("__name__", "=~", names)))
        # Each target's scrape time: timestamp() reads it only from a plain selector (of a function's
        # result it gives the evaluation time) and drops the metric name, so one name at a time.
        ordered = sorted(WANTED, key=lambda n: (n not in _STAMP_FIRST, n))
        self.stamp_query = " or ".join(
            f"max by (job, instance) (timestamp({render((*self.spec.matchers, Matcher('__name__', '=', n)))}))"
            for n in ordered)
        self._targets: dict[tuple[str, str], _Target] = {}
        self._prefill_namespaces: frozenset[str] = frozenset()
        self.up: bool | None = None
        self._cause: str | None = None  # the cause of the failure told last, while down
        self.points = 0
        self.queries = 0
        self.at_eof = False
        self._pending: list[Item] = []
        self._plan: _Plan | None = None
        self._queue: queue.Queue[Item] = queue.Queue(_QUEUE_ITEMS)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        now = clock()
        if follow:
            self._open_follow(now)
        else:
            self._open_range(now)

    # -- opening ---------------------------------------------------------------------------------
    def _range(self, now: float, default_since: str | None) -> tuple[float, float]:
        since = self.options.since or default_since
        if since is None:
            raise PromError(f"{self.name}: a Prometheus source reads a time range: give --since "
                            f"(e.g. --since 30m, or a time) and optionally --until", "usage")
        try:
            start = parse_when(since, now, "--since")
            end = parse_when(self.options.until, now, "--until") if self.options.until else now
        except ValueError as exc:
            raise PromError(str(exc), "usage") from None
        if not start < end:
            raise PromError(f"--since {since} is not before --until {self.options.until or 'now'} "
                            f"({fmt_time(start)} >= {fmt_time(end)})", "usage")
        return start, end

    def _series(self, start: float, end: float) -> list[dict[str, str]]:
        try:
            return self.client.series(self.selector, start, end)
        except PromError as exc:
            if exc.kind == "bad_data":
                reason = str(exc).split("(bad_data: ", 1)[-1].rstrip(")")
                raise PromError(f"{self.name}: bad selector {self.spec.selector_text or '(none)'}: {reason}",
                                "bad_data") from None
            raise

    def _open_range(self, now: float) -> None:
        start, end = self._range(now, None)
        series = self._series(start, end)
        if not series:
            raise PromError(self._empty_message(start, end), "empty")
        self._learn_targets(series)
        step = self._step(series, start, end)
        per_chunk = max(1, min(MAX_STEPS, MAX_POINTS // (len(series) + len(self._targets))))
        first = math.ceil(start / step) * step
        if first > end:
            first = end
        self._plan = _Plan(first, end, step, per_chunk)
        span = f"{fmt_time(start)} to {fmt_time(end)}"
        self._pending.append(SourceNotice(self.name, "opened",
                                          f"{self.name}: {len(series)} series of {len(self._targets)} target(s), "
                                          f"{span} every {step:g} s"))
        self.up = True

    def _open_follow(self, now: float) -> None:
        start, end = self._range(now, DEFAULT_WATCH_SINCE)
        series = self._series(start, end)  # reachable, and the selector is good
        self._learn_targets(series)
        step = self._step(series, start, end) if series else DEFAULT_STEP_S
        first = math.ceil(start / step) * step
        self._plan = _Plan(min(first, end), end, step, max(1, min(MAX_STEPS, MAX_POINTS // max(1, len(series)))))
        self.up = True
        note = (f"{self.name}: {len(self._targets)} target(s); reading the last {fmt_span(end - start)}, "
                f"then asking every {self.interval:g} s") if series else \
            f"{self.name}: no series match yet ({self._what()}); asking every {self.interval:g} s"
        self._pending.append(SourceNotice(self.name, "info", note))  # a watch shows it (not an "opened")

    def _what(self) -> str:
        sel = f" matching {self.spec.selector_text}" if self.spec.selector_text else ""
        return f"no vllm: or dynamo_frontend_ series pdwatch reads{sel}"

    def _empty_message(self, start: float, end: float) -> str:
        return f"{self.name}: {self._what()} between {fmt_time(start)} and {fmt_time(end)}"

    def _step(self, series: list[dict[str, str]], start: float, end: float) -> float:
        if self.options.step:
            step = parse_duration(self.options.step)
            if step is None or step <= 0:
                raise PromError(f"--step {self.options.step}: expected a duration such as 10s", "usage")
            return max(step, 0.001)
        return self._scrape_interval(series, start, end)

    def _scrape_interval(self, series: list[dict[str, str]], start: float, end: float) -> float:
        """The targets' scrape interval, from the raw samples of their most common series
        over (at most) the last 10 minutes of the range: the smallest median spacing."""
        counts: dict[str, int] = {}
        for s in series:
            counts[s.get("__name__", "")] = counts.get(s["__name__"], 0) + 1
        name = max(counts, key=lambda n: (counts[n], n))
        window = int(min(600.0, max(end - start, 1.0)))
        expr = render((*self.spec.matchers, Matcher("__name__", "=", name))) + f"[{window}s]"
        try:
            data = self.client.query(expr, end)
        except PromError as exc:
            if exc.kind in ("unreachable", "limit"):
                raise
            return DEFAULT_STEP_S  # a store that cannot give raw samples: a common scrape interval
        gaps: list[float] = []
        for s in data.get("result", []) if isinstance(data, dict) else []:
            stamps = [float(t) for t, _ in s.get("values", [])]
            diffs = sorted(b - a for a, b in zip(stamps, stamps[1:]) if b > a)
            if diffs:
                gaps.append(diffs[len(diffs) // 2])
        return round(min(gaps), 3) if gaps else DEFAULT_STEP_S

    def _learn_targets(self, series: list[dict[str, str]]) -> None:
        """Name each target (job, instance) after the labels all its series share."""
        by_target: dict[tuple[str, str], list[dict[str, str]]] = {}
        for s in series:
            by_target.setdefault(_key(s), []).append(s)
        self._prefill_namespaces = self._prefill_namespaces | frozenset(
            s.get("dynamo_namespace", "") for s in series if s.get("dynamo_component", "").lower() == "prefill")
        for key, group in by_target.items():
            if key not in self._targets:
                self._targets[key] = self._new_target(group)

    def _new_target(self, group: list[dict[str, str]]) -> _Target:
        common = {k: v for k, v in group[0].items() if k not in _SERIES_LABELS}
        for s in group[1:]:
            common = {k: v for k, v in common.items() if s.get(k) == v}
        roles = [r for r in (role_from_labels(s, self._prefill_namespaces) for s in group) if r is not None]
        labels = Labels(common)
        return _Target(target_source(self.spec.display, labels), labels, roles[0] if roles else None)

    # -- reading ----------------------------------------------------------------------------------
    @property
    def targets(self) -> list[str]:
        return sorted(t.source for t in list(self._targets.values()))  # list(): the watch thread adds to it

    @property
    def target_labels(self) -> dict[str, Labels]:
        """Each target's labels, by its source name (what a topology's ``prom:`` selectors match)."""
        return {t.source: t.labels for t in list(self._targets.values())}

    def progress(self) -> str | None:
        plan = self._plan
        if plan is None or self.at_eof or plan.end <= plan.start:
            return None
        done = min(1.0, max(0.0, (plan.next_start - plan.start) / (plan.end - plan.start)))
        return (f"{self.name}: {100 * done:.0f}% of {fmt_span(plan.end - plan.start)} read "
                f"({self.queries} queries, {self.points:,} points, {self.client.bytes_read / 1e6:.1f} MB)")

    def start(self) -> None:
        if self.follow and self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"pdwatch {self.name}", daemon=True)
            self._thread.start()

    def close(self) -> None:
        self._stop.set()

    def poll(self) -> list[Item]:
        out, self._pending = self._pending, []
        if self.follow:
            self.start()
            while True:
                try:
                    out.append(self._queue.get_nowait())
                except queue.Empty:
                    return out
        if not self.at_eof:
            out += self._next_chunk()
        return out

    def _next_chunk(self) -> list[Item]:
        plan = self._plan
        assert plan is not None
        if plan.next_start > plan.end:
            self.at_eof = True
            return []
        start = plan.next_start
        end = min(plan.end, start + (plan.chunk_steps - 1) * plan.step)
        plan.next_start = end + plan.step
        items = self._read(start, end, plan.step)
        if plan.next_start > plan.end:
            self.at_eof = True
        return items

    def _read(self, start: float, end: float, step: float) -> list[Item]:
        values = self.client.query_range(self.selector, start, end, step)
        stamps = self.client.query_range(self.stamp_query, start, end, step)
        self.queries += 2
        rows: dict[tuple[str, str], dict[float, list[tuple[str, dict[str, str], float]]]] = {}
        fresh: list[dict[str, str]] = []
        for series in _result(values):
            labels = series.get("metric", {})
            name = labels.get("__name__")
            if name is None:
                continue
            key = _key(labels)
            if key not in self._targets:
                fresh.append(labels)
            target_rows = rows.setdefault(key, {})
            points = series.get("values", [])
            self.points += len(points)
            for t, v in points:
                target_rows.setdefault(float(t), []).append((name, labels, _float(v)))
        if fresh:
            self._learn_targets(fresh)
        scraped: dict[tuple[str, str], dict[float, float]] = {}
        for series in _result(stamps):
            scraped[_key(series.get("metric", {}))] = {float(t): float(v) for t, v in series.get("values", [])}
        return self._blocks(rows, scraped)

    def _blocks(self, rows: dict[tuple[str, str], dict[float, list]], scraped: dict[tuple[str, str], dict[float, float]]
                ) -> list[Item]:
        """One block per new scrape of each target, in time order (targets in name order at a time)."""
        stamped: list[tuple[float, str, tuple[str, str], list]] = []
        for key, by_time in rows.items():
            target = self._targets[key]
            when = scraped.get(key, {})
            for t in sorted(by_time):
                ts = when.get(t, t)  # no scrape time (no timestamp series): the step's time
                if target.last_scrape is not None and ts <= target.last_scrape:
                    continue  # the scrape of an earlier step, read again
                target.last_scrape = ts
                stamped.append((ts, target.source, key, by_time[t]))
        stamped.sort(key=lambda x: (x[0], x[1]))
        out: list[Item] = []
        for ts, source, key, samples in stamped:
            target = self._targets[key]
            target.scrapes += 1
            role = None
            if not target.told_role:
                target.told_role, role = True, target.role
            out.append(SampleBlock(source, target.scrapes, _utc(ts), samples, role, target.labels))
        return out

    def _instant(self, at: float) -> list[Item]:
        values = self.client.query(self.selector, at)
        stamps = self.client.query(self.stamp_query, at)
        self.queries += 2
        rows: dict[tuple[str, str], dict[float, list]] = {}
        fresh: list[dict[str, str]] = []
        for series in _result(values):
            labels = series.get("metric", {})
            name = labels.get("__name__")
            value = series.get("value")
            if name is None or not value:
                continue
            key = _key(labels)
            if key not in self._targets:
                fresh.append(labels)
            rows.setdefault(key, {}).setdefault(at, []).append((name, labels, _float(value[1])))
            self.points += 1
        if fresh:
            self._learn_targets(fresh)
        scraped = {_key(s.get("metric", {})): {at: _float(s["value"][1])} for s in _result(stamps) if s.get("value")}
        return self._blocks(rows, scraped)

    def _run(self) -> None:
        """Follow mode: the recent past in chunks, then an instant query every interval."""
        try:
            while not self.at_eof and not self._stop.is_set():
                for item in self._next_chunk():
                    self._put(item)
        except PromError as exc:
            self._down(exc)
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                items = self._instant(self._clock())
                if self.up is False:
                    self._put(SourceNotice(self.name, "up", f"{self.name}: reachable again"))
                self.up, self._cause = True, None
                for item in items:
                    self._put(item)
            except PromError as exc:
                self._down(exc)
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - began)))

    def _down(self, exc: PromError) -> None:
        """Tell a failure when the server goes down, and again when the cause changes (a 502 from
        a proxy, then nothing listening); never twice for the same cause."""
        if self.up is not False or exc.cause != self._cause:
            self._put(SourceNotice(self.name, "down", f"{exc}; retrying every {self.interval:g} s"))
        self.up, self._cause = False, exc.cause

    def _put(self, item: Item) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.5)
                return
            except queue.Full:
                continue


def _key(labels: dict[str, str]) -> tuple[str, str]:
    return labels.get("job", ""), labels.get("instance", "")


def _result(data: Any) -> list[dict[str, Any]]:
    result = data.get("result") if isinstance(data, dict) else None
    return result if isinstance(result, list) else []


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def iter_blocks(source: PrometheusSource) -> Iterator[Item]:
    """Every item of a finished-range source (tests and tools)."""
    while not source.at_eof:
        yield from source.poll()
    yield from source.poll()
