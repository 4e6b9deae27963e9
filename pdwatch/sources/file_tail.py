"""Follow (or replay) one file with `tail -F` semantics, yielding blocks of complete lines."""

from __future__ import annotations

import os
import stat

from .framing import LineFramer, count_newlines
from .records import LineBlock, SourceNotice, capped_notice

Item = LineBlock | SourceNotice
Ident = tuple[int, int]  # (st_dev, st_ino)

MAX_CHUNKS_PER_POLL = 8  # so one huge file can't starve the others
_HEAD_BYTES = 64  # a log's first line has a timestamp: a rewritten file starts differently
_SEEK_DATA = getattr(os, "SEEK_DATA", None)  # not on every platform: then holes are read as NULs
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)  # NONBLOCK: a FIFO must not hang open()


class FileTail:
    def __init__(
        self,
        path: str,
        *,
        follow: bool,
        chunk_size: int = 1 << 20,
        max_line_bytes: int = 1 << 20,
        history: tuple[int, int] | None = None,
    ) -> None:
        """``history=(head, tail)``: when the file is first opened and longer than both, read its
        first ``head`` bytes (the server's start-up lines) and its last ``tail`` bytes (the recent
        past) and skip what lies between, counting its lines so line numbers stay right. What
        ``watch`` does with logs that were already there: the rules judge their recent past."""
        self.path = path
        self.follow = follow
        self._history = history
        self._skip_at: int | None = None  # size when first opened, once the head is read: jump then
        self.chunk_size = chunk_size
        self.at_eof = False
        self._framer = LineFramer(max_line_bytes)
        self._fd: int | None = None
        self._ident: Ident | None = None
        self._offset = 0
        self._head = b""  # the file's first bytes as read: a rewrite from the start changes them
        self._line_no = 1
        self._generation = 0
        self._ever_opened = False
        self._open_kind = "opened"  # notice to give on the next successful open
        self._absent: str | None = None  # "missing"/"deleted"/"renamed"/"not_a_file" already reported
        self._error: str | None = None  # last error message reported (no repeats)
        self._had_error = False
        self._reported_cuts = 0
        self._retired: list[Ident] = []
        self._closed = False

    # -- small accessors used by SourceSet ---------------------------------------------
    @property
    def ident(self) -> Ident | None:
        """(dev, inode) of the file currently open, if any."""
        return self._ident if self._fd is not None else None

    @property
    def generation(self) -> int:
        return self._generation

    def take_retired_idents(self) -> list[Ident]:
        """Inodes rotated away (renamed, still linked) since the last call."""
        out, self._retired = self._retired, []
        return out

    # -- main entry ------------------------------------------------------------------
    def poll(self) -> list[Item]:
        out: list[Item] = []
        if self.at_eof or self._closed:
            return out
        self._had_error = False
        try:
            budget = MAX_CHUNKS_PER_POLL
            if self._fd is None:
                self._open(out)
            elif self.follow:
                budget = self._check_path(out, budget)
            if self._fd is not None and budget > 0:
                eof = self._read(out, budget)[1]
                if eof and not self.follow:
                    self._emit_partial(out)
                    self._close_fd()
                    self.at_eof = True
        except OSError as e:
            self._report_error(out, e)
            if not self.follow:  # replay: report and give up on this file
                self._close_fd()
                self.at_eof = True
        if not self._had_error:
            self._error = None  # recovered: a later failure is worth a new notice
        if self._framer.cut_lines > self._reported_cuts:
            self._reported_cuts = self._framer.cut_lines
            out.append(
                capped_notice(
                    self.path, self._framer.cut_lines, self._framer.cut_bytes, self._framer.max_line_bytes
                )
            )
        return out

    def close(self) -> None:
        self._closed = True
        self._close_fd()

    # -- opening ---------------------------------------------------------------------
    def _open(self, out: list[Item]) -> None:
        try:
            fd = os.open(self.path, _OPEN_FLAGS)
        except FileNotFoundError:
            if self._absent == "renamed":
                pass  # still waiting for the rotation's new file (said once)
            elif self._ever_opened:
                self._note_absent(out, "deleted", "deleted; waiting for it to be re-created")
            else:
                wait = "; waiting for it to appear" if self.follow else ""
                self._note_absent(out, "missing", f"no such file{wait}")
            self.at_eof = not self.follow
            return
        except OSError as e:
            self._report_error(out, e)
            self.at_eof = not self.follow
            return
        try:
            st = os.fstat(fd)
        except OSError:
            os.close(fd)
            raise
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            self._note_absent(out, "not_a_file", "not a regular file" + ("; waiting" if self.follow else ""))
            self.at_eof = not self.follow
            return
        self._fd = fd
        self._ident = (st.st_dev, st.st_ino)
        self._offset = 0
        if self._history is not None and not self._ever_opened and st.st_size > sum(self._history) + self.chunk_size:
            self._skip_at = st.st_size
        self._head = b""
        self._line_no = 1
        if self._ever_opened:
            self._generation += 1
        self._ever_opened = True
        self._absent = None
        kind = self._open_kind
        what = {"opened": "opened", "rotated": "rotated; reading the new file", "recreated": "re-created"}[kind]
        msg = f"{self.path}: {what} ({st.st_size} bytes), generation {self._generation}"
        out.append(SourceNotice(self.path, kind, msg))

    def _note_absent(self, out: list[Item], kind: str, text: str) -> None:
        if self._ever_opened:
            self._open_kind = "recreated"
        if self._absent != kind:
            self._absent = kind
            out.append(SourceNotice(self.path, kind, f"{self.path}: {text}"))

    # -- follow-mode checks ----------------------------------------------------------
    def _check_path(self, out: list[Item], budget: int) -> int:
        """Detect truncation / rotation / deletion; returns the read budget left."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return self._retire(out, "deleted", budget)
        except OSError as e:
            self._report_error(out, e)  # the open fd may still be readable
            return budget
        if (st.st_dev, st.st_ino) != self._ident:
            return self._retire(out, "rotated" if stat.S_ISREG(st.st_mode) else "not_a_file", budget)
        if st.st_size < self._offset:
            why = f"size {st.st_size} < offset {self._offset}"
        elif self._head and os.pread(self._fd, len(self._head), 0) != self._head:  # type: ignore[arg-type]
            # Truncated, then written past our offset before this poll (a small log copytruncated,
            # or a restarted job's `> file`): the size alone can't tell, the first bytes can.
            why = "its first bytes changed"
        else:
            return budget
        out.append(SourceNotice(self.path, "truncated", f"{self.path}: truncated ({why}); reading from the start"))
        self._framer.reset()
        self._offset = 0
        self._head = b""
        self._line_no = 1
        self._generation += 1
        return budget

    def _retire(self, out: list[Item], why: str, budget: int) -> int:
        """The path no longer names our file: drain the old fd first, then move on."""
        used, eof = self._read(out, budget)
        budget -= used
        if not eof:
            return 0  # more to drain; the next poll sees the same change and continues
        self._emit_partial(out)  # the old file is finished: its last line is complete
        assert self._fd is not None
        linked = os.fstat(self._fd).st_nlink > 0
        if why in ("rotated", "deleted") and linked:
            self._retired.append(self._ident)  # type: ignore[arg-type]
        self._close_fd()
        if why == "deleted" and linked:
            # Gone from its path but still linked elsewhere: renamed by a rotation whose new
            # file is not there yet (logrotate renames, then creates). Not a deletion.
            self._open_kind = "rotated"
            if self._absent != "renamed":
                self._absent = "renamed"
                out.append(SourceNotice(self.path, "renamed", f"{self.path}: renamed away; waiting for the new file"))
        elif why == "deleted":
            self._note_absent(out, "deleted", "deleted; waiting for it to be re-created")
        elif why == "not_a_file":
            self._note_absent(out, "not_a_file", "replaced by something that is not a regular file; waiting")
        else:
            self._open_kind = "rotated"
            self._open(out)
        return budget

    # -- reading ---------------------------------------------------------------------
    def _read(self, out: list[Item], budget: int) -> tuple[int, bool]:
        """Read up to `budget` chunks; returns (chunks used, hit EOF)."""
        assert self._fd is not None
        used = 0
        while used < budget:
            if self._skip_at is not None and self._offset >= self._history[0] and not self._framer.buffered:
                self._skip_history(out)
            data = os.pread(self._fd, self.chunk_size, self._offset)
            used += 1
            if not data:
                return used, True
            if data[:1] == b"\0" and self._skip_hole(out):
                continue  # re-read from where the data starts
            if self._offset < _HEAD_BYTES:
                self._head += data[: _HEAD_BYTES - self._offset]
            self._offset += len(data)
            lines = self._framer.feed(data)
            if lines:
                out.append(LineBlock(self.path, self._line_no, lines, self._generation))
                self._line_no += count_newlines(lines)
            if len(data) < self.chunk_size:
                return used, True  # short read on a regular file: at EOF for now
        return used, False

    def _skip_history(self, out: list[Item]) -> None:
        """Jump from the end of the head to the first line of the last ``tail`` bytes of the file
        as it was when opened, counting the newlines jumped over."""
        assert self._fd is not None and self._skip_at is not None and self._history is not None
        target, self._skip_at = self._skip_at - self._history[1], None
        if target <= self._offset:
            return
        newlines, at = 0, self._offset
        while at < target:
            block = os.pread(self._fd, min(4 << 20, target - at), at)
            if not block:
                return
            newlines += block.count(b"\n")
            at += len(block)
        rest = os.pread(self._fd, self._history[1], target)  # the jump lands after a newline
        cut = rest.find(b"\n")
        if cut < 0:
            return
        skipped = target + cut + 1 - self._offset
        self._line_no += newlines + 1
        self._offset = target + cut + 1
        out.append(SourceNotice(self.path, "info", f"{self.path}: {skipped / 1e6:.0f} MB of older lines skipped "
                                                   f"(read: its first {self._history[0] >> 20} MiB and last "
                                                   f"{self._history[1] >> 20} MiB)"))

    def _skip_hole(self, out: list[Item]) -> bool:
        """Jump over a sparse hole at the read offset; True if we moved.

        logrotate's copytruncate under a writer that does not append (output opened with
        `>`, not `>>`) leaves the writer at its old offset: the file becomes a hole of
        NULs as long as the old log, then the new lines. Read as text, that hole is one
        "line" of megabytes that the line cap cuts, taking the first real line with it.
        SEEK_DATA finds where the written bytes start; NULs a writer really wrote are data
        and are left alone.
        """
        assert self._fd is not None
        if _SEEK_DATA is None:
            return False
        try:
            data_at = os.lseek(self._fd, self._offset, _SEEK_DATA)
        except OSError:  # ENXIO: a hole up to EOF (nothing written past it yet); EINVAL: no support here
            return False
        if data_at <= self._offset:
            return False
        out.append(
            SourceNotice(
                self.path,
                "truncated",
                f"{self.path}: skipped {data_at - self._offset} bytes of NUL padding "
                "(truncated under a writer that does not append, e.g. copytruncate); reading on after it",
            )
        )
        self._offset = data_at  # the hole holds no newline, so line numbers stay right
        return True

    def _emit_partial(self, out: list[Item]) -> None:
        tail = self._framer.flush()
        if tail:
            out.append(LineBlock(self.path, self._line_no, tail, self._generation))
            self._line_no += 1

    def _report_error(self, out: list[Item], e: OSError) -> None:
        self._had_error = True
        msg = f"{self.path}: {e.strerror or e}"
        if msg != self._error:
            self._error = msg
            out.append(SourceNotice(self.path, "error", msg))

    def _close_fd(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            finally:
                self._fd = None
