"""``pdwatch parse``: print the events found in logs, one per line (JSON lines or a table)."""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import sys
from concurrent.futures import Future, ProcessPoolExecutor
from datetime import timezone
from typing import Any, TextIO

import orjson

from pdwatch.commands import SUMMARIES
from pdwatch.parsers import Event
from pdwatch.events import parallel_scan
from pdwatch.commands.common import add_prom_arguments, add_scrape_interval_argument, add_time_arguments, \
    check_year, prom_options, time_zone
from pdwatch.errors import require_inputs
from pdwatch.events.recognition import nothing_to_judge, unrecognised_notices
from pdwatch.events.stream import EventStream
from pdwatch.sources import READ_FAILURES, SourceNotice, SourceSet



def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "parse",
        help=SUMMARIES["parse"],
        description="Read vLLM / Dynamo logs and print one event per recognised line. "
                    "PATH is a file, a glob, a directory (its *.out *.log *.err *.txt), - for stdin, or a "
                    "Prometheus server (prom+http://HOST:PORT[?match={...}] with --since): its series as the "
                    "stats events pdwatch derives from them.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH")
    parser.add_argument("--format", choices=["jsonl", "table"], default="jsonl",
                        help="jsonl (default): one JSON object per event; table: aligned columns for reading")
    parser.add_argument("--follow", "-f", action="store_true",
                        help="keep reading as files grow, like tail -F (Ctrl-C to stop)")
    add_scrape_interval_argument(parser)
    add_time_arguments(parser)
    add_prom_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    check_year(args)
    tz = time_zone(args)
    sources = SourceSet(args.paths, follow=args.follow, scrape_interval=args.scrape_interval, prom=prom_options(args))
    if not args.follow:
        require_inputs(sources, args.paths)
    out = sys.stdout
    if args.format == "table":
        out.write(_TABLE_HEADER + "\n")
    recognised: set[str] = set()
    try:
        if _worth_splitting(sources, args):
            failed = _replay_by_file(sources, args, tz, out, recognised)
        else:
            stream = EventStream(sources, year=args.year, tz=tz, progress=_progress, json_lines=args.format == "jsonl")
            failed = _print_stream(stream, args, out)
            recognised = stream.recognised
    finally:
        sources.stop()
    out.flush()
    if failed:
        return 2
    if not recognised:  # a run that read only junk is said as such (exit 3), never an empty success
        raise nothing_to_judge(list(sources.sources) + list(sources.metrics_files))
    for notice in unrecognised_notices(sources.local_files, recognised):
        _report_notice(notice, follow=False)
    return 0


def _print_stream(stream: EventStream, args: argparse.Namespace, out: TextIO) -> bool:
    write = _jsonl_line if args.format == "jsonl" else _table_line
    failed = False
    for item in stream:
        if isinstance(item, SourceNotice):
            failed |= _report_notice(item, follow=args.follow)
            continue
        # A line the scanner's direct lanes wrote comes as its JSON bytes (``json_lines``).
        out.write(item.decode("utf-8", "surrogateescape") if item.__class__ is bytes else write(item))
        if args.follow:
            out.flush()
    return failed


def _worth_splitting(sources: SourceSet, args: argparse.Namespace) -> bool:
    """A replay of local files only (no stdin, no ssh) on a machine of several cores, with one file
    big enough to scan in pieces, or several that together are."""
    names = sources.sources
    if args.follow or not names or not all(map(os.path.isfile, names)):
        return False
    if any(map(parallel_scan.should_split, names)):
        return True
    return (len(names) > 1 and parallel_scan.worker_count() > 1
            and sum(map(os.path.getsize, names)) >= parallel_scan.MIN_PARALLEL_BYTES)


