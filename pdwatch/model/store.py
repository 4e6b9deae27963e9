"""Per-endpoint time series (pandas), fed with events in batches, read as rule views.

Rows are buffered as plain tuples and turned into DataFrames only on ``flush`` (a tick
of the dashboard, the end of a replay): appending to a DataFrame per line would copy it
every time.
"""

from __future__ import annotations

import copy
import dataclasses
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable

import numpy as np
import pandas as pd

from pdwatch.parsers import Event
from pdwatch.model.log_facts import fold as learn_facts
from pdwatch.model.deployment import DeploymentModel, Endpoint
from pdwatch.model.frontend_losses import Attribution, attribute
from pdwatch.model.line_book import LineBook, text_crc
from pdwatch.model.retention import MARGIN_S, Retention, older_than_kept, per_minute, stamps_ns
from pdwatch.sources.discovery import evidence_source
from pdwatch.model.partial import (_KEPT_EVENT_KINDS, _MODEL_KINDS, GENERIC_KINDS, NO_TIME, UNSTORED_KINDS,  # noqa: F401
                                   Partial, StatsColumns, fold_events)
from pdwatch.rules.model import STATS_FIELDS, DeploymentView, EndpointView

# ``text`` is None for a log line read back from its file when quoted (``line_book``), ``crc`` says which
_STATS_COLUMNS = ("ts", "engine", *STATS_FIELDS, "source", "line_no", "text", "crc")
_EVENT_COLUMNS = ("ts", "engine", "kind", "source", "line_no", "text", "reason")
@dataclass
class _Series:
    stats_new: list[StatsColumns] = field(default_factory=list)  # merged since the last flush
    event_rows: list[tuple] = field(default_factory=list)
    stats: pd.DataFrame = field(default_factory=lambda: _empty(_STATS_COLUMNS))
    events: pd.DataFrame = field(default_factory=lambda: _empty(_EVENT_COLUMNS))
    last_ts: datetime | None = None  # a pd.Timestamp only when asked: not one per event
    # The text ring of rows that cannot be read back (``KEPT_TEXT_ROWS``): rows kept with their
    # text, and the row up to which older ones have had it dropped.
    text_rows: int = 0
    text_dropped_upto: int = 0
    event_text_rows: int = 0
    event_text_dropped_upto: int = 0
    # A long watch (``Store.retention``): stats rows older than the kept span, one per engine and
    # minute; frequent events older than it, counted by kind; when to look for old rows again.
    minutes: pd.DataFrame | None = None
    retired_events: dict[str, int] = field(default_factory=dict)
    next_retire_ns: int = 0
    version: int = 0  # the store's change count when a frame of this series was last replaced


def _empty(columns: Iterable[str]) -> pd.DataFrame:
    # The same frame as one empty object Series a column, in a fifth of the time (~0.3 ms against
    # ~1.8 for the stats columns): every endpoint's series starts with two of them.
    return pd.DataFrame(columns=list(columns), dtype=object)


# Stats rows from sources that cannot be read back (stdin, an ssh log, a URL's /metrics) keep their
# text, the newest KEPT_TEXT_ROWS of an endpoint's only (issue 34: a week's watch over ssh would
# keep every line); an older one is quoted by line number with a sentence saying its text is gone.
KEPT_TEXT_ROWS = 4096


def text_gone(source: str, line_no: int) -> str:
    return f"line {line_no} of {source} (its text is no longer kept: the last {KEPT_TEXT_ROWS} lines of each endpoint are)"


# Kept event kinds a log writes on every stats interval (a run's length in lines, like its stats
# lines): from a file, their text is read back when quoted, not kept (issue 34).
REFERENCED_EVENT_KINDS = frozenset({"kv_transfer", "spec_decode"})


def searched_kinds(rules: Iterable[Any]) -> frozenset[str]:
    """The event kinds whose line text the rules search (``count_matching``): the store keeps it."""
    return frozenset(kind for rule in rules for kind in rule.searched_kinds())


