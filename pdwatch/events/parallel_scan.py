"""Replay one big log file on every core: scan it in pieces, speculate, verify.

A scanner carries a little state from line to line (the year of vLLM's year-less stamps,
the engine of the last stats line, open tracebacks, a version line waiting for its model
line). A piece cannot know that state before the pieces ahead of it are done, so it
guesses: it first reads the quarter-megabyte just before its start (a warm-up whose events
belong to the previous piece and are dropped) and records the state it reached. The
parent then checks each guess against the state the previous piece really ended in;
a wrong guess (a new year, a traceback longer than the warm-up, a stats-less stretch)
is rescanned from the true state. So the output is exactly the sequential scan's, in the
same order, only faster. Files that need the slow path as a whole (terminal-wrapped
pastes, lines over the length cap) are not split.
"""

from __future__ import annotations

import dataclasses
import mmap
import multiprocessing
import os
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any, Callable, Iterator

from pdwatch.parsers import Event, LogScanner
from pdwatch.parsers.timeinfo import year_hint_from_bytes
from pdwatch.parsers.wrap import WrapDetector
from pdwatch.sources.framing import count_newlines
from pdwatch.sources.records import SourceNotice, reading_notices

MIN_PARALLEL_BYTES = 32 << 20  # below this, starting workers costs more than it saves
_PIECE_BYTES = 16 << 20
_WARMUP_BYTES = 256 << 10
_FIRST_BLOCK_BYTES = 1 << 20  # the file tail's read size: the year hint looks at the same first block
_FEED_BYTES = 4 << 20
# A warm-up is fed in small blocks: a skipped kind (a report's router, access lines) leaves the
# search at the next block once its first line is seen, so the warm-up does not read the rest of
# them at full cost (on a Dynamo frontend's log it was a fifth of a report's reading).
_WARMUP_FEED_BYTES = 32 << 10
MAX_LINE_BYTES = 1 << 20  # the sources' line cap: a longer line is cut there, which only they do

Render = Callable[[list[Event]], Any]  # events of a piece -> what travels back (events, or text)
# With ``json_lines``, render gets a list of Events and of JSON lines (bytes) in place of the
# events the scanner's direct lanes wrote (``LogScanner(json_lines=True)``).


class NotSplittable(Exception):
    """The file must be read sequentially (wrapped paste, over-long line)."""


@dataclass(frozen=True)
class _Piece:
    path: str
    start: int
    end: int
    first_line_no: int
    last: bool
    finish_apart: bool = False


@dataclass
class _PieceResult:
    output: list[Any]  # render() of each block of the piece, in order
    state_before: tuple | None  # None: the piece was scanned from the true state (start of file or a rescan)
    state_after: tuple
    parse_errors: int
    finish_output: Any = None  # render(the scanner's finish events), with finish_apart
    # Whether the piece used the stats state it started from (a KV-transfer or spec-decode
    # line before its first stats line), and whether a stats line of its own replaced it.
    entry_stats_used: bool = True
    stats_set: bool = True
    in_slot: int | None = None  # bytes of output left in the piece's output slot, in place of ``output``
    wrapped: bool = False  # the scanner found terminal-wrapped lines (only the first piece looks)
    skip_met: frozenset[str] = frozenset()  # skipped kinds whose lines the piece met (LogScanner.skip_met)
    lines: int = 0  # newlines in the piece: where the next piece's lines start
    undecodable: int = 0  # its lines that are not valid UTF-8 (the warm-up's not counted)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
_allocator_tuned = False


def tune_allocator() -> None:
    """Let glibc's malloc keep the blocks a report's scan reads (4 MB ``pread`` buffers, numpy's
    newline masks) in its heap for reuse, instead of mapping each afresh from the kernel, which
    zero-fills it page by page: on a report of a 1.3 GB run that was ~0.4 s of its ~0.8 s of
    system time (wall 2.26 -> 2.19 s). Called before the workers fork, which inherit it; a no-op
    where the C library is not glibc. Not for ``parse``: its outputs (a piece's JSON, tens of MB)
    then fragment the parent's heap, and a 100 MB parse took 0.2 s longer."""
    global _allocator_tuned
    if _allocator_tuned:
        return
    _allocator_tuned = True
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(_M_MMAP_THRESHOLD, 64 << 20)  # blocks under 64 MB come from the heap
        libc.mallopt(_M_TRIM_THRESHOLD, 256 << 20)  # and the heap keeps up to 256 MB free for them
    except (OSError, AttributeError):  # not glibc (musl, macOS): its defaults stay
        pass


