"""``ssh://[user@]host/path/glob`` as a source: the system ``ssh`` lists the files, one ``tail`` per file.

- The glob is expanded remotely (a directory gives its ``*.out *.log *.err *.txt``), again every
  ``rescan_interval`` seconds in follow mode so new files are picked up.
- Each file is read by its own ``ssh host tail -c +N -F -- FILE`` (one tail per file: a multi-file
  ``tail`` prints ``==> f <==`` headers that can't be told from content). ``N`` is the byte after
  what was received, so a reconnect loses and duplicates nothing; if the file became shorter or
  another inode meanwhile it is read from the start as a new generation.
- A dropped connection is retried with exponential backoff (1 s doubling to 30 s); notices come once
  per change of state: ``down`` ("connection lost (ssh exit N: …); reconnecting") and ``up``.
- Replay (not follow): each file is read to its end once (``tail -c +1`` without ``-F``); a failure
  is an ``error`` notice, not retried.

ssh runs with ``BatchMode=yes`` (never prompts), stdin from /dev/null and a connect timeout;
credentials, agents and multiplexing are left to the user's ssh configuration.
"""

from __future__ import annotations

import time

from .framing import LineFramer
from .records import LineBlock, SourceNotice, capped_notice
from .ssh_process import SshProcess
from .ssh_spec import HEADER, SshSpec, list_script, source_name, tail_script

Item = LineBlock | SourceNotice
MIN_BACKOFF, MAX_BACKOFF = 1.0, 30.0
STEADY_S = 10.0  # a connection that lived this long (or brought data) resets the backoff
_MAX_LISTING = 16 << 20
_MAGIC = frozenset("*?[")


class SshOptions:
    def __init__(self, *, ssh: str = "ssh", connect_timeout: int = 10, max_line_bytes: int = 1 << 20) -> None:
        self.ssh = ssh
        self.connect_timeout = connect_timeout
        self.max_line_bytes = max_line_bytes


class Backoff:
    def __init__(self) -> None:
        self.delay = MIN_BACKOFF

    def next(self) -> float:
        delay, self.delay = self.delay, min(self.delay * 2, MAX_BACKOFF)
        return delay

    def reset(self) -> None:
        self.delay = MIN_BACKOFF