class Store:
    def __init__(self, model: DeploymentModel | None = None, searched_kinds: Iterable[str] = ()) -> None:
        self.model = model or DeploymentModel()
        # Kinds whose text the rules search (``count_matching``): their text is kept.
        self.referenced_kinds = REFERENCED_EVENT_KINDS - frozenset(searched_kinds)
        self._series: dict[str, _Series] = {}
        self.deployment_facts: dict[str, Any] = {}
        self.raw_counts: dict[str, int] = {}
        self._line_memo: OrderedDict[tuple[str, int], str | None] = OrderedDict()  # newest _LINE_MEMO
        self.lines = LineBook()  # the stats lines' text, read back from their files when quoted
        self._servers: set[str] = set()  # endpoints with a line only a vLLM or Dynamo server writes
        self._losses = Attribution()  # frontend lines that may say a worker died, as they are decided
        # Sources of /metrics scrapes read from files (a replay's recorded scrapes): their rows
        # count as structure changes, as a URL's do (``changes_structure``).
        self.scrape_sources: frozenset[str] = frozenset()
        # A long watch's: rows older than the rules read are folded per minute (None: all kept).
        self.retention: Retention | None = None
        self.folds = 0  # times old rows were folded (the session then gives the freed memory back)
        self._changes = 0  # frames replaced so far: each series' ``version`` is a value of it

    # --- writing ----------------------------------------------------------------------------

    def add(self, events: Iterable[Event]) -> None:
        for part in fold_events(events):
            self.merge(part)

    def merge(self, part: Partial) -> None:
        """Add the events ``part`` folded, exactly as ``add`` of those events would.

        Parts must come in the order of their events (a worker's parts, file by file)."""
        if not part.count:
            return  # a source with no events is not an endpoint yet
        endpoint = self.model.endpoint_of(part.source, part.labels)
        series = self._series.get(endpoint.name)
        if series is None:  # not setdefault: building a _Series makes two DataFrames
            series = self._series[endpoint.name] = _Series()
        raw = self.raw_counts
        for kind, n in part.raw_counts.items():
            raw[kind] = raw.get(kind, 0) + n
        if endpoint.name not in self._servers and not part.raw_counts.keys() <= GENERIC_KINDS:
            self._servers.add(endpoint.name)
        if endpoint.role != "frontend":  # a frontend's rows (scrapes, requests) are not an engine's
            endpoint.engines |= part.engines
        rows = series.event_rows
        referenced = self.referenced_kinds if self.lines.can_read_back(part.source) else ()
        for event in part.kept:  # every event the model and the facts read is a kept one
            if event.__class__ is tuple:  # a kept event nothing else reads: its row already
                if event[2] in referenced and event[5].__class__ is str:  # its text: the CRC to read it back by
                    event = (*event[:5], text_crc(event[5]), event[6])
                rows.append(event)
                continue
            self.model.observe(event)
            learn_facts(endpoint.facts, event)  # the rules' facts plus what capacity needs
            # A traceback is quoted by its exception line (its text), so it is cited there too.
            line_no = event.end_line_no if event.kind == "traceback" and event.end_line_no else event.line_no
            rows.append((event.ts, event.engine, event.kind, event.source, line_no,
                         event.text, event.values.get("reason")))
        if len(part.stats):
            series.stats_new.append(part.stats)  # a log line's text already left out (fold_events)
        self.model.learned_from_lines(endpoint, part.raw_counts.keys(), bool(len(part.stats)))
        while self.model.absorbed:  # a log claimed an endpoint made of its URL: one endpoint, one series
            self._absorb(*self.model.absorbed.pop(0))
        if part.last_ts is not None and (series.last_ts is None or part.last_ts > series.last_ts):
            series.last_ts = part.last_ts  # the newest: a file's recorded scrapes come after its log

    def _absorb(self, old: str, into: str) -> None:
        gone = self._series.pop(old, None)
        if gone is None:
            return
        target = self._series.setdefault(into, _Series())
        self.flush()
        target.stats_new.append(_columns_of(gone.stats))
        target.stats_new.extend(gone.stats_new)
        target.event_rows.extend(tuple(r) for r in gone.events.itertuples(index=False, name=None))
        target.event_rows.extend(gone.event_rows)
        if gone.minutes is not None:
            target.minutes = per_minute(pd.concat([m for m in (target.minutes, gone.minutes) if m is not None],
                                                  ignore_index=True))
        for kind, n in gone.retired_events.items():
            target.retired_events[kind] = target.retired_events.get(kind, 0) + n
        if gone.last_ts is not None and (target.last_ts is None or gone.last_ts > target.last_ts):
            target.last_ts = gone.last_ts
        self._servers.discard(old)
        self._servers.add(into)

    def flush(self) -> None:
        self._flush_frames()
        # What the frontend saw of its workers goes to the workers it concerns (a death a dead
        # worker cannot log): on the frames just flushed, then flushed itself.
        lost = attribute(self._series, self.model.endpoints, self._losses, self._newest())
        for name, rows in lost.items():
            self._series[name].event_rows.extend(rows)
        if lost:
            self._flush_frames()

    def _newest(self) -> pd.Timestamp | None:
        stamps = [s.last_ts for s in self._series.values() if s.last_ts is not None]
        return pd.Timestamp(max(stamps)) if stamps else None

    def _flush_frames(self) -> None:
        for name, series in self._series.items():
            before = (series.stats, series.events, series.minutes)
            self._flush_series(name, series)
            # Frames are replaced, never changed in place (but for old rows' text): identity says what changed.
            if any(now is not was for now, was in zip((series.stats, series.events, series.minutes), before)):
                self._changes += 1
                series.version = self._changes

    def _flush_series(self, name: str, series: _Series) -> None:
        if series.stats_new:
            frame = _stats_frame(series.stats_new)
            old = series.stats
            if old.empty:
                series.stats = frame.sort_values("ts", kind="stable", ignore_index=True)
            elif frame.empty:
                pass
            elif frame["ts"].is_monotonic_increasing and frame["ts"].iloc[0] >= old["ts"].iloc[-1]:
                # The live case: new lines after the old ones. A stable sort would keep this order.
                series.stats = pd.concat([old, frame], ignore_index=True)
            else:
                series.stats = pd.concat([old, frame], ignore_index=True).sort_values(
                    "ts", kind="stable", ignore_index=True)
                series.text_dropped_upto = 0  # rows moved: look again from the first
            series.stats_new = []
            series.text_rows += int(frame["text"].notna().sum())
            self._learn_interval(self.model.endpoints[name], series.stats)
        if series.event_rows:
            frame = _events_frame(series.event_rows)
            series.events = frame if series.events.empty else pd.concat([series.events, frame], ignore_index=True)
            series.event_rows = []
            series.event_text_rows += int(frame["kind"].isin(self.referenced_kinds).sum())
        if max(series.text_rows, series.event_text_rows) > 2 * KEPT_TEXT_ROWS:  # amortised O(1) a row
            _drop_old_text(series, self.lines.can_read_back, self.referenced_kinds)
        if self.retention is not None and series.last_ts is not None:
            self._retire(self.model.endpoints[name], series)

    def _retire(self, endpoint: Endpoint, series: _Series) -> None:
        """A long watch: fold the stats rows older than the kept span into per-minute rows, count
        the frequent events older than it. Looked at once per ``MARGIN_S`` of log time (amortised)."""
        newest = pd.Timestamp(series.last_ts).value
        if newest < series.next_retire_ns:
            return
        series.next_retire_ns = newest + int(MARGIN_S * 1e9)
        kept_ns = int(self.retention.kept_s(endpoint.facts.get("stats_interval_s")) * 1e9)
        stats = series.stats
        if not stats.empty:
            old = older_than_kept(stamps_ns(stats["ts"]), stats["engine"].to_numpy(), kept_ns)
            if old.any():
                folded = per_minute(stats[old])
                series.minutes = folded if series.minutes is None else pd.concat(
                    [series.minutes, folded], ignore_index=True)
                self.folds += 1
                series.stats = stats[~old].reset_index(drop=True)
                series.text_dropped_upto = max(0, series.text_dropped_upto - int(np.count_nonzero(old[:series.text_dropped_upto])))
        events = series.events
        kinds = self.retention.retired_kinds
        if not events.empty and kinds:
            frequent = np.flatnonzero(events["kind"].isin(kinds).to_numpy() & events["ts"].notna().to_numpy())
            if len(frequent):
                stamps = stamps_ns(events["ts"].iloc[frequent])
                old = np.zeros(len(events), dtype=bool)
                old[frequent[stamps < stamps.max() - kept_ns]] = True
                if old.any():
                    for kind, n in events.loc[old, "kind"].value_counts().items():
                        series.retired_events[kind] = series.retired_events.get(kind, 0) + int(n)
                    series.events = events[~old].reset_index(drop=True)
                    series.event_text_dropped_upto = max(
                        0, series.event_text_dropped_upto - int(np.count_nonzero(old[:series.event_text_dropped_upto])))

    def drop_stats_from(self, name: str, sources: Iterable[str]) -> None:
        """Forget the stats rows of endpoint ``name`` that came from ``sources``: the scrapes that
        stood in for a log's stats lines until its first one came. Two sources of one engine at
        two cadences in one series would make its "N samples" windows and interval mean nothing."""
        series = self._series.get(name)
        drop = set(sources)
        if series is None or not drop:
            return
        series.stats_new = [columns.without_sources(drop) for columns in series.stats_new]
        if not series.stats.empty:
            series.stats = series.stats[~series.stats["source"].isin(drop)].reset_index(drop=True)
            self._changes += 1
            series.version = self._changes
        self.model.endpoints[name].facts.pop("stats_interval_s", None)
        self._learn_interval(self.model.endpoints[name], series.stats)

    # --- reading ----------------------------------------------------------------------------

    def endpoints(self) -> list[Endpoint]:
        """The deployment's endpoints: declared ones, and those whose logs show a server."""
        return sorted((e for e in self.model.endpoints.values() if self._is_endpoint(e)),
                      key=lambda e: (_ROLE_ORDER.get(e.role, 9), e.name))

    def not_servers(self) -> list[Endpoint]:
        """Sources read whose lines show no vLLM or Dynamo server (only tracebacks, access lines)."""
        return [e for e in self.model.endpoints.values() if not self._is_endpoint(e)]

    def _is_endpoint(self, endpoint: Endpoint) -> bool:
        if endpoint.role_from == "topology":  # declared: an endpoint once a source is its
            return bool(endpoint.sources)
        return endpoint.name in self._servers or endpoint.name not in self._series


    def spread_unknown(self, name: str, field: str, engine: int, after: Any, upto: Any, total: float) -> int:
        """Give ``total`` (a preemption counter's increase over (after, upto], from /metrics) to the
        lines of ``engine`` in that interval whose ``field`` the log left unknown; returns how many.

        vLLM 0.32's stats line prints no Preemptions while its /metrics count them: with the
        endpoint's scrapes beside its log, the lines learn them. The log cannot say which line
        had them, so they are shared evenly by the lines where one could happen: requests
        running with the cache at least 80% full (else every line with requests running);
        the others are known to have had none."""
        self.flush()
        series = self._series.get(name)
        if series is None or series.stats.empty:
            return 0
        frame = series.stats
        rows = ((frame["engine"] == engine) & (frame["ts"] > pd.Timestamp(after)) & (frame["ts"] <= pd.Timestamp(upto))
                & frame[field].isna())
        if not rows.any():
            return 0
        busy = rows & (frame["running"] > 0)
        full = busy & (frame["kv_usage_pct"] >= 80)
        share = full if full.any() else busy if busy.any() else rows  # the count is never dropped
        frame.loc[rows, field] = 0.0
        frame.loc[share, field] = total / int(share.sum())
        return int(rows.sum())

    def stats(self, name: str) -> pd.DataFrame:
        """The endpoint's stats rows at full resolution (a long watch's: the kept span only)."""
        return self._series[name].stats if name in self._series else _empty(_STATS_COLUMNS)

    def history(self, name: str) -> pd.DataFrame:
        """The endpoint's stats over the whole run: a long watch's per-minute rows (``lines`` > 1,
        no source) before its full-resolution ones; the same frame as ``stats`` when none were folded."""
        series = self._series.get(name)
        if series is None or series.minutes is None or series.minutes.empty:
            return self.stats(name)
        recent = series.stats.assign(lines=1)
        if recent.empty:  # the minutes' columns as a stats frame's (those never known left out)
            return series.minutes.reindex(columns=[*_STATS_COLUMNS, "lines"])
        return pd.concat([series.minutes, recent], ignore_index=True)

    def stats_line_count(self, name: str) -> int:
        """Stats lines the endpoint logged (folded ones included)."""
        series = self._series.get(name)
        if series is None:
            return 0
        frames = [f for f in (series.minutes, series.stats) if f is not None]  # a history's rows have ``lines``
        return sum(int(f["lines"].sum()) if "lines" in f.columns else len(f) for f in frames) \
            + sum(len(c.ts) for c in series.stats_new)

    def retired_events(self, name: str) -> dict[str, int]:
        """A long watch's frequent events no longer kept, counted by kind."""
        series = self._series.get(name)
        return dict(series.retired_events) if series is not None else {}

    def with_history(self) -> "Store":
        """This store with each endpoint's stats over the whole run (``history``): what an exported
        report shows of a long watch. Shares everything else; never evaluated by the rules."""
        if not any(s.minutes is not None for s in self._series.values()):
            return self
        self.flush()
        other = copy.copy(self)
        other._series = {name: dataclasses.replace(series, stats=self.history(name), minutes=None)
                         for name, series in self._series.items()}
        other.retention = None
        return other

    def events(self, name: str) -> pd.DataFrame:
        return self._series[name].events if name in self._series else _empty(_EVENT_COLUMNS)

    def line_text(self, source: str, line_no: int) -> str | None:
        """The original text of a kept line (a stats line, a kept event's), memoised: the same few
        lines are asked for on every dashboard tick, and each lookup would otherwise filter a whole
        frame. A log line's text is read back from its file (``line_book``): "the file has changed"
        when it is no longer the line that was read."""
        key = (source, line_no)
        memo = self._line_memo
        if key in memo:
            memo.move_to_end(key)
            return memo[key]
        name = self.model.endpoint_of(source).name
        text = None
        for frame in (self.stats(name), self.events(name)):
            kept = _kept_text(frame, source, line_no)
            if kept is not None:
                # A stats row keeps its CRC apart (its text None); an event row in place of its text.
                if isinstance(kept, str):
                    text = kept
                elif self.lines.can_read_back(source):
                    text = self.lines.text(source, line_no, kept)
                else:  # stdin, ssh, a URL: older than the text ring
                    text = text_gone(source, line_no)
                break
        memo[key] = text
        if len(memo) > _LINE_MEMO:
            memo.popitem(last=False)
        return text

    def quote(self, quote: dict[str, Any]) -> dict[str, Any]:
        """A rule's evidence quote as people read it: source, line and, for a stats line, its
        original wording (the rule engine keeps the fields it read)."""
        text = quote.get("text") or ""
        if quote.get("kind") == "stats" or not text:  # a kept event's text may be read back too
            text = self.line_text(quote["source"], quote["line_no"]) or text
        source = quote.get("source")
        # A raw_prometheus record (``FILE#decode_w0``) is shown as FILE and its line: one record a line.
        return {"source": evidence_source(source) if isinstance(source, str) else source,
                "line_no": quote.get("line_no"), "text": text}

    def version(self, name: str) -> int:
        """A number that changes whenever the endpoint's rows do (flushed, folded, dropped): what
        is derived from them alone can be kept until it changes. -1 for an endpoint with no rows."""
        series = self._series.get(name)
        return -1 if series is None else series.version

    def last_seen(self, name: str) -> pd.Timestamp | None:
        series = self._series.get(name)
        return pd.Timestamp(series.last_ts) if series and series.last_ts is not None else None

    def view(self) -> DeploymentView:
        self.flush()
        views = []
        for ep in self.endpoints():
            engines = tuple(sorted(ep.engines)) or (0,)  # a server with no DP rank in sight is one engine
            views.append(EndpointView(ep.name, ep.role, engines, ep.gpus, dict(ep.facts),
                                      self.stats(ep.name), self.events(ep.name)))
        return DeploymentView(tuple(views), dict(self.deployment_facts))

    def time_range(self) -> tuple[pd.Timestamp, pd.Timestamp] | None:
        starts, ends = [], []
        for name in self._series:
            frame = self.stats(name)
            if not frame.empty:
                starts.append(frame["ts"].iloc[0])
                ends.append(frame["ts"].iloc[-1])
        return (min(starts), max(ends)) if starts else None

    @staticmethod
    def _learn_interval(endpoint: Endpoint, frame: pd.DataFrame) -> None:
        # The median of each engine's spacing, in numpy: a live tick learns it for every
        # endpoint that got a line, and pandas' groupby cost ~1.5 ms a call.
        if len(frame) < 2:
            return
        gaps, _ = interval_gaps(frame)
        if len(gaps):
            endpoint.facts["stats_interval_s"] = float(np.median(gaps))

    def changes_structure(self, event: Event) -> bool:
        """Whether adding ``event`` may change more than the rows the rules read up to a time: the
        endpoints (a new source, a server's first line), an endpoint's engines, role, GPUs or
        facts, whether it has learned a stats interval yet. /metrics rows count as changes, as do
        kept events without a time. A replay evaluates the stretches of its
        clock between changes in one sweep."""
        if "://" in event.source or event.source in self.scrape_sources:
            return True
        endpoint = self.model.known(event.source)
        if endpoint is None:
            return True
        kind = event.kind
        if kind in _MODEL_KINDS or (endpoint.name not in self._servers and kind not in GENERIC_KINDS):
            return True
        if event.ts is None and kind in _KEPT_EVENT_KINDS:
            return True  # a kept event without a time counts from the start (count_events "so far")
        engine = event.engine
        if kind == "stats":
            if "stats_interval_s" not in endpoint.facts:
                return True
            engine = 0 if engine is None else engine
        elif kind in ("spec_decode", "kv_transfer"):
            return False  # kept, and their engine is not the endpoint's (DeploymentModel.observe)
        return engine is not None and engine not in endpoint.engines