def worker_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def should_split(path: str, workers: int | None = None) -> bool:
    try:
        size = os.path.getsize(path)
    except OSError:
        return False
    return (workers or worker_count()) > 1 and size >= MIN_PARALLEL_BYTES


def scan_file(path: str, *, year: int | None, tz: tzinfo | None, render: Render,
              workers: int | None = None, piece_bytes: int | None = None,
              finish_apart: bool = False, json_lines: bool = False,
              renumber: Callable[[Any, int], Any] | None = None,
              notices: list[SourceNotice] | None = None) -> Iterator[Any]:
    """``render(events)`` of consecutive stretches of ``path`` (a few MB each), in order: together, the events a
    sequential ``LogScanner`` gives for the whole file, ``finish`` included. With
    ``finish_apart``, the events of the scanner's ``finish`` are not in the last piece's but
    come as one more ``render`` at the end (a caller of several files puts them after all
    files, where ``EventStream`` has them).

    Raises ``NotSplittable`` (before yielding anything) when the file must be read sequentially.
    With ``renumber`` (see ``FileScan``), the pieces are scanned before their lines are counted.
    ``notices`` gets, once the file is read, what the sequential read says after it (``FileScan.end_notices``).
    """
    workers = workers or worker_count()
    piece_bytes = piece_bytes or _PIECE_BYTES  # read now, not when the module loaded: a test may set it
    # The first piece's worker judges the wrap (the probe would cost its time here, before any
    # worker starts): a wrapped file raises at the first result, still before any output.
    scan = FileScan(path, year=year, tz=tz, render=render, workers=workers, piece_bytes=piece_bytes,
                    finish_apart=finish_apart, json_lines=json_lines, probe=False, renumber=renumber)
    context = multiprocessing.get_context("fork")  # workers inherit the loaded parsers: no re-import
    try:  # made before the workers fork, so they share it; bytes in a slot cannot be renumbered
        slots: OutputSlots | None = OutputSlots(2 * workers, 2 * piece_bytes) if renumber is None else None
    except OSError:  # no shared memory to be had (a strict overcommit limit): outputs take the pipe
        slots = None
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker,
                                 initargs=(year, tz, scan.mtime, scan.hint, render, frozenset(), json_lines,
                                           slots)) as pool:
            scan.start(pool, shared=False, slots=slots)
            yield from scan
        if notices is not None:
            notices += scan.end_notices()
    finally:
        if slots is not None:
            slots.close()


class OutputSlots:
    """Shared memory where a worker leaves a piece's output when it is bytes (``pdwatch parse``'s
    JSON lines), for the parent to copy out: pickled through the pool's pipe instead, the ~180
    MB a 1 GB log gives cost ~8% of the parse's CPU, much of it in the parent, which shares the
    cores with the workers. One slot per piece in flight; an output too big for its slot
    travels the usual way."""

    def __init__(self, count: int, size: int) -> None:
        self.size = size
        self.memory = mmap.mmap(-1, count * size)  # anonymous and MAP_SHARED: seen by forked children
        self._free = deque(range(count))

    def take(self) -> int | None:
        return self._free.popleft() if self._free else None

    def give_back(self, slot: int | None) -> None:
        if slot is not None:
            self._free.append(slot)

    def put(self, slot: int, outputs: list[Any]) -> int | None:
        """Write ``outputs`` into ``slot`` (in the worker); their length, or None when they are
        not all bytes or do not fit."""
        if not all(out.__class__ is bytes for out in outputs):
            return None
        total = sum(map(len, outputs))
        if total > self.size:
            return None
        pos = slot * self.size
        for out in outputs:
            self.memory[pos:pos + len(out)] = out
            pos += len(out)
        return total

    def read(self, slot: int, length: int) -> bytes:
        start = slot * self.size
        return self.memory[start:start + length]

    def close(self) -> None:
        self.memory.close()