class RemoteTail:
    """One remote file, followed (or read to its end) through its own ssh connection."""

    def __init__(self, spec: SshSpec, path: str, *, follow: bool, options: SshOptions) -> None:
        self.spec, self.path, self.follow = spec, path, follow
        self.name = source_name(spec.host, path)
        self.at_eof = False
        self.up = False
        self.offset = 0  # bytes of the current generation received
        self._options = options
        self._inode: str | None = None
        self._generation = 0
        self._line_no = 1
        self._framer = LineFramer(options.max_line_bytes)
        self._proc: SshProcess | None = None
        self._header: bytearray | None = None  # the header line while it arrives; None once read
        self._connected_at: float | None = None
        self._got_data = False
        self._retry_at = 0.0
        self._backoff = Backoff()
        self._ever_up = False
        self._lost = False  # a "down" notice was given and no "up" yet
        self._missing_told = False
        self._reported_cuts = 0

    def poll(self, now: float) -> list[Item]:
        out: list[Item] = []
        if self._proc is None:
            if self.at_eof or now < self._retry_at:
                return out
            self._connect()
        proc = self._proc
        assert proc is not None
        data = proc.read()
        for line in proc.stderr_lines():
            self._on_stderr(line, out)
        if data:
            self._on_data(data, now, out)
        if self._proc is not None and proc.finished():
            self._on_exit(now, out)
        if self._framer.cut_lines > self._reported_cuts:
            f = self._framer
            self._reported_cuts = f.cut_lines
            out.append(capped_notice(self.name, f.cut_lines, f.cut_bytes, f.max_line_bytes))
        return out

    def close(self) -> None:
        if self._proc is not None:
            self._proc.close()
            self._proc = None

    # -- internals ---------------------------------------------------------------------------
    def _connect(self) -> None:
        script = tail_script(self.path, self.offset, self._inode, follow=self.follow)
        o = self._options
        self._proc = SshProcess(self.spec.ssh_argv(script, ssh=o.ssh, connect_timeout=o.connect_timeout))
        self._header = bytearray()
        self._connected_at = None
        self._got_data = False

    def _on_data(self, data: bytes, now: float, out: list[Item]) -> None:
        if self._header is not None:
            nl = data.find(b"\n")
            self._header += data if nl < 0 else data[:nl]
            if nl < 0:
                if len(self._header) > 200:
                    self._fail_protocol(out)
                return
            line, self._header = bytes(self._header), None
            data = data[nl + 1:]
            if not self._on_header(line, now, out):
                return
        if not data:
            return
        self._got_data = True
        self.offset += len(data)
        self._emit(self._framer.feed(data), out)

    def _on_header(self, line: bytes, now: float, out: list[Item]) -> bool:
        fields = line.split()
        if not line.startswith(HEADER) or len(fields) != 3 or not fields[1].isdigit():
            self._fail_protocol(out)
            return False
        start, inode = int(fields[1]), fields[2].decode("ascii", "replace")
        if start != self.offset:  # shorter now, or another file: read it from its start
            self._new_generation()
            out.append(SourceNotice(self.name, "truncated",
                                    f"{self.name}: truncated or replaced while disconnected; reading it from the start"))
        self._inode = None if inode == "-" else inode
        self._connected_at = now
        if not self._ever_up:
            verb = "following" if self.follow else "reading"
            out.append(SourceNotice(self.name, "opened", f"{self.name}: {verb} over ssh"))
        elif self._lost:
            out.append(SourceNotice(self.name, "up", f"{self.name}: reconnected; resuming at byte {start}"))
        self._ever_up, self._lost, self.up = True, False, True
        return True

    def _on_stderr(self, line: str, out: list[Item]) -> None:
        # GNU tail -F says so on stderr when the file changes under it (data and message race slightly).
        if line.endswith("file truncated"):
            self._new_generation()
            out.append(SourceNotice(self.name, "truncated", f"{self.name}: truncated; reading from the start"))
        elif "has been replaced" in line or ("has appeared" in line and self.offset > 0):
            self._new_generation()
            self._inode = None
            out.append(SourceNotice(self.name, "rotated", f"{self.name}: replaced (rotated); following the new file"))
        elif "No such file" in line and self.follow and not self._missing_told:
            self._missing_told = True
            out.append(SourceNotice(self.name, "missing", f"{self.name}: no such remote file; waiting for it to appear"))

    def _new_generation(self) -> None:
        self._framer = LineFramer(self._options.max_line_bytes)  # a partial line of the old file is dropped
        self._generation += 1
        self._line_no = 1
        self.offset = 0

    def _emit(self, lines: bytes, out: list[Item]) -> None:
        if lines:
            out.append(LineBlock(self.name, self._line_no, lines, self._generation))
            self._line_no += lines.count(b"\n")

    def _fail_protocol(self, out: list[Item]) -> None:
        assert self._proc is not None
        self._proc.close()
        self._proc.last_error = "unexpected output before the file (is the remote shell POSIX sh?)"

    def _on_exit(self, now: float, out: list[Item]) -> None:
        proc, self._proc = self._proc, None
        assert proc is not None
        code, why = proc.returncode, proc.describe_exit()
        proc.close()
        connected = self._connected_at is not None
        self.up = False
        if not self.follow:
            if connected and code == 0:
                self._emit(self._framer.flush(), out)  # the file's last line, newline or not
            else:
                out.append(SourceNotice(self.name, "error", f"{self.name}: {why}"))
            self.at_eof = True
            return
        if connected and (self._got_data or now - self._connected_at >= STEADY_S):
            self._backoff.reset()
        delay = self._backoff.next()
        self._retry_at = now + delay
        if not self._lost:
            self._lost = True
            verb = "connection lost" if connected or self._ever_up else "cannot connect"
            out.append(SourceNotice(self.name, "down", f"{self.name}: {verb} ({why}); reconnecting"))