def _text_ring(frame: pd.DataFrame, start: int, droppable) -> tuple[np.ndarray, int, int]:
    """Of ``frame``'s rows from ``start``, those ``droppable(text, source, kind)`` older than the
    newest KEPT_TEXT_ROWS such: their positions, where to look from next time, and how many such
    rows remain."""
    columns = [frame[c].to_numpy()[start:].tolist() for c in ("text", "source", "kind") if c in frame.columns]
    kept = np.flatnonzero([droppable(*row) for row in zip(*columns)]) + start
    if len(kept) <= KEPT_TEXT_ROWS:
        return kept[:0], (int(kept[0]) if len(kept) else len(frame)), len(kept)
    upto = int(kept[-KEPT_TEXT_ROWS])
    return kept[kept < upto], upto, KEPT_TEXT_ROWS


def _drop_old_text(series: _Series, readable, kinds: frozenset[str]) -> None:
    """Drop the text of the rows from sources that cannot be read back, before the newest
    KEPT_TEXT_ROWS of them: stats rows (a recorded scrape file's keep theirs: they have no other)
    and event rows of ``kinds`` (the kinds a file's rows keep as references)."""
    stats, events = series.stats, series.events
    if series.text_rows > 2 * KEPT_TEXT_ROWS:
        drop, series.text_dropped_upto, series.text_rows = _text_ring(
            stats, series.text_dropped_upto, lambda text, source: text.__class__ is str and not readable(source))
        stats.iloc[drop, stats.columns.get_loc("text")] = None  # its CRC says it was a log line
    if series.event_text_rows > 2 * KEPT_TEXT_ROWS:
        drop, series.event_text_dropped_upto, series.event_text_rows = _text_ring(
            events, series.event_text_dropped_upto,
            lambda text, source, kind: kind in kinds and text.__class__ is str and not readable(source))
        events.iloc[drop, events.columns.get_loc("text")] = -1  # gone (an int, as a file's CRC would be)