def _replay_by_file(sources: SourceSet, args: argparse.Namespace, tz, out: TextIO, recognised: set[str]) -> bool:
    """Every file in the replay's order, read on every core: a big one in pieces, the others whole
    by workers a few files ahead of their turn. The output is the sequential stream's: each file's
    lines and notices in turn, then the lines its scanner gives at the end of the input (an open
    traceback, a held wrapped record), of every file, in file order. The files that gave a line
    are added to ``recognised``."""
    table = args.format == "table"
    render = _render_table if table else _render_jsonl
    write = _chunk_writer(out)
    failed = False
    finishes: list[bytes | str] = []
    ended: list[SourceNotice] = []  # what each file's reading found, after every file as the stream says it
    paths = list(sources.sources)
    split = {p for p in paths if parallel_scan.should_split(p)}  # one stat a file
    if sources.metrics_files:  # the stream says first that it skips the recorded scrapes
        for notice in SourceSet(sources.metrics_files, follow=False).blocks():
            failed |= isinstance(notice, SourceNotice) and _report_notice(notice, follow=False)
    with _FilesAhead([p for p in paths if p not in split], args.year, tz, table) as ahead:
        for path in paths:
            if path in split:
                try:
                    last = None
                    for chunk in parallel_scan.scan_file(path, year=args.year, tz=tz, render=render,
                                                         json_lines=not table, finish_apart=True, notices=ended):
                        if last is not None:
                            write(last)
                        if chunk:
                            recognised.add(path)
                        last = chunk  # the last one is the scanner's finish
                    finishes.append(last)
                    continue
                except parallel_scan.NotSplittable:
                    items, finish, found = _read_whole(path, args.year, tz, table)  # raised before any output
                except OSError as exc:  # vanished or unreadable since it was listed
                    print(f"pdwatch: {path}: {exc.strerror or exc}", file=sys.stderr)
                    failed = True
                    continue
            else:
                items, finish, found = ahead.take(path)
            for item in items:
                if isinstance(item, SourceNotice):
                    failed |= _report_notice(item, follow=False)
                else:
                    write(item)
                    recognised.add(path)
            if finish:
                recognised.add(path)
            finishes.append(finish)
            ended += found
    for finish in finishes:
        write(finish)
    for notice in ended:
        failed |= _report_notice(notice, follow=False)
    return failed


class _FilesAhead:
    """Files read whole by a pool of workers, each submitted ``ahead`` files before its turn: the
    outputs waiting are a few files' worth, whatever the number of files."""

    def __init__(self, paths: list[str], year: int | None, tz, table: bool) -> None:
        self._queue = list(paths)
        self._args = (year, tz, table)
        self._futures: dict[str, Future] = {}
        self._ahead = parallel_scan.worker_count()
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> _FilesAhead:
        if self._queue:
            # fork: the workers inherit the loaded parsers, as parallel_scan's do
            self._pool = ProcessPoolExecutor(max_workers=self._ahead, mp_context=multiprocessing.get_context("fork"))
            self._submit()
        return self

    def __exit__(self, *_exc) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def _submit(self) -> None:
        assert self._pool is not None
        while self._queue and len(self._futures) < self._ahead:
            path = self._queue.pop(0)
            self._futures[path] = self._pool.submit(_read_whole, path, *self._args)

    def take(self, path: str) -> tuple[list, bytes | str, list[SourceNotice]]:
        future = self._futures.pop(path)
        self._submit()
        return future.result()


def _read_whole(path: str, year: int | None, tz, table: bool) -> tuple[list, bytes | str, list[SourceNotice]]:
    """One file as the sequential stream reads it: its rendered lines and notices in order, the
    rendering of its scanner's finish and what its reading found (``EventStream.end_notices``),
    which the stream gives after all files."""
    sources = SourceSet([path], follow=False)
    stream = EventStream(sources, year=year, tz=tz, json_lines=not table)
    render = _render_table if table else _render_jsonl
    items: list = []
    try:
        for item in sources.blocks():
            if isinstance(item, SourceNotice):
                items.append(item)
            else:
                events = stream.events_of(item)
                if events:
                    items.append(render(events))
        finish = render(stream.finish())
        return items, finish, stream.end_notices()
    finally:
        sources.stop()


