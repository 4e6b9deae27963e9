"""``pdwatch watch`` (follow live logs) and ``pdwatch replay`` (play finished logs on their own clock).

Both open the dashboard on a terminal; with ``--headless``, or when stdout is not a
terminal, they print one line per finding as it fires and as it clears (``--jsonl``:
one JSON object per line).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import threading
import time
from typing import Callable, TextIO

from pdwatch.commands import SUMMARIES
from pdwatch.commands.common import add_deployment_arguments, add_prom_arguments, add_rules_argument, \
    add_scrape_interval_argument, add_time_arguments, check_year, deployment_specs, load_rule_set, prom_options, \
    time_zone
from pdwatch.commands.stopping import StopSignals, exit_status
from pdwatch.errors import NothingToJudge, UsageError, require_inputs, require_one_existing
from pdwatch.rules.findings import SEVERITIES
from pdwatch.session.live import LiveSession
from pdwatch.session.snapshot import Snapshot
from pdwatch.session.times import parse_speed, parse_start
from pdwatch.sources import SourceSet, is_prom
from pdwatch.units import parse_duration


def register(sub: argparse._SubParsersAction) -> None:
    watch = sub.add_parser(
        "watch", help=SUMMARIES["watch"],
        description="Follow the logs of a running deployment (files, globs, directories; new files and "
                    "rotations are picked up) and evaluate the rules as lines arrive.")
    _common(watch)
    add_scrape_interval_argument(watch)
    add_prom_arguments(watch, follow=True)
    watch.add_argument("--keep-full", metavar="DURATION",
                       help="log time each engine keeps line by line (default: what the rules read back, "
                            "their widest window and hold, plus 10m, at least 1h; never less than that); "
                            "older stats lines are kept as one row per engine and minute, for the charts "
                            "and the exported report")
    watch.set_defaults(run=run_watch, mode="watch")

    replay = sub.add_parser(
        "replay", help=SUMMARIES["replay"],
        description="Read finished logs and play them back on a clock driven by their timestamps: only "
                    "what was logged before the clock is visible, the rules fire when they would have live.")
    _common(replay)
    replay.add_argument("--speed", default="10x", metavar="N",
                        help="replay speed: 10x (default), 1x, 0.5x ... or max (as fast as possible)")
    replay.add_argument("--start", metavar="TIME",
                        help="start the clock at TIME: ISO 8601, HH:MM[:SS] (on the logs' day), or an offset "
                             "(+5m from the first timestamp, -2m from the last); what came before is played "
                             "at full speed")
    add_prom_arguments(replay)
    replay.set_defaults(run=run_replay, mode="replay")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH")
    parser.add_argument("--refresh", type=float, default=0.5, metavar="S",
                        help="seconds between two refreshes / rule evaluations (default 0.5)")
    parser.add_argument("--headless", action="store_true",
                        help="no dashboard: print one line per finding as it fires and clears")
    parser.add_argument("--jsonl", action="store_true",
                        help="headless lines as JSON: rule, severity, endpoint, engines, start, end, summary, "
                             "recommendation, state (firing/escalated/resolved), at")
    parser.add_argument("--metrics-port", type=int, metavar="PORT",
                        help="serve pdwatch's view as Prometheus metrics on this port (0: any free port)")
    parser.add_argument("--export", metavar="FILE",
                        help="where the dashboard's e key writes the Markdown report (default "
                             "./pdwatch-live-report.md, or the temp folder when . is a folder being read)")
    parser.add_argument("--metrics-bind", default="127.0.0.1", metavar="ADDR",
                        help="address for --metrics-port (default 127.0.0.1: this machine only)")
    add_deployment_arguments(parser)
    add_rules_argument(parser)
    add_time_arguments(parser)


def start_exporter(session: LiveSession, port: int, bind: str):
    """Serve the exporter; returns the server (``shutdown()`` it at exit)."""
    from pdwatch.views.exporter import PdwatchExporter
    if not 0 <= port <= 65535:
        raise UsageError(f"--metrics-port {port}: expected 0-65535")
    exporter = PdwatchExporter()
    try:
        server, _thread = exporter.serve(port, addr=bind)
    except OSError as exc:
        raise UsageError(f"--metrics-port {port} on {bind}: {exc.strerror or exc}") from None
    session.exporter = exporter
    print(f"pdwatch: serving metrics on http://{bind}:{server.server_address[1]}/metrics", file=sys.stderr)
    return server


# Of a log already there when watching starts: its start-up lines and its recent past.
WATCH_HISTORY = (4 << 20, 64 << 20)


def build_session(args: argparse.Namespace) -> LiveSession:
    check_year(args)
    tz = time_zone(args)
    if not args.refresh > 0:
        raise UsageError(f"--refresh {args.refresh}: expected a positive number of seconds")
    specs = deployment_specs(args)
    rules = load_rule_set(args)
    kwargs: dict = {}
    if args.mode == "watch":  # URLs are scraped every --scrape-interval, the topology's too
        from pdwatch.model.topology_file import spec_urls
        args.paths = args.paths + [u for u in spec_urls(specs) if u not in args.paths]
        kwargs["sources"] = SourceSet(args.paths, follow=True, scrape_interval=args.scrape_interval,
                                      history=WATCH_HISTORY, prom=prom_options(args))
        kwargs["keep_full_s"] = keep_full_seconds(args.keep_full)
    if args.mode == "replay":
        if any(map(is_prom, args.paths)):  # a server's range: --since/--until/--step
            kwargs["sources"] = SourceSet(args.paths, follow=False, prom=prom_options(args))
        try:
            kwargs["speed"] = parse_speed(args.speed)
            kwargs["start"] = parse_start(args.start, tz) if args.start else None
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    session = LiveSession(args.paths, mode=args.mode, specs=specs, rules=rules, year=args.year, tz=tz, **kwargs)
    if args.mode == "replay":
        require_inputs(session.sources, args.paths)
        require_one_existing(session.sources)
    return session


def keep_full_seconds(text: str | None) -> float | None:
    if text is None:
        return None
    seconds = parse_duration(text)
    if seconds is None or seconds <= 0:
        raise UsageError(f"--keep-full {text}: expected a duration such as 90m, 2h or 1d")
    return seconds


def run_watch(args: argparse.Namespace) -> int:
    return _run(args)


def run_replay(args: argparse.Namespace) -> int:
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    with StopSignals() as stops:  # SIGTERM, SIGHUP, SIGINT: through the shutdown below, exit 143, 129, 130
        session = build_session(args)
        server = None if args.metrics_port is None else start_exporter(session, args.metrics_port, args.metrics_bind)
        try:
            return _show(args, session, stops)
        finally:
            if server is not None:
                server.shutdown()


def _show(args: argparse.Namespace, session: LiveSession, stops: StopSignals) -> int:
    if args.headless or args.jsonl or not sys.stdout.isatty():
        # A stop signal only marks the stop, which the loop sees within 50 ms and leaves by its own
        # way out: no exception is raised into whatever it was doing (a read, a write, a tick).
        try:
            with stops.diverted(lambda _signum: None):
                status = run_headless(session, sys.stdout, refresh=args.refresh, jsonl=args.jsonl, err=sys.stderr,
                                      stop=_StopFlag(stops))
            stops.ignore()
        finally:
            session.close()
        return 128 + stops.received if stops.received is not None else status
    from pdwatch.commands.dashboard import run_dashboard
    from pdwatch.views.tui.app import PdwatchApp  # Textual is imported only for the dashboard
    app = PdwatchApp(session, refresh=args.refresh,
                     export_path=args.export or default_export_path(session.paths))
    try:
        status = run_dashboard(app, stops)
    finally:
        session.close()
    if app.nothing_to_judge is not None:  # said once the terminal is back, as report says it
        raise NothingToJudge(app.nothing_to_judge)
    return status


def print_changes(snapshot: Snapshot, out: TextIO, jsonl: bool, err: TextIO | None = None) -> int:
    for message in snapshot.notices:
        if err is not None:
            print(f"pdwatch: {message}", file=err)
    for change in snapshot.changes:
        line = json.dumps(change.to_json_dict(), ensure_ascii=False) if jsonl else change.to_line()
        out.write(line + "\n")
    if snapshot.changes:
        out.flush()
    return len(snapshot.changes)


def default_export_path(paths: list[str], cwd: str | None = None) -> str:
    """``./pdwatch-live-report.md``, unless the current folder is one being read (given as a
    folder, or holding a given file or glob): a report is never written among the logs unless
    asked (``--export``), so it goes to the temp folder then."""
    cwd = os.path.realpath(cwd or os.getcwd())
    watched = set()
    for path in paths:
        if "://" in path or path == "-":
            continue
        watched.add(os.path.realpath(path if os.path.isdir(path) else os.path.dirname(path) or "."))
    folder = tempfile.gettempdir() if cwd in watched else cwd
    return os.path.join(folder, "pdwatch-live-report.md")


class Progress:
    """A headless replay's progress on stderr (every PROGRESS_S of wall time) and its closing line,
    so a slow replay is never silent and its end says what it found."""

    PROGRESS_S = 10.0

    def __init__(self, err: TextIO | None, clock: Callable[[], float]) -> None:
        self.err, self.clock = err, clock
        self.last = clock()

    def show(self, snapshot: Snapshot) -> None:
        now = self.clock()
        if self.err is None or now - self.last < self.PROGRESS_S or snapshot.done:
            return
        self.last = now
        if snapshot.loading or snapshot.clock is None:
            print("pdwatch: replay: reading the logs", file=self.err, flush=True)
            return
        share = ""
        if snapshot.start is not None and snapshot.end is not None and snapshot.end > snapshot.start:
            share = f", {100 * (snapshot.clock - snapshot.start) / (snapshot.end - snapshot.start):.0f}% of the logs"
        print(f"pdwatch: replay at {snapshot.clock.strftime('%Y-%m-%d %H:%M:%S')}{share}, "
              f"{len(snapshot.all_findings)} finding(s) so far", file=self.err, flush=True)

    def finish(self, snapshot: Snapshot) -> None:
        if self.err is None:
            return
        counts = {s: sum(f.severity == s for f in snapshot.all_findings) for s in SEVERITIES}
        still = sum(f.end is None for f in snapshot.all_findings)
        span = (f" over {snapshot.start.strftime('%Y-%m-%d %H:%M:%S')} - {snapshot.end.strftime('%H:%M:%S')}"
                if snapshot.start is not None and snapshot.end is not None else "")
        kinds = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "none"
        print(f"pdwatch: replay finished{span}: {len(snapshot.all_findings)} finding(s) ({kinds}), "
              f"{still} still firing at the end of the logs", file=self.err, flush=True)
        if snapshot.verdict is not None:
            print(f"pdwatch: the run: {snapshot.verdict.text}", file=self.err, flush=True)


class _StopFlag:
    """What the headless loop stops on: a stop signal received (its handler only sets an attribute;
    setting a ``threading.Event`` there could wait on a lock the interrupted code holds)."""

    def __init__(self, stops: StopSignals) -> None:
        self._stops = stops

    def is_set(self) -> bool:
        return self._stops.received is not None

    def wait(self, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while not self.is_set() and (left := end - time.monotonic()) > 0:
            time.sleep(min(left, 0.05))
        return self.is_set()


def run_headless(session: LiveSession, out: TextIO, *, refresh: float = 0.5, jsonl: bool = False,
                 stop: threading.Event | _StopFlag | None = None, err: TextIO | None = sys.stderr,
                 clock: Callable[[], float] = time.monotonic) -> int:
    """Print findings as they fire and clear until the replay ends (watch: until ``stop``, Ctrl-C or
    another stop signal: then 128 + its number).

    Watch mode reads the sources every ``refresh / 5`` s and updates as soon as new lines
    came in, but not more often than every ``refresh / 2`` s; without new lines, every
    ``refresh`` s. So a line is acted on within about half a refresh, not a whole one.
    """
    stop = stop or threading.Event()
    replay_max = session.mode == "replay" and math.isinf(session.speed)
    live = session.mode == "watch"
    last_tick = -math.inf
    fresh = False  # lines read since the last update
    progress = Progress(err, clock) if session.mode == "replay" else None
    try:
        while not stop.is_set():
            while not stop.is_set() and session.ingest(2000):
                fresh = True  # drain what is there (a replay reads all its files first)
            if stop.is_set():
                break
            now = clock()
            since = now - last_tick
            if live and since < refresh and not (fresh and since >= refresh / 2):
                stop.wait(min(refresh / 5, refresh - since))
                continue
            last_tick, fresh = now, False
            snapshot = session.tick()
            print_changes(snapshot, out, jsonl, err)
            if progress is not None:
                progress.show(snapshot)
            if snapshot.nothing_to_judge is not None:  # junk in: said as report says it, exit 3
                raise NothingToJudge(snapshot.nothing_to_judge)
            if snapshot.done and not session.run_history.ready:
                # The end is the report's view of the run (the run history): wait for it.
                session.run_history.wait(0.2)
                continue
            if snapshot.done:  # a replay's end: 2 when an input could not be read, as parse and report
                if progress is not None:
                    progress.finish(snapshot)
                return 2 if session.read_failures else 0
            if replay_max and not snapshot.loading:
                continue
            if not live:
                stop.wait(refresh)
    except KeyboardInterrupt as interrupt:  # Ctrl-C, or a stop signal (StopSignals)
        return exit_status(interrupt)
    return 0