class FileScan:
    """One file's scan in pieces on a pool: ``start`` submits the first pieces, iterating
    gives ``scan_file``'s outputs (and submits the rest as the first are verified).

    A pool shared with other work (``shared=True``: the caller's, for several files) gets
    the scanner's settings with each piece; a pool of its own has them from its initializer.
    ``render`` must then be picklable (a module-level function).
    """

    def __init__(self, path: str, *, year: int | None, tz: tzinfo | None, render: Render,
                 workers: int | None = None, piece_bytes: int | None = None, finish_apart: bool = False,
                 skip_kinds: frozenset[str] = frozenset(), json_lines: bool = False, probe: bool = True,
                 renumber: Callable[[Any, int], Any] | None = None) -> None:
        self.path, self.year, self.tz, self.render = path, year, tz, render
        # With ``renumber`` (outputs, delta) -> outputs moved by delta lines, the pieces are not
        # counted before they are scanned: each numbers its lines from 1 and counts them as it
        # reads, and its outputs are renumbered here once the pieces before it are done. A report
        # of a 1.3 GB run counted it here first: ~0.2 s of CPU and 0.6 s before the rules could load.
        self.renumber = renumber
        self.json_lines = json_lines
        self.skip_kinds = frozenset(skip_kinds)
        self.workers = workers or worker_count()
        self.finish_apart = finish_apart
        self.mtime = os.stat(path).st_mtime
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if probe:
                _check_splittable(path, data, year, tz, self.mtime)
            self._bounds = _piece_bounds(fh.fileno(), len(data), piece_bytes or _PIECE_BYTES)
            self.hint = year_hint_from_bytes(data[: _first_block_end(data)])
        self._pool: ProcessPoolExecutor | None = None
        self._context: tuple | None = None
        self._in_flight: deque[tuple[_Piece, Future, int | None]] = deque()
        self._queue: Iterator[_Piece] = iter(())
        self._slots: OutputSlots | None = None
        self.undecodable_lines = 0  # of the pieces given so far

    def end_notices(self) -> list[SourceNotice]:
        """Once every piece is given: what the sequential read says after the file (a file a
        terminal had cut is never read in pieces, so only its lines that are not valid UTF-8)."""
        return reading_notices(self.path, undecodable=self.undecodable_lines)

    def start(self, pool: ProcessPoolExecutor, *, shared: bool = True, slots: OutputSlots | None = None) -> None:
        """Submit the first piece, count the lines of all on the pool (raises ``NotSplittable``,
        the first piece's scan then cancelled or left unread) and submit the next ones; with
        ``renumber``, only check that no line is over the cap, and submit them."""
        bounds = self._bounds
        self._pool = pool
        self._slots = slots
        self._context = ((self.year, self.tz, self.mtime, self.hint, self.render, self.skip_kinds, self.json_lines)
                         if shared else None)
        # The first piece's lines are numbered from 1 whatever the counts: one worker scans it
        # while the others count, rather than after them (the count of a 500 MB file takes
        # 0.14 s on 2 cores, the first piece's scan 0.09 s).
        first = _Piece(self.path, bounds[0][0], bounds[0][1], 1, len(bounds) == 1, self.finish_apart)
        self._submit(first)
        if self.renumber is not None:
            if not _lines_under_cap(self.path, bounds):
                self._cancel_in_flight()
                raise NotSplittable(f"{self.path}: a line longer than {MAX_LINE_BYTES} bytes is cut by the sequential reader")
            self._queue = iter([_Piece(self.path, start, end, 1, end == bounds[-1][1], self.finish_apart)
                                for start, end in bounds[1:]])  # provisional numbers: from 1
            self._submit_ahead()
            return
        tasks = [(self.path, s, e) for s, e in bounds]
        counts = list(pool.map(_count_lines, tasks))
        if any(count is None for count in counts):
            self._cancel_in_flight()
            raise NotSplittable(f"{self.path}: a line longer than {MAX_LINE_BYTES} bytes is cut by the sequential reader")
        pieces, line_no = [], 1 + counts[0]
        for (start, end), count in zip(bounds[1:], counts[1:]):
            pieces.append(_Piece(self.path, start, end, line_no, end == bounds[-1][1], self.finish_apart))
            line_no += count
        self._queue = iter(pieces)
        self._submit_ahead()

    def _submit_ahead(self) -> None:
        if len(self._in_flight) >= 2 * self.workers:
            return
        for piece in self._queue:
            self._submit(piece)
            if len(self._in_flight) >= 2 * self.workers:
                break

    def _cancel_in_flight(self) -> None:
        for _, future, _ in self._in_flight:
            future.cancel()
        self._in_flight.clear()

    def _submit(self, piece: _Piece) -> None:
        assert self._pool is not None
        slot = None
        if self._context is None:
            slot = self._slots.take() if self._slots is not None else None
            future = self._pool.submit(_scan_piece, piece, None, slot)
        else:
            future = self._pool.submit(_scan_piece_with, piece, self._context)
        self._in_flight.append((piece, future, slot))

    def __iter__(self) -> Iterator[Any]:
        true_state: tuple | None = None
        first_line = 1  # the true number of the next piece's first line
        while self._in_flight:
            piece, future, slot = self._in_flight.popleft()
            try:
                result: _PieceResult = future.result()
                delta = first_line - piece.first_line_no  # 0 unless the piece was numbered provisionally
                if delta:
                    piece = dataclasses.replace(piece, first_line_no=first_line)
                    result = _renumbered(result, delta, self.renumber)
                if result.state_before is not None and not _guess_holds(result, true_state):
                    result = _scan_piece_here(piece, true_state, self.year, self.tz, self.mtime, self.hint,
                                              self.render, self.skip_kinds, self.json_lines)
                elif result.in_slot is not None:
                    assert self._slots is not None and slot is not None
                    result.output = [self._slots.read(slot, result.in_slot)]
            finally:
                if self._slots is not None:
                    self._slots.give_back(slot)
            if result.wrapped:
                for _, pending, _ in self._in_flight:
                    pending.cancel()
                self._in_flight.clear()
                raise NotSplittable(f"{self.path}: terminal-wrapped lines are rejoined sequentially")
            true_state = _state_after(result, true_state)
            first_line += result.lines
            self.undecodable_lines += result.undecodable
            nxt = next(self._queue, None)
            if nxt is not None:
                self._submit(nxt)
            yield from result.output
            if piece.last and self.finish_apart:
                yield result.finish_output


