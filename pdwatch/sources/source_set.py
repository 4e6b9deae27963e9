"""Multiplex all sources named on the command line into one stream of blocks/notices."""

from __future__ import annotations

import os
import threading
import time
from typing import BinaryIO, Callable, Iterator

from .discovery import classify_txt, expand_candidates, expand_paths, is_txt
from .file_tail import FileTail, Ident
from .records import LineBlock, SourceNotice
from .stdin_source import NAME as STDIN, StdinSource

Item = LineBlock | SourceNotice


class SourceSet:
    def __init__(
        self,
        args: list[str],
        *,
        follow: bool,
        poll_interval: float = 0.2,
        rescan_interval: float = 2.0,
        stdin: BinaryIO | None = None,
        max_line_bytes: int = 1 << 20,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        self._args = list(args)
        self._follow = follow
        self._poll_interval = poll_interval
        self._rescan_interval = rescan_interval
        self._stdin_stream = stdin
        self._max_line_bytes = max_line_bytes
        self._clock = clock
        self._stop = threading.Event()
        # With the real sleep, wait on the stop event instead so stop() takes effect at once.
        self._sleep = self._stop.wait if sleep is time.sleep else sleep
        self._tails: dict[str, FileTail] = {}
        self._stdin: StdinSource | None = None
        self._unclassified: dict[str, str | None] = {}  # empty *.txt -> last problem reported
        self._metrics: list[str] = []
        self._pending: list[Item] = []  # notices produced outside poll()
        # Rescans must not re-read a rotated file under its new name (e.g. x.log -> x-1.log
        # inside a watched dir), so remember inodes rotated away and paths skipped for that.
        self._retired: dict[Ident, float] = {}  # ident -> expiry time
        self._skipped: dict[str, Ident] = {}
        self._retire_ttl = max(30.0, 10 * rescan_interval)
        self._last_scan = clock()

        logs, metrics = expand_paths(self._args)
        for p in metrics:
            self._add_metrics(p)
        for p in logs:
            self._add_log(p)

    # -- public ----------------------------------------------------------------------
    @property
    def metrics_files(self) -> list[str]:
        return list(self._metrics)

    @property
    def sources(self) -> list[str]:
        names = [*self._tails, *self._unclassified]
        if self._stdin is not None:
            names.append(STDIN)
        return sorted(names)

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        for t in self._tails.values():
            t.close()

    def poll(self) -> list[Item]:
        out, self._pending = self._pending, []
        if self._follow:
            now = self._clock()
            if now - self._last_scan >= self._rescan_interval:
                self._last_scan = now
                self._rescan(out, now)
            self._classify_pending(out)
            for tail in self._tails.values():
                out += tail.poll()
                for ident in tail.take_retired_idents():
                    self._retired[ident] = now + self._retire_ttl
        else:
            # Replay: one file at a time, each to EOF (sequential reads are fastest).
            for tail in self._tails.values():
                if not tail.at_eof:
                    out += tail.poll()
                    break
        if self._stdin is not None:
            out += self._stdin.poll()
        if self._pending:  # e.g. a *.txt just recognised as a metrics scrape
            out += self._pending
            self._pending = []
        return out

    def blocks(self) -> Iterator[Item]:
        try:
            while not self._stop.is_set():
                items = self.poll()
                yield from items
                files_done = all(t.at_eof for t in self._tails.values()) and not self._unclassified
                stdin_done = self._stdin is None or self._stdin.at_eof
                if not self._follow and files_done and stdin_done:
                    return
                if self._follow and stdin_done and self._stdin is not None and self._stdin_only():
                    return  # `-f -` on a finished pipe: nothing can ever arrive again
                if items:
                    continue
                if self._stdin is not None and not stdin_done and (not self._follow or files_done):
                    self._stdin.wait(self._poll_interval)  # wake as soon as stdin has data
                elif self._follow:
                    self._sleep(self._poll_interval)
        finally:
            self.close()

    # -- internals -------------------------------------------------------------------
    def _stdin_only(self) -> bool:
        return all(a == STDIN for a in self._args)

    def _add_metrics(self, path: str) -> None:
        if path not in self._metrics:
            self._metrics.append(path)
            self._metrics.sort()
            self._pending.append(
                SourceNotice(path, "metrics_file", f"{path}: recorded /metrics scrape, not a log; skipped here")
            )

    def _add_log(self, path: str) -> None:
        if path == STDIN:
            if self._stdin is None:
                self._stdin = StdinSource(self._stdin_stream, max_line_bytes=self._max_line_bytes)
                self._stdin.start()
            return
        if self._follow and is_txt(path) and self._classify(path) is None:
            self._unclassified[path] = None  # empty so far: decide once its first line is there
            return
        if path in self._metrics:
            return
        self._tails[path] = FileTail(path, follow=self._follow, max_line_bytes=self._max_line_bytes)

    def _classify(self, path: str) -> str | None:
        """Classify a *.txt; registers it as metrics when it is one. None = can't tell yet."""
        try:
            kind = classify_txt(path)
        except OSError:
            return None
        if kind == "metrics":
            self._add_metrics(path)
        return kind

    def _classify_pending(self, out: list[Item]) -> None:
        for path, reported in list(self._unclassified.items()):
            kind, problem = None, None
            try:
                if os.path.exists(path) and not os.path.isfile(path):
                    problem = ("not_a_file", "not a regular file; waiting")
                else:
                    kind = classify_txt(path)
            except FileNotFoundError:
                problem = ("missing", "no such file; waiting for it to appear")
            except OSError as e:
                problem = ("error", e.strerror or str(e))
            if kind is None:
                if problem is not None and reported != problem[1]:
                    self._unclassified[path] = problem[1]  # report each new problem once
                    out.append(SourceNotice(path, problem[0], f"{path}: {problem[1]}"))
                continue
            del self._unclassified[path]
            if kind == "metrics":
                self._add_metrics(path)
            else:
                self._tails[path] = FileTail(path, follow=True, max_line_bytes=self._max_line_bytes)

    def _rescan(self, out: list[Item], now: float) -> None:
        self._retired = {i: t for i, t in self._retired.items() if t > now}
        open_idents = {t.ident for t in self._tails.values()} - {None}
        known = {*self._tails, *self._unclassified, *self._metrics, STDIN}
        for path in expand_candidates(self._args):
            if path in known:
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue  # vanished between the listing and now; a later rescan retries
            ident = (st.st_dev, st.st_ino)
            if self._skipped.get(path) == ident:
                continue
            if ident in open_idents or ident in self._retired:
                self._skipped[path] = ident  # a file we already read, under a new name
                continue
            self._skipped.pop(path, None)
            self._add_log(path)
