"""Multiplex all sources named on the command line into one stream of blocks/notices.

Arguments are local paths (files, globs, directories, ``-``), ``http(s)://`` /metrics URLs
(follow mode only: scraped every ``scrape_interval`` seconds), ``ssh://host/path/glob``
remote files (see ``ssh_source``) and ``prom+http(s)://`` Prometheus servers (``prometheus``:
a time range when not following, ``prom=PromOptions(since, until, step)``; following, the
recent past and then every ``scrape_interval`` seconds).
"""

from __future__ import annotations

import glob
import os
import threading
import time
from typing import BinaryIO, Callable, Iterator

from pdwatch.errors import UsageError
from pdwatch.sources.urls import normalize_url

from .discovery import (LOG_SUFFIXES, classify_txt, expand_candidates, expand_paths, is_raw_prometheus, is_txt,
                        unlistable_dirs)
from .file_tail import FileTail, Ident
from .prometheus import PrometheusSource, PromOptions, is_prom
from .raw_prometheus_tail import RawPrometheusTail
from .recorded_tail import RecordedTail
from .records import Labels, LineBlock, SampleBlock, ScrapeBlock, SourceNotice
from .scrape_source import ScrapeSource, is_url
from .ssh_source import SshOptions, SshSource
from .ssh_spec import is_ssh, parse_ssh
from .stdin_source import NAME as STDIN, StdinSource

Item = LineBlock | ScrapeBlock | SampleBlock | SourceNotice
DEFAULT_SCRAPE_INTERVAL = 2.0