# In a scanner's boundary state, the engine of the last stats line and whether one was seen,
# and the skipped kinds whose first line is still to come.
_STATS_STATE = slice(1, 3)
_UNSEEN = 8


def _renumbered(result: _PieceResult, delta: int, renumber: Callable[[Any, int], Any] | None) -> _PieceResult:
    """A piece's result scanned with provisional line numbers, moved to the true ones."""
    assert renumber is not None and result.in_slot is None  # only a renumbering scan numbers provisionally
    result.output = [renumber(out, delta) for out in result.output]
    if result.finish_output is not None:
        result.finish_output = renumber(result.finish_output, delta)
    if result.state_before is not None:
        result.state_before = LogScanner.renumbered(result.state_before, delta)
    result.state_after = LogScanner.renumbered(result.state_after, delta)
    return result


def _without_stats(state: tuple) -> tuple:
    return state[:_STATS_STATE.start] + state[_STATS_STATE.stop:_UNSEEN] + state[_UNSEEN + 1:]


def _guess_holds(result: _PieceResult, true_state: tuple | None) -> bool:
    """The warm-up's guess is right wherever the piece depended on it. The stats part counts
    only if a line used it: where stats lines are further apart than the warm-up, the guess
    misses them, and every piece would otherwise be rescanned for nothing. So does a skipped
    kind the warm-up did not meet though it came before (a frontend's one ``added model`` line
    at start-up: every piece of a report was rescanned here for it): only a piece that met
    such a line gave it as a first one."""
    if true_state is None:
        return result.state_before == true_state
    before = result.state_before
    guess_unseen, true_unseen = before[_UNSEEN], true_state[_UNSEEN]
    if not guess_unseen >= true_unseen or (guess_unseen - true_unseen) & result.skip_met:
        return False
    if result.entry_stats_used:
        return _without_stats(before) == _without_stats(true_state) and before[_STATS_STATE] == true_state[_STATS_STATE]
    return _without_stats(before) == _without_stats(true_state)


