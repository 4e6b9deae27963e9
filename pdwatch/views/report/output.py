"""Write a report file safely: atomically (temp file + rename), never over an input; a device or a
pipe (``-o /dev/stdout``) is written into, never replaced."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pdwatch.errors import UsageError


def write_atomically(path: str, text: str, inputs: list[str]) -> None:
    target = Path(path)
    resolved = target.resolve()
    for source in inputs:
        if source != "-" and os.path.exists(source) and Path(source).resolve() == resolved:
            raise UsageError(f"{path}: is one of the input files; refusing to overwrite it")
    if target.is_dir():
        raise UsageError(f"{path}: is a directory")
    if target.exists() and not target.is_file():
        # /dev/null, /dev/stdout, a named pipe: written into, never replaced (a rename over
        # /dev/null would leave a regular file in its place, and as root it succeeds).
        _write_into(path, target, text)
        return
    directory = target.parent if str(target.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write there: {exc.strerror or exc}") from None
    try:
        # A file name that is not UTF-8 reaches the text as a surrogate escape (os.fsdecode):
        # write it as "\udce9", keeping the report valid UTF-8 (JSON reads it back as the same string).
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as out:
            out.write(text)
            out.flush()
            # mkstemp makes the file 0600; a report is meant to be shared: the mode a new
            # file gets under the umask, as any other writer's output would.
            os.fchmod(out.fileno(), 0o666 & ~_umask())
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        # Whatever stops us (a full disk, an I/O error, Ctrl-C), the half-written
        # temp file must not stay behind; the previous report, if any, was never touched.
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise UsageError(f"{path}: could not write the report: {exc.strerror or exc}") from None
        raise


def _write_into(path: str, target: Path, text: str) -> None:
    try:
        with open(target, "w", encoding="utf-8", errors="backslashreplace") as out:
            out.write(text)
    except OSError as exc:
        raise UsageError(f"{path}: could not write the report: {exc.strerror or exc}") from None


def _umask() -> int:
    try:  # Linux says it without changing it (other threads may be creating files)
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # elsewhere the only way to read it is to set it; put it back at once
    os.umask(mask)
    return mask
