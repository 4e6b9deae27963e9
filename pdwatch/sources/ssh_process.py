"""One ``ssh`` child process, read without blocking: stdout in chunks, stderr as sanitised lines.

The child stays in pdwatch's process group, so a Ctrl-C or a closed terminal ends it with
pdwatch; ``close()`` and an exit handler end it otherwise (a remote ``tail -F`` would outlive us).
"""

from __future__ import annotations

import atexit
import os
import subprocess
import weakref

import regex

_CONTROL = regex.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|[\x00-\x1f\x7f\x80-\x9f]")
_MAX_STDERR = 4096  # bytes of an unfinished stderr line kept
_LIVE: weakref.WeakSet[SshProcess] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for proc in list(_LIVE):
        proc.close()


def clean(text: str, limit: int = 200) -> str:
    """Remote text as one safe line for a notice: escapes and control characters removed, cut at ``limit``."""
    text = _CONTROL.sub("", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


class SshProcess:
    def __init__(self, argv: list[str]) -> None:
        self.last_error = ""  # last non-empty stderr line, cleaned
        self.spawn_error: str | None = None
        self._stdout_eof = False
        self._idle = False  # the last read found stdout empty (not at its end)
        self._err_buf = bytearray()
        try:
            self._proc: subprocess.Popen | None = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True)
        except OSError as exc:
            self._proc = None
            self.spawn_error = f"cannot run {argv[0]}: {exc.strerror or exc}"
            self._stdout_eof = True
            return
        assert self._proc.stdout is not None and self._proc.stderr is not None
        os.set_blocking(self._proc.stdout.fileno(), False)
        os.set_blocking(self._proc.stderr.fileno(), False)
        _LIVE.add(self)

    @property
    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.poll()

    def finished(self) -> bool:
        """It has exited and its output is read (or nothing came since: a leftover child may hold the pipe)."""
        if self._proc is None:
            return True
        return self._proc.poll() is not None and (self._stdout_eof or self._idle)

    def read(self, max_chunks: int = 8, chunk_size: int = 1 << 20) -> bytes:
        """What stdout has now (b"" if nothing yet or at its end)."""
        if self._stdout_eof or self._proc is None:
            return b""
        parts: list[bytes] = []
        self._idle = False
        exited = self._proc.poll() is not None  # before reading: what it wrote is in the pipe by now
        for _ in range(max_chunks):
            try:
                data = os.read(self._proc.stdout.fileno(), chunk_size)
            except BlockingIOError:
                self._idle = exited and not parts
                break
            if not data:
                self._stdout_eof = True
                break
            parts.append(data)
        return b"".join(parts)

    def stderr_lines(self) -> list[str]:
        """Complete stderr lines that arrived since the last call (cleaned; the last kept in ``last_error``)."""
        if self._proc is None:
            return []
        while True:
            try:
                data = os.read(self._proc.stderr.fileno(), 1 << 16)
            except BlockingIOError:
                break
            if not data:
                if self._err_buf:
                    self._err_buf += b"\n"  # its last line is complete now
                break
            self._err_buf += data
        *done, rest = bytes(self._err_buf).split(b"\n")
        self._err_buf = bytearray(rest[-_MAX_STDERR:])
        lines = [clean(line.decode("utf-8", "replace")) for line in done]
        lines = [line for line in lines if line]
        if lines:
            self.last_error = lines[-1]
        return lines

    def describe_exit(self) -> str:
        """``ssh exit 255: Permission denied (publickey).``, or why it could not run."""
        if self.spawn_error:
            return self.spawn_error
        code = self.returncode
        what = f"killed by signal {-code}" if code is not None and code < 0 else f"ssh exit {code}"
        return f"{what}: {self.last_error}" if self.last_error else what

    def close(self) -> None:
        proc = self._proc
        if proc is None:
            return
        _LIVE.discard(self)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        self._stdout_eof = True