def _state_after(result: _PieceResult, true_state: tuple | None) -> tuple:
    """A piece without a stats line of its own ends with the stats state it was given; a skipped
    kind seen before it stays seen."""
    after = result.state_after
    if result.state_before is None or true_state is None:
        return after
    if not result.stats_set:
        after = after[:_STATS_STATE.start] + true_state[_STATS_STATE] + after[_STATS_STATE.stop:]
    return after[:_UNSEEN] + (after[_UNSEEN] & true_state[_UNSEEN],) + after[_UNSEEN + 1:]


def _check_splittable(path: str, data: mmap.mmap, year: int | None, tz: tzinfo | None, mtime: float) -> None:
    # What a scanner's first feed decides (its events are not needed: reading them cost a report
    # ~0.25 s on a Dynamo frontend's log, in the parent, before the workers could start).
    probe = WrapDetector()
    probe.observe(data[: _first_block_end(data)])
    if probe.widths:
        raise NotSplittable(f"{path}: terminal-wrapped lines are rejoined sequentially")


def _first_block_end(data: mmap.mmap) -> int:
    end = data.rfind(b"\n", 0, _FIRST_BLOCK_BYTES)
    return len(data) if end < 0 or len(data) <= _FIRST_BLOCK_BYTES else end + 1


def _piece_bounds(fd: int, size: int, piece_bytes: int) -> list[tuple[int, int]]:
    """Pieces of about ``piece_bytes`` ending at newlines. The newline after each nominal end
    is looked for with small reads, not in a map of the file: faulting the map in page by page
    counted ~1.4 MB of file per piece in this process's peak RSS (130 MB for 1 GB)."""
    bounds, start = [], 0
    while start < size:
        end = size if size - start <= piece_bytes * 3 // 2 else _next_newline(fd, start + piece_bytes, size)
        end = size if end < 0 else (end + 1 if end < size else end)
        bounds.append((start, end))
        start = end
    return bounds


def _next_newline(fd: int, pos: int, size: int, window: int = 64 << 10) -> int:
    """Offset of the first newline at or after ``pos``, or -1."""
    while pos < size:
        chunk = os.pread(fd, window, pos)
        found = chunk.find(b"\n")
        if found >= 0:
            return pos + found
        if not chunk:
            break
        pos += len(chunk)
    return -1


# --- worker side ----------------------------------------------------------------------------

_WORKER: dict[str, Any] = {}


def _init_worker(year, tz, mtime, hint, render, skip_kinds=frozenset(), json_lines=False,
                 slots: OutputSlots | None = None) -> None:
    _WORKER.update(year=year, tz=tz, mtime=mtime, hint=hint, render=render, skip_kinds=skip_kinds,
                   json_lines=json_lines, slots=slots)


def _lines_under_cap(path: str, bounds: list[tuple[int, int]]) -> bool:
    """Whether every line of the pieces is under the cap, without counting them: the jumps of
    ``_count_lines``, each finding the last newline of a cap-sized window by small reads from
    its end (in a map of the file, each jump's page faults mapped ~160 KB around it: a spike of
    ~300 MB of RSS over a 1.2 GB run)."""
    with open(path, "rb") as fh:
        fd = fh.fileno()
        for start, end in bounds:
            pos = start
            while end - pos > MAX_LINE_BYTES:
                newline = _last_newline(fd, pos, pos + MAX_LINE_BYTES + 1)
                if newline < 0:
                    return False
                pos = newline + 1
    return True


def _last_newline(fd: int, lo: int, hi: int, window: int = 8 << 10) -> int:
    """Offset of the last newline in ``[lo, hi)``, or -1."""
    while hi > lo:
        start = max(lo, hi - window)
        found = os.pread(fd, hi - start, start).rfind(b"\n")
        if found >= 0:
            return start + found
        hi = start
    return -1