def _kept_text(frame: pd.DataFrame, source: str, line_no: int) -> str | int | None:
    """The text a frame keeps of ``source``'s line ``line_no`` (its last row of that line), or the
    CRC to read it back by; None when the frame has no such row."""
    if frame.empty:
        return None
    # The rows of that line number (numpy, on the int column), then their sources: comparing
    # every row's source string cost 5 ms a quote on a 1 GB log's 193k rows.
    rows = np.flatnonzero(frame["line_no"].to_numpy() == line_no)
    sources = frame["source"].to_numpy()[rows] if len(rows) else rows
    hit = [r for r, src in zip(rows.tolist(), sources.tolist()) if src == source]
    if not hit:
        return None
    text = frame["text"].iloc[hit[-1]]
    if isinstance(text, str):
        return text
    crc = frame["crc"].iloc[hit[-1]] if "crc" in frame.columns else text
    return int(crc) if crc is not None and crc == crc else None


_LINE_MEMO = 4096  # quoted lines remembered: a dashboard tick asks for the same few
_ROLE_ORDER = {"prefill": 0, "decode": 1, "aggregated": 2, "unknown": 3, "frontend": 4}


def interval_gaps(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each engine's positive spacing between consecutive stats lines (seconds), and the time of
    the later line of each (us since the epoch): the stats interval is their median."""
    engines = frame["engine"].to_numpy()
    stamps = stamps_ns(frame["ts"])
    order = np.argsort(engines, kind="stable")  # each engine's rows, in frame (time) order
    engines, stamps = engines[order], stamps[order]
    same = engines[1:] == engines[:-1]
    gaps = (np.diff(stamps) / 1e9)[same]
    later = stamps[1:][same] // 1000
    keep = gaps > 0
    return gaps[keep], later[keep]


def _stats_frame(chunks: list[StatsColumns]) -> pd.DataFrame:
    """Stats columns -> a frame, each column joined in one go (a live tick builds one per
    endpoint: the record-and-astype way cost ~5 ms for a single row)."""
    chunks = [c.seal() for c in chunks]
    ts = np.concatenate([c.ts for c in chunks]) if chunks else np.empty(0, dtype=np.int64)
    # The numbers go straight into the frame's one float block, a field a row (each column
    # contiguous, as pandas lays it out), without a copy: joining the chunks and then letting
    # DataFrame(dict) consolidate the columns had held two more copies of them at the peak of a
    # report (+47 MB for a 1 GB log's 193k lines).
    block = np.empty((len(STATS_FIELDS), len(ts)), dtype=np.float64)
    at = 0
    for c in chunks:
        block[:, at:at + len(c.values)] = c.values.T
        at += len(c.values)
    engine, line_no, crc = (np.concatenate([getattr(c, name) for c in chunks]) if chunks else np.empty(0, dtype=np.int64)
                            for name in ("engine", "line_no", "crc"))
    sources, text = ([x for c in chunks for x in getattr(c, name)] for name in ("sources", "text"))
    timeless = ts == NO_TIME
    if timeless.any():  # a stats line without a time cannot be placed
        keep = np.flatnonzero(~timeless)
        ts, block, engine, line_no, crc = ts[keep], block[:, keep], engine[keep], line_no[keep], crc[keep]
        sources, text = ([column[i] for i in keep] for column in (sources, text))
    # A line that does not print Preemptions leaves them unknown (NaN), not 0: vLLM 0.32 prints
    # none even while its /metrics count them.
    frame = pd.DataFrame(block.T, columns=list(STATS_FIELDS), copy=False)
    frame.insert(0, "ts", pd.Series(pd.DatetimeIndex(ts.view("datetime64[us]")).tz_localize("UTC")))
    frame.insert(1, "engine", engine)
    frame["source"] = pd.Series(sources)  # pandas infers its string dtype, as from records
    frame["line_no"] = line_no
    frame["text"] = pd.Series(text, dtype=object)
    frame["crc"] = crc
    return frame


def _columns_of(frame: pd.DataFrame) -> StatsColumns:
    """A stats frame back into columns (an endpoint absorbed into another)."""
    values = frame[list(STATS_FIELDS)].to_numpy(dtype=np.float64)
    # (an endpoint with no stats row yet has an empty frame whose ts column is no datetime column)
    ts = stamps_ns(frame["ts"]) // 1000 if len(frame) else np.empty(0, dtype=np.int64)
    return StatsColumns(frame["source"].tolist(), ts, frame["engine"].to_numpy(dtype=np.int64),
                        values.reshape(len(frame), len(STATS_FIELDS)), frame["line_no"].to_numpy(dtype=np.int64),
                        frame["text"].tolist(), frame["crc"].to_numpy(dtype=np.int64))


def _events_frame(rows: list[tuple]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(rows, columns=_EVENT_COLUMNS)
    frame["ts"] = pd.to_datetime(frame["ts"], utc=True)
    frame["engine"] = frame["engine"].astype("Int64")
    frame["line_no"] = frame["line_no"].astype("int64")
    # Objects, as a file's rows are (a CRC in place of a text): pandas would make an all-text column
    # strings, where an old line's text could not be replaced by the mark that it is gone.
    frame["text"] = frame["text"].astype(object)
    return frame