def _chunk_writer(out: TextIO):
    """Where a split file's rendered chunks go: JSON lines come as bytes (see ``_render_jsonl``)
    and go straight to the binary stream under ``out`` when it has one, after what is pending in
    its text layer; a table's chunks are text."""
    binary = getattr(out, "buffer", None)
    if binary is None:
        return lambda chunk: out.write(chunk.decode("utf-8", "surrogateescape") if isinstance(chunk, bytes) else chunk)
    out.flush()
    return lambda chunk: binary.write(chunk) if isinstance(chunk, bytes) else out.write(chunk)


def _progress(message: str) -> None:
    print(f"pdwatch: {message}", file=sys.stderr, flush=True)


def _report_notice(notice: SourceNotice, *, follow: bool) -> bool:
    """Print a source notice on stderr; True when it makes a replay fail."""
    if notice.kind == "opened" and not follow:
        return False
    print(f"pdwatch: {notice.message}", file=sys.stderr, flush=True)
    return notice.kind in READ_FAILURES and not follow


def _jsonl_line(event: Event) -> str:
    return _jsonl_bytes(event).decode("utf-8", "surrogateescape")


_UTC = timezone.utc


def _jsonl_bytes(event: Event) -> bytes:
    """``event.to_json_dict()`` as one JSON line of UTF-8 bytes."""
    ts = event.ts
    # ``to_json_dict`` inlined, but a UTC stamp is left to orjson, which writes it in C exactly
    # as ``isoformat`` does (a test checks). With the bytes below, rendering the 21k events of a
    # 50 MB log takes 0.032 s of CPU instead of 0.048 s.
    if ts is not None and ts.tzinfo is not _UTC:
        ts = ts.isoformat()
    if event.end_line_no is None:
        data = {"kind": event.kind, "source": event.source, "line_no": event.line_no, "ts": ts,
                "engine": event.engine, "level": event.level, **event.values}
    else:
        data = {"kind": event.kind, "source": event.source, "line_no": event.line_no, "ts": ts,
                "engine": event.engine, "level": event.level, "end_line_no": event.end_line_no, **event.values}
    try:
        # orjson: a third of json's cost per event, and it writes NaN/inf as null as JSON needs.
        return orjson.dumps(data, option=orjson.OPT_APPEND_NEWLINE)
    except (TypeError, orjson.JSONEncodeError):  # an int beyond 64 bits from a config repr, ...
        # surrogateescape: a file name that is not UTF-8 comes out as its own bytes, as the
        # text stream of a POSIX locale writes it.
        line = json.dumps(_finite(event.to_json_dict()), ensure_ascii=False, default=str) + "\n"
        return line.encode("utf-8", "surrogateescape")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _render_jsonl(events: list[Event | bytes]) -> bytes:
    # Bytes end to end (worker, pipe, stdout's binary stream): no decode per line, no
    # encode of the ~60 MB a 500 MB log gives, in the worker's pickle nor at the parent's write.
    # A bytes item is a line the scanner's direct lanes already wrote (``json_lines``).
    return b"".join([item if item.__class__ is bytes else _jsonl_bytes(item) for item in events])


def _render_table(events: list[Event]) -> str:
    return "".join(map(_table_line, events))


_TABLE_HEADER = f"{'TIME':<19}  {'SOURCE:LINE':<34}  {'ENG':>3}  {'KIND':<17}  VALUES"


def _table_line(event: Event) -> str:
    ts = event.ts.strftime("%Y-%m-%d %H:%M:%S") if event.ts else "-"
    where = f"{event.source}:{event.line_no}"
    if len(where) > 34:
        where = "…" + where[-33:]
    engine = "-" if event.engine is None else str(event.engine)
    values = " ".join(f"{k}={_compact(v)}" for k, v in event.values.items() if v is not None)
    if len(values) > 160:
        values = values[:159] + "…"
    return f"{ts:<19}  {where:<34}  {engine:>3}  {event.kind:<17}  {values}\n"


def _compact(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return str(value)


def write_events(events: list[Event], out: TextIO, fmt: str = "jsonl") -> None:
    """Write events the way ``pdwatch parse`` prints them (used by tests and other commands)."""
    if fmt == "table":
        out.write(_TABLE_HEADER + "\n")
    for event in events:
        out.write(_jsonl_line(event) if fmt == "jsonl" else _table_line(event))