def _count_lines(task: tuple[str, int, int]) -> int | None:
    """Newlines in ``[start, end)``; None when a line there is longer than the cap."""
    path, start, end = task
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        # Jump from the last newline of each cap-sized window to the next: a window with
        # none is a line over the cap. A few hundred C calls per piece, not one per line.
        pos = start
        while end - pos > MAX_LINE_BYTES:
            newline = data.rfind(b"\n", pos, pos + MAX_LINE_BYTES + 1)
            if newline < 0:
                return None
            pos = newline + 1
        return count_newlines(data, start, end)


def _scan_piece(piece: _Piece, state: tuple | None, slot: int | None = None) -> _PieceResult:
    w = _WORKER
    result = _scan_piece_here(piece, state, w["year"], w["tz"], w["mtime"], w["hint"], w["render"], w["skip_kinds"],
                              w["json_lines"])
    if slot is not None:
        result.in_slot = w["slots"].put(slot, result.output)
        if result.in_slot is not None:
            result.output = []
    return result


def _scan_piece_with(piece: _Piece, context: tuple) -> _PieceResult:
    """A piece on a shared pool: the scanner's settings come with it."""
    return _scan_piece_here(piece, None, *context)


def _scan_piece_here(piece: _Piece, state: tuple | None, year, tz, mtime, hint, render: Render,
                     skip_kinds: frozenset[str] = frozenset(), json_lines: bool = False) -> _PieceResult:
    """Scan one piece; from ``state`` when given, else from a warm-up guess (recorded for the check)."""
    scanner = LogScanner(piece.path, year=year, tz=tz, mtime=mtime, skip_kinds=skip_kinds, json_lines=json_lines)
    state_before = None
    with open(piece.path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if state is not None:
            scanner.restore(state)
        elif piece.start > 0:
            warm_start = _warmup_start(data, piece.start)
            if warm_start > 0:
                scanner.start_mid_file(hint)
            warm_line = piece.first_line_no - count_newlines(data, warm_start, piece.start)
            # The previous piece's events: dropped. From the file's start (a second piece) it is fed as
            # the sequential read feeds it (its first block gives the year hint).
            _feed(scanner, fh, data, warm_start, piece.start, warm_line, None,
                  _WARMUP_FEED_BYTES if warm_start > 0 else _FEED_BYTES)
            state_before = scanner.boundary_state()
            scanner.mark_entry()
        outputs, next_line = _feed(scanner, fh, data, piece.start, piece.end, piece.first_line_no, render)
    finish_output = None
    if piece.last and piece.finish_apart:
        finish_output = render(scanner.finish())
    elif piece.last:
        outputs.append(render(scanner.finish()))
    return _PieceResult(outputs, state_before, scanner.boundary_state(), scanner.parse_errors, finish_output,
                        scanner.entry_stats_used, scanner.stats_set_since_entry, wrapped=scanner.wrapped,
                        skip_met=frozenset(scanner.skip_met), lines=next_line - piece.first_line_no,
                        undecodable=scanner.undecodable_lines)


def _warmup_start(data: mmap.mmap, start: int) -> int:
    if start <= _WARMUP_BYTES:
        return 0
    newline = data.find(b"\n", start - _WARMUP_BYTES, start)
    return newline + 1 if newline >= 0 else start


def _feed(scanner: LogScanner, fh, data: mmap.mmap, start: int, end: int, line_no: int,
          render: Render | None, feed_bytes: int = _FEED_BYTES) -> tuple[list[Any], int]:
    """``render`` of each block's events (a piece's events are never all held at once: a
    16 MB piece of a router log is ~150k events, ~100 MB; None: the events are dropped), and
    the number of the line after the stretch."""
    outputs: list[Any] = []
    pos = start
    while pos < end:
        size = _first_block_end(data) if pos == 0 else feed_bytes
        stop = min(end, pos + size)
        if stop < end:
            stop = data.rfind(b"\n", pos, stop) + 1  # lines are under the cap (checked while counting)
        # Read, not sliced from the map: a slice faults the map's pages in one by one (500 MB
        # in 4 MB blocks: 0.10-0.13 s of CPU, against 0.06-0.09 s for pread).
        block = os.pread(fh.fileno(), stop - pos, pos)
        events = scanner.feed(block, line_no)
        if render is not None:
            outputs.append(render(events))
        line_no += count_newlines(block)
        pos = stop
    return outputs, line_no