def url_in_replay(url: str) -> str:
    return (f"{url}: a URL is a live source: use pdwatch watch URL or pdwatch parse --follow URL "
            f"(pdwatch record URL --out DIR saves scrapes that report and replay read)")


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
        scrape_interval: float = DEFAULT_SCRAPE_INTERVAL,
        remote_rescan_interval: float = 5.0,
        ssh_options: SshOptions | None = None,
        history: tuple[int, int] | None = None,
        prom: PromOptions | None = None,
    ) -> None:
        """Raises ``UsageError`` for a bad URL / ssh argument, or a URL when not following.

        ``history=(head, tail)`` (follow mode): of a log that is already there, read only its
        first ``head`` and last ``tail`` bytes (``FileTail``); files that appear later are new."""
        self._history = history if follow else None
        if not scrape_interval > 0:
            raise UsageError(f"--scrape-interval {scrape_interval}: expected a positive number of seconds")
        self._scrapes: dict[str, ScrapeSource] = {}
        self._remotes: list[SshSource] = []
        self._proms: list[PrometheusSource] = []
        local: list[str] = []
        for arg in args:
            if is_prom(arg):  # opening one asks the server: a bad one is a UsageError here
                if not any(p.name == arg for p in self._proms):
                    self._proms.append(PrometheusSource(arg, follow=follow, options=prom,
                                                        interval=scrape_interval))
            elif is_url(arg):
                self._add_url(arg, follow, scrape_interval)
            elif is_ssh(arg):
                try:
                    spec = parse_ssh(arg)
                except ValueError as exc:
                    raise UsageError(str(exc)) from None
                options = ssh_options or SshOptions(max_line_bytes=max_line_bytes)
                self._remotes.append(SshSource(spec, follow=follow, rescan_interval=remote_rescan_interval,
                                               options=options))
            else:
                local.append(arg)
        self._args = local
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
        self._recorded: dict[str, RecordedTail | RawPrometheusTail] = {}  # watch: recorded scrape files, followed
        self._pending: list[Item] = []  # notices produced outside poll()
        # Rescans must not re-read a rotated file under its new name (e.g. x.log -> x-1.log
        # inside a watched dir), so remember inodes rotated away and paths skipped for that.
        self._retired: dict[Ident, float] = {}  # ident -> expiry time
        self._skipped: dict[str, Ident] = {}
        self._retire_ttl = max(30.0, 10 * rescan_interval)
        self._last_scan = clock()
        self._dir_problems: dict[str, str] = {}  # watched folder -> why it cannot be listed (told once)
        self._check_dirs(self._pending)

        logs, metrics = expand_paths(self._args)
        for p in metrics:
            self._add_metrics(p)
        for p in logs:
            self._add_log(p)
        if self._follow:
            self._say_what_is_awaited(logs + metrics)

    # -- public ----------------------------------------------------------------------
    @property
    def unlistable_dirs(self) -> dict[str, str]:
        """Folder arguments that could not be listed at the last look, with the reason."""
        return dict(self._dir_problems)

    @property
    def metrics_files(self) -> list[str]:
        return list(self._metrics)

    @property
    def local_files(self) -> list[str]:
        """The local files named or matched (not URLs, ssh sources or stdin)."""
        return sorted([*self._tails, *self._unclassified])

    @property
    def has_remote(self) -> bool:
        """Whether an ssh:// argument, a URL or a Prometheus server is among the sources."""
        return bool(self._remotes or self._scrapes or self._proms)

    @property
    def prometheus(self) -> list[PrometheusSource]:
        return list(self._proms)

    @property
    def sources(self) -> list[str]:
        names = [*self._tails, *self._unclassified, *self._scrapes]
        for prom in self._proms:  # the server, and its targets known so far (a topology's prom: matches those)
            names += [prom.name, *prom.targets]
        for remote in self._remotes:
            names += remote.names
        if self._stdin is not None:
            names.append(STDIN)
        return sorted(names)

    @property
    def target_labels(self) -> dict[str, Labels]:
        """The Prometheus targets known so far: their labels, by source name."""
        return {source: labels for prom in self._proms for source, labels in prom.target_labels.items()}

    @property
    def sources_up(self) -> dict[str, bool]:
        """Remote sources (URLs, ssh files) and whether they were reachable last time."""
        up = {url: bool(s.up) for url, s in list(self._scrapes.items())}  # list(): may run beside poll()
        up.update({p.name: bool(p.up) for p in self._proms})
        for remote in self._remotes:
            up.update(remote.sources_up())
        return up

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        for t in self._tails.values():
            t.close()
        for scrape in self._scrapes.values():
            scrape.close()
        for recorded in self._recorded.values():
            recorded.close()
        for remote in self._remotes:
            remote.close()
        for prom in self._proms:
            prom.close()

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
        for scrape in self._scrapes.values():
            out += scrape.poll()
        for recorded in self._recorded.values():
            out += recorded.poll()
        for prom in self._proms:  # a finished range: one chunk per poll
            out += prom.poll()
        if self._remotes:
            now = self._clock()
            for remote in self._remotes:
                out += remote.poll(now)
        if self._pending:  # e.g. a *.txt just recognised as a metrics scrape
            out += self._pending
            self._pending = []
        return out

    def blocks(self, progress: Callable[[str], None] | None = None, every_s: float = 5.0) -> Iterator[Item]:
        """Every block and notice until each source is at its end (follow: until stopped).
        ``progress`` is told how much the remote sources delivered, every ``every_s`` seconds,
        while any is still reading: a report over ssh is never silent."""
        remote_bytes, told_at = 0, self._clock()
        try:
            while not self._stop.is_set():
                items = self.poll()
                if progress is not None and self._proms and self._clock() - told_at >= every_s:
                    told_at = self._clock()
                    for line in filter(None, (p.progress() for p in self._proms)):
                        progress(line)
                if progress is not None and self._remotes:
                    remote_bytes += sum(len(i.data) for i in items if isinstance(i, LineBlock) and not
                                        i.source.startswith("/") and ":" in i.source.split("/", 1)[0])
                    if self._clock() - told_at >= every_s:
                        told_at = self._clock()
                        files = sum(len(r.tails) for r in self._remotes)
                        progress(f"reading {files} remote file(s) over ssh: {remote_bytes / 1e6:.1f} MB so far")
                yield from items
                files_done = all(t.at_eof for t in self._tails.values()) and not self._unclassified
                remotes_done = all(r.at_eof for r in self._remotes)
                stdin_done = self._stdin is None or self._stdin.at_eof
                proms_done = all(p.at_eof for p in self._proms)
                if not self._follow and files_done and remotes_done and stdin_done and proms_done:
                    return
                if self._follow and stdin_done and self._stdin is not None and self._stdin_only():
                    return  # `-f -` on a finished pipe: nothing can ever arrive again
                if items:
                    continue
                if self._stdin is not None and not stdin_done and (not self._follow or files_done):
                    self._stdin.wait(self._poll_interval)  # wake as soon as stdin has data
                elif self._follow:
                    self._sleep(self._poll_interval)
                elif not remotes_done:
                    self._sleep(min(self._poll_interval, 0.05))  # ssh children are still reading
        finally:
            self.close()

    # -- internals -------------------------------------------------------------------
    def _stdin_only(self) -> bool:
        return all(a == STDIN for a in self._args) and not self._scrapes and not self._remotes and not self._proms

    def _add_url(self, arg: str, follow: bool, interval: float) -> None:
        try:
            url = normalize_url(arg)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if not follow:
            raise UsageError(url_in_replay(url))
        self._scrapes.setdefault(url, ScrapeSource(url, interval=interval))

    def _add_metrics(self, path: str) -> None:
        if path not in self._metrics:
            self._metrics.append(path)
            self._metrics.sort()
            if self._follow:  # followed scrape by scrape; a replay or report reads it after the logs
                tail = RawPrometheusTail if is_raw_prometheus(path) else RecordedTail  # srt-slurm's JSON records
                self._recorded[path] = tail(path, max_line_bytes=self._max_line_bytes, history=self._history)
            how = "followed scrape by scrape" if self._follow else "read beside the logs"
            self._pending.append(SourceNotice(path, "metrics_file", f"{path}: recorded /metrics scrapes, {how}"))

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
        self._tails[path] = FileTail(path, follow=self._follow, max_line_bytes=self._max_line_bytes,
                                     history=self._history)

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

    def _say_what_is_awaited(self, found: list[str]) -> None:
        """A watch on a folder or glob with nothing in it yet says that it waits, and for what (a
        missing file says it itself; an unreadable folder, why)."""
        suffixes = ", ".join(f"*{s}" for s in LOG_SUFFIXES)
        for arg in self._args:
            if arg in self._dir_problems or is_url(arg) or is_ssh(arg) or is_prom(arg) or arg == STDIN:
                continue
            if os.path.isdir(arg):
                inside = os.path.join(arg, "")
                if not any(p.startswith(inside) for p in found):
                    self._pending.append(SourceNotice(arg, "info", f"{arg}: no log file in the folder yet; waiting "
                                                                   f"for one to appear ({suffixes})"))
            elif glob.has_magic(arg) and not glob.glob(arg):
                self._pending.append(SourceNotice(arg, "info", f"{arg}: no file matches yet; waiting for one to "
                                                               f"appear"))

    def _check_dirs(self, out: list[Item]) -> None:
        """An unreadable folder looks empty: say why, once per change, rather than show nothing."""
        problems = unlistable_dirs(self._args)
        for path, reason in problems.items():
            if self._dir_problems.get(path) != reason:
                waiting = "; waiting" if self._follow else ""
                out.append(SourceNotice(path, "error", f"{path}: cannot list the folder ({reason}){waiting}"))
        for path in self._dir_problems.keys() - problems.keys():
            out.append(SourceNotice(path, "opened", f"{path}: folder readable again"))
        self._dir_problems = problems

    def _rescan(self, out: list[Item], now: float) -> None:
        self._check_dirs(out)
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
