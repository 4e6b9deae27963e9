"""``pdwatch demo``: a simulation. A deployment simulated in real time into a temporary folder, watched live.

On a terminal the live dashboard opens on the folder (``pdwatch watch``); with ``--events``,
or when stdout is not a terminal, the events are printed as they arrive, in the table
format of ``pdwatch parse --follow``.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import threading
from datetime import timezone

from pdwatch.commands import SUMMARIES
from pdwatch.parsers import Event
from pdwatch.commands.parse import write_events
from pdwatch.commands.simulate import add_deployment_arguments, build_config
from pdwatch.commands.stopping import StopSignals, exit_status
from pdwatch.errors import UsageError
from pdwatch.events.stream import EventStream
from pdwatch.sim import run as run_simulation
from pdwatch.sources import SourceNotice, SourceSet

_CATCH_UP_S = 1.5  # after the simulation ends, let the tail read the last lines before stopping


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "demo",
        help=SUMMARIES["demo"],
        description="A simulation, no cluster or GPU needed: pdwatch simulates a prefill/decode vLLM deployment in "
                    "real time, writes the logs its endpoints would write into a new temporary folder, and opens "
                    "the live dashboard on that folder (as `pdwatch watch` would; q or Ctrl-C stops it). The "
                    "folder is kept: afterwards `pdwatch replay DIR` plays the run back and `pdwatch report DIR` "
                    "writes its diagnosis. With --events, or when stdout is not a terminal, the events are printed "
                    "as they arrive instead (like `pdwatch parse --follow --format table`).",
    )
    add_deployment_arguments(parser, topology="4xDEP2-1xDEP8", cc=3072, duration="5m", style="dynamo", noise="quiet",
                             interval=2.0)
    parser.add_argument("--events", action="store_true",
                        help="print the events as they arrive instead of opening the dashboard")
    parser.add_argument("--dir", metavar="DIR",
                        help="write the simulated logs into DIR (a new or empty folder; never one with files in it) "
                             "instead of a new temporary folder")
    parser.add_argument("--logs-only", action="store_true",
                        help="only write the logs, in real time, until the simulation ends (or Ctrl-C): for "
                             "`pdwatch watch DIR` in another terminal, or `pdwatch demo --dir DIR --logs-only & "
                             "pdwatch watch DIR`")
    parser.set_defaults(run=run, scenario=None, spec_tokens=None, metrics_interval=0.0)


def run(args: argparse.Namespace) -> int:
    with StopSignals() as stops:  # SIGTERM, SIGHUP, SIGINT: the simulation stops, the folder is kept
        return _run(args, stops)


def _run(args: argparse.Namespace, stops: StopSignals) -> int:
    cfg, opts = build_config(args)
    folder = _folder(args.dir)
    err = sys.stderr
    print(f"pdwatch demo: a SIMULATION (no cluster): {cfg.topology} at cc {cfg.cc}, ISL/OSL {cfg.isl}/{cfg.osl}, "
          f"{cfg.duration:g} s of load, stats every {opts.interval:g} s", file=err)
    print(f"pdwatch demo: writing the simulated logs in real time into {folder} (Ctrl-C to stop; the folder is kept)",
          file=err, flush=True)

    if args.logs_only:
        return _logs_only(cfg, opts, folder)
    if not args.events and sys.stdout.isatty():
        return _dashboard(cfg, opts, folder, stops)

    stop = threading.Event()
    sources = SourceSet([folder], follow=True, poll_interval=0.2, rescan_interval=1.0)
    failure: list[BaseException] = []

    def simulate() -> None:
        try:
            run_simulation(cfg, folder, opts, realtime=True, stop=stop)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failure.append(exc)
        finally:
            if not stop.wait(_CATCH_UP_S):
                sources.stop()

    writer = threading.Thread(target=simulate, name="pdwatch-demo-sim", daemon=True)
    stream = EventStream(sources, tz=timezone.utc)
    out = sys.stdout
    status = 0
    writer.start()
    try:
        write_events([], out, "table")  # the header
        for item in stream:
            if isinstance(item, SourceNotice):
                if item.kind not in ("opened", "metrics_file"):
                    print(f"pdwatch: {item.message}", file=err, flush=True)
                continue
            out.write(_table_line(item))
            out.flush()
    except KeyboardInterrupt as interrupt:  # Ctrl-C, or a stop signal (StopSignals)
        status = exit_status(interrupt)
    finally:
        stop.set()
        sources.stop()
        writer.join(timeout=10)
    if failure:
        exc = failure[0]
        if isinstance(exc, ValueError):
            raise UsageError(str(exc))
        raise exc
    print(f"pdwatch demo: stopped; {_afterwards(folder)}", file=err, flush=True)
    return status


def _folder(wanted: str | None) -> str:
    """Where the logs go: a new temporary folder, or ``wanted`` if it is new or empty (a demo never
    writes among someone's files)."""
    if wanted is None:
        return tempfile.mkdtemp(prefix="pdwatch-demo-")
    if os.path.exists(wanted) and not os.path.isdir(wanted):
        raise UsageError(f"--dir {wanted}: not a folder")
    try:
        os.makedirs(wanted, exist_ok=True)
        if os.listdir(wanted):
            raise UsageError(f"--dir {wanted}: the folder is not empty; the demo writes only into a new or "
                             "empty folder")
    except OSError as exc:
        raise UsageError(f"--dir {wanted}: {exc.strerror or exc}") from None
    return wanted


def _logs_only(cfg, opts, folder: str) -> int:
    """The simulation writes its logs in real time; nothing else (a watch elsewhere follows them)."""
    try:
        run_simulation(cfg, folder, opts, realtime=True)
    except KeyboardInterrupt as interrupt:  # Ctrl-C, or a stop signal (StopSignals)
        print(f"pdwatch demo: stopped; {_afterwards(folder)}", file=sys.stderr, flush=True)
        return exit_status(interrupt)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(f"pdwatch demo: the simulation ended; {_afterwards(folder)}", file=sys.stderr, flush=True)
    return 0


def _afterwards(folder: str) -> str:
    return (f"the simulated logs are in {folder} (pdwatch replay {folder} plays the run back, "
            f"pdwatch report {folder} writes its diagnosis)")


def _dashboard(cfg, opts, folder: str, stops: StopSignals) -> int:
    """The simulation writes in a thread while the dashboard follows the folder."""
    from pdwatch.session.live import LiveSession
    from pdwatch.commands.dashboard import run_dashboard
    from pdwatch.commands.watch import default_export_path
    from pdwatch.views.tui.app import PdwatchApp  # Textual only when the dashboard opens

    stop = threading.Event()
    writer = threading.Thread(target=run_simulation, args=(cfg, folder, opts),
                              kwargs={"realtime": True, "stop": stop}, name="pdwatch-demo-sim", daemon=True)
    writer.start()
    session = LiveSession([folder], mode="watch")
    try:
        status = run_dashboard(PdwatchApp(session, export_path=default_export_path([folder]),
                                          banner=f"pdwatch demo, a simulation: its logs are in {folder}"), stops)
    finally:
        stop.set()
        session.close()
        writer.join(timeout=10)
    print(f"pdwatch demo: stopped; {_afterwards(folder)}", file=sys.stderr, flush=True)
    return status


def _table_line(event: Event) -> str:
    """One event in ``pdwatch parse --format table`` form, without the header."""
    buf = io.StringIO()
    write_events([event], buf, "table")
    return buf.getvalue().split("\n", 1)[1]