class SshSource:
    """All the files one ``ssh://`` argument stands for."""

    def __init__(self, spec: SshSpec, *, follow: bool, rescan_interval: float = 5.0,
                 options: SshOptions | None = None) -> None:
        self.spec = spec
        self.follow = follow
        self.rescan_interval = rescan_interval
        self.tails: dict[str, RemoteTail] = {}
        self._options = options or SshOptions()
        self._lister: SshProcess | None = None
        self._listing = bytearray()
        self._next_list = 0.0
        self._backoff = Backoff()
        self._down = False
        self._listed = False
        self._failed = False

    @property
    def names(self) -> list[str]:
        return sorted(self.tails) if self.tails else [self.spec.name]

    @property
    def at_eof(self) -> bool:
        if self.follow:
            return False
        return self._failed or (self._listed and all(t.at_eof for t in self.tails.values()))

    def sources_up(self) -> dict[str, bool]:
        if not self.tails:
            return {self.spec.name: self._listed and not self._down}
        return {name: t.up for name, t in list(self.tails.items())}

    def poll(self, now: float | None = None) -> list[Item]:
        now = time.monotonic() if now is None else now
        out: list[Item] = []
        due = self.follow or not self._listed
        if self._lister is None and due and not self._failed and now >= self._next_list:
            o = self._options
            argv = self.spec.ssh_argv(list_script(self.spec.path), ssh=o.ssh, connect_timeout=o.connect_timeout)
            self._lister = SshProcess(argv)
        if self._lister is not None:
            self._poll_lister(now, out)
        for tail in list(self.tails.values()):
            out += tail.poll(now)
        return out

    def close(self) -> None:
        if self._lister is not None:
            self._lister.close()
            self._lister = None
        for tail in self.tails.values():
            tail.close()

    def _poll_lister(self, now: float, out: list[Item]) -> None:
        proc = self._lister
        assert proc is not None
        self._listing += proc.read()
        proc.stderr_lines()
        too_long = len(self._listing) > _MAX_LISTING
        if not too_long and not proc.finished():
            return
        self._lister = None
        proc.close()
        code = proc.returncode
        why = f"more than {_MAX_LISTING} bytes of file names" if too_long else proc.describe_exit()
        listing, self._listing = bytes(self._listing), bytearray()
        name = self.spec.name
        if code != 0 or too_long:
            if not self.follow:
                self._failed = True
                out.append(SourceNotice(name, "error", f"{name}: cannot list the remote files ({why})"))
            else:
                delay = self._backoff.next()
                self._next_list = now + delay
                if not self._down:
                    self._down = True
                    out.append(SourceNotice(name, "down", f"{name}: cannot list the remote files ({why}); "
                                                          f"retrying, backing off up to {MAX_BACKOFF:g} s"))
            return
        if self._down:
            self._down = False
            out.append(SourceNotice(name, "up", f"{name}: reachable again"))
        self._backoff.reset()
        self._next_list = now + self.rescan_interval
        paths = [p.decode("utf-8", "surrogateescape") for p in listing.split(b"\0") if p]
        if not paths and not _MAGIC.intersection(self.spec.path) and self.follow:
            paths = [self.spec.path]  # not there yet: tail -F waits for it, as for a local file
        if not paths and not self._listed and not self.follow:
            out.append(SourceNotice(name, "missing", f"{name}: no remote file matches"))
        self._listed = True
        for path in sorted(paths):
            tail_name = source_name(self.spec.host, path)
            if tail_name not in self.tails:
                self.tails[tail_name] = RemoteTail(self.spec, path, follow=self.follow, options=self._options)

